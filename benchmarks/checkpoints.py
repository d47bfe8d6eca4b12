"""Benchmark of workspace checkpoints on a workspace of 10 000 files / 200 MB.

Run: `python benchmarks/checkpoints.py [--files N] [--mb M] [--rounds R]`. Progress goes to
stderr; stdout gets the target line, then ONE JSON object as its last line. Each figure sits
beside a baseline measured in the same run on the same tree:
- `checkpoint_ms_median`: a step that changes one file, through the store, beside its floor
  `git_add_write_tree_ms_median`, plain `git add -A && git write-tree` on the same change into
  a repository of its own (target: at most 1.3x, printed as `checkpoint one-file step: ...`).
  In each round one file is rewritten before each of the three measurements (the store, the
  floor, and the same step through a running local sandbox: `checkpoint_ms_median_via_sandbox`,
  the store plus one HTTP round trip), the order turning from round to round; medians;
- `first_checkpoint_s`: the first checkpoint of the whole workspace, beside plain
  `git add -A && git write-tree` into a fresh repository and `cp -al` (a hard-link snapshot);
- `restore_s`: putting back a folder of 1 000 deleted files (20 MB) (target <= 2), beside
  `cp -a` of the same folder;
- `store_mb_per_step`: what the store grows by for the one-file step.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.checkpoints import CheckpointStore  # noqa: E402
from sandbox.protocol import CheckpointAction, CheckpointObservation  # noqa: E402
from sandbox.runtimes.local import LocalRuntime  # noqa: E402

ROUNDS = 21
TARGET_RATIO = 1.3


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def make_tree(root: Path, files: int, megabytes: int) -> None:
    """`files` files in folders of 100, `megabytes` in all, each with its own content."""
    size = megabytes * 1024 * 1024 // files
    block = os.urandom(size)
    for index in range(files):
        folder = root / f"d{index // 100:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{index % 100:02d}.dat").write_bytes(index.to_bytes(4, "big") + block[4:])


def du_mb(path: Path) -> float:
    total = sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())
    return total / 1024 / 1024


def git_plain(repo: Path, work: Path, *args: str) -> None:
    env = {**os.environ, "GIT_DIR": str(repo), "GIT_WORK_TREE": str(work)}
    subprocess.run(["git", *args], env=env, cwd=work, check=True, capture_output=True)


def timed(run: Any) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


async def one_file_steps(
    workspace: Path, store: CheckpointStore, sandbox_store: Path, floor: Any, rounds: int
) -> dict[str, list[float]]:
    """One-file steps, each checkpointed three ways in turn (ms): by the store, by the floor
    (`floor()`), and by a running local sandbox (the `checkpoint` action over HTTP)."""
    runtime = LocalRuntime(workspace, disable=["browser", "jupyter"], checkpoints=sandbox_store)
    await runtime.start()
    target = workspace / "d000" / "f00.dat"
    times: dict[str, list[float]] = {"store": [], "floor": [], "sandbox": []}

    async def sandbox() -> None:
        observation = await runtime.execute(CheckpointAction(label="sandbox"))
        assert isinstance(observation, CheckpointObservation), observation

    async def measure(kind: str, step: int) -> None:
        target.write_bytes(os.urandom(2000) + bytes([step % 256, len(times[kind]) % 256]))
        start = time.perf_counter()
        if kind == "store":
            checkpoint = store.checkpoint(f"step {step}")
            assert checkpoint.changes.changed == ("d000/f00.dat",), checkpoint.changes
        elif kind == "floor":
            floor()
        else:
            await sandbox()
        times[kind].append((time.perf_counter() - start) * 1000)

    try:
        await sandbox()  # the sandbox's first checkpoint: the whole tree
        kinds = list(times)
        for step in range(rounds + 1):
            for kind in kinds[step % 3 :] + kinds[: step % 3]:
                await measure(kind, step)
            if step == 0:  # a round to warm up, not counted
                for series in times.values():
                    series.clear()
    finally:
        await runtime.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    try:
        figures = run(base, args.files, args.mb, args.rounds)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        f"checkpoint one-file step: {figures['checkpoint_ms_median']} ms vs git add+write-tree "
        f"{figures['git_add_write_tree_ms_median']} ms = {figures['checkpoint_ratio']}x "
        f"(target <= {TARGET_RATIO}x)",
        flush=True,
    )
    print(json.dumps(figures))


def run(base: Path, files: int, megabytes: int, rounds: int = ROUNDS) -> dict[str, Any]:
    workspace = base / "ws"
    log(f"making {files} files, {megabytes} MB ...")
    make_tree(workspace, files, megabytes)
    subprocess.run(["sync"], check=False)

    log("first checkpoint ...")
    store = CheckpointStore(base / "store.git", workspace, key="bench")
    first_s = timed(lambda: store.checkpoint("0"))
    log("baselines: git add -A && git write-tree, cp -al ...")
    plain = base / "plain.git"
    subprocess.run(["git", "init", "-q", "--bare", str(plain)], check=True)

    def git_add_write_tree() -> None:
        git_plain(plain, workspace, "add", "-A")
        git_plain(plain, workspace, "write-tree")

    plain_first_s = timed(git_add_write_tree)
    link_s = timed(lambda: subprocess.run(["cp", "-al", str(workspace), str(base / "links")]))
    shutil.rmtree(base / "links")

    log(f"{rounds} rounds of one-file steps: the store, the floor, a running sandbox ...")
    time.sleep(1.1)  # the first index is no longer racy (as after a step's pause for the LLM)
    size_before = du_mb(base / "store.git")
    steps = asyncio.run(
        one_file_steps(workspace, store, base / "sandbox-store.git", git_add_write_tree, rounds)
    )
    per_step_mb = (du_mb(base / "store.git") - size_before) / (rounds + 1)
    ours = statistics.median(steps["store"])
    floor = statistics.median(steps["floor"])

    log("restore of 1 000 deleted files ...")
    keep = base / "copy-d010-d019"
    folders = [workspace / f"d{n:03d}" for n in range(10, 20)]
    for folder in folders:
        shutil.copytree(folder, keep / folder.name)
    full = store.checkpoint("all there").commit
    for folder in folders:
        shutil.rmtree(folder)
    store.checkpoint("deleted")
    restore_s = timed(lambda: store.restore(full))
    assert all(folder.is_dir() for folder in folders)
    for folder in folders:
        shutil.rmtree(folder)
    copy_s = timed(
        lambda: [shutil.copytree(keep / f.name, f, copy_function=shutil.copy2) for f in folders]
    )
    return {
        "files": files,
        "megabytes": megabytes,
        "first_checkpoint_s": round(first_s, 2),
        "first_git_add_write_tree_s": round(plain_first_s, 2),
        "first_cp_al_s": round(link_s, 2),
        "checkpoint_ms_median": round(ours, 1),
        "git_add_write_tree_ms_median": round(floor, 1),
        "checkpoint_ratio": round(ours / floor, 2),
        "checkpoint_ratio_target": TARGET_RATIO,
        "checkpoint_ratio_met": ours / floor <= TARGET_RATIO,
        "checkpoint_ms_median_via_sandbox": round(statistics.median(steps["sandbox"]), 1),
        "checkpoint_samples_ms": {k: [round(v, 1) for v in vs] for k, vs in steps.items()},
        "restore_s": round(restore_s, 2),
        "cp_a_same_files_s": round(copy_s, 2),
        "store_mb_per_step": round(per_step_mb, 3),
        "store_mb_total": round(du_mb(base / "store.git"), 1),
    }


if __name__ == "__main__":
    main()
