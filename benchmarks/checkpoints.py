"""Benchmark of workspace checkpoints on a workspace of 10 000 files / 200 MB.

Run: `python benchmarks/checkpoints.py [--files N] [--mb M]`. Progress goes to stderr; the last
line on stdout is ONE JSON object. Each figure sits beside a baseline measured in the same run
on the same tree:
- `first_checkpoint_s`: the first checkpoint of the whole workspace, beside plain
  `git add -A && git write-tree` into a fresh repository and `cp -al` (a hard-link snapshot);
- `checkpoint_ms_median`: a step that changes one file (target <= 50), through the store and
  through a running local sandbox (`checkpoint` action over HTTP), beside plain
  `git add -A && git write-tree` on the same change;
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

STEPS = 20


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


async def via_sandbox(workspace: Path, store: Path) -> list[float]:
    """One-file steps checkpointed by a running local sandbox, in ms."""
    runtime = LocalRuntime(workspace, disable=["browser", "jupyter"], checkpoints=store)
    await runtime.start()
    times = []
    try:
        await runtime.execute(CheckpointAction(label="warm"))
        for step in range(STEPS):
            (workspace / "d000" / "f00.dat").write_bytes(os.urandom(2000) + bytes([step]))
            start = time.perf_counter()
            observation = await runtime.execute(CheckpointAction(label=f"sandbox {step}"))
            times.append((time.perf_counter() - start) * 1000)
            assert isinstance(observation, CheckpointObservation), observation
    finally:
        await runtime.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--mb", type=int, default=200)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-checkpoints-"))
    try:
        figures = run(base, args.files, args.mb)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(figures))


def run(base: Path, files: int, megabytes: int) -> dict[str, Any]:
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

    log(f"{STEPS} one-file steps ...")
    size_before = du_mb(base / "store.git")
    ours, plain_steps = [], []
    target = workspace / "d000" / "f00.dat"
    for step in range(STEPS):
        target.write_bytes(os.urandom(2000) + bytes([step]))
        ours.append(timed(lambda step=step: store.checkpoint(str(step + 1))) * 1000)
        plain_steps.append(timed(git_add_write_tree) * 1000)
    per_step_mb = (du_mb(base / "store.git") - size_before) / STEPS
    log("through a running sandbox ...")
    sandbox_steps = asyncio.run(via_sandbox(workspace, base / "store.git"))

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
        "checkpoint_ms_median": round(statistics.median(ours), 1),
        "checkpoint_ms_median_via_sandbox": round(statistics.median(sandbox_steps), 1),
        "git_add_write_tree_ms_median": round(statistics.median(plain_steps), 1),
        "restore_s": round(restore_s, 2),
        "cp_a_same_files_s": round(copy_s, 2),
        "store_mb_per_step": round(per_step_mb, 3),
        "store_mb_total": round(du_mb(base / "store.git"), 1),
    }


if __name__ == "__main__":
    main()
