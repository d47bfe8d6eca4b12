"""Benchmark of the isolated local runtime's cold start against its floor, in one run.

Run: `python benchmarks/cold_start.py [--rounds N]`. Progress goes to stderr; the last line on
stdout is ONE JSON object (milliseconds). Each round measures, one after the other, so that
machine noise hits them alike (medians over the rounds, after one round not counted):
- the floor's two parts:
  - `bwrap_python_ms`: a bare `bwrap` with the server's kind of mounts (the system read-only,
    the Python installation and the package read-only, the workspace and the runtime's temp
    folder writable, private /tmp, /run and /dev/shm, new pid, ipc and uts namespaces) running
    `python -P -c pass` on the sandbox's interpreter;
  - `server_import_ms`: the server's own import time, `import sandbox.__main__, sandbox.server`
    timed inside a fresh interpreter (with PYDANTIC_DISABLE_PLUGINS, as the server imports);
- `cold_start_ms`: `LocalRuntime(...)` created, `start()`ed and its first `echo` answered
  (ready to serve), with the app's defaults: bubblewrap, network "allowlist" (the session's
  network namespace and its holder), the default limits (cgroups, the agent on its own uid
  when run as root), a checkpoint store and the workspace's agent Python env. The app's
  process also checks once whether bubblewrap works (`bwrap_probe_ms`, cached after): that is
  not in `cold_start_ms`, as the rounds after the first share this process.
Target: `cold_start_ms <= 1.5 x (bwrap_python_ms + server_import_ms)`.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import sandbox.client  # noqa: E402, F401  (a workbench process has the client loaded already)
from sandbox.protocol import CmdOutputObservation, CmdRunAction  # noqa: E402
from sandbox.runtimes.bwrap import bwrap_available, bwrap_command  # noqa: E402
from sandbox.runtimes.local import LocalRuntime  # noqa: E402

ROUNDS = 11
TARGET_RATIO = 1.5
_IMPORT = (
    "import time; t = time.perf_counter(); import sandbox.__main__, sandbox.server; "
    "print((time.perf_counter() - t) * 1000)"
)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bwrap_python_ms(workspace: Path, scratch: Path) -> float:
    """A bare bwrap with the server's kind of mounts running `python -P -c pass`, in ms."""
    readable = [Path(sys.prefix), Path(sys.base_prefix), ROOT]
    readable.append(Path(sys.executable).resolve().parent)
    command = bwrap_command(workspace, writable=[scratch], readable=readable)
    command += ["--die-with-parent", sys.executable, "-P", "-c", "pass"]
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=workspace)
    return (time.perf_counter() - start) * 1000


def server_import_ms() -> float:
    """The server's modules imported in a fresh interpreter, timed inside it, in ms."""
    env = os.environ | {"PYDANTIC_DISABLE_PLUGINS": "__all__", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-P", "-c", _IMPORT], check=True, capture_output=True, text=True, env=env
    )
    return float(done.stdout)


async def cold_start_ms(workspace: Path, data: Path) -> float:
    """LocalRuntime created, started and its first `echo` answered, in ms (closed after)."""
    start = time.perf_counter()
    runtime = LocalRuntime(
        workspace,
        isolation="bwrap",
        network="allowlist",
        checkpoints=data / "checkpoints",
        python_env=data / "agent-env",
    )
    try:
        await runtime.start()
        observation = await runtime.execute(CmdRunAction(command="echo cold"))
        elapsed = (time.perf_counter() - start) * 1000
        assert isinstance(observation, CmdOutputObservation), observation
        assert "cold" in observation.content, observation
    finally:
        await runtime.close()
    return elapsed


async def measure(rounds: int) -> dict[str, object]:
    """The figures: medians over `rounds` interleaved rounds, after one not counted."""
    started = time.perf_counter()
    why = bwrap_available()  # once per process (cached): not in the cold starts below
    probe = (time.perf_counter() - started) * 1000
    if why is not None:
        return {"error": f"bubblewrap is not available: {why}"}
    top = Path(tempfile.mkdtemp(prefix="bench-cold-start-"))
    workspace, data, scratch = top / "ws", top / "data", top / "scratch"
    for folder in (workspace, data, scratch):
        folder.mkdir()
    figures: dict[str, list[float]] = {"bwrap": [], "import": [], "cold": []}
    try:
        for n in range(rounds + 1):
            bwrap, imports = bwrap_python_ms(workspace, scratch), server_import_ms()
            cold = await cold_start_ms(workspace, data)
            if n:  # the first round fills caches (and makes the agent's env)
                figures["bwrap"].append(bwrap)
                figures["import"].append(imports)
                figures["cold"].append(cold)
            log(f"round {n}: bwrap python {bwrap:.0f}, import {imports:.0f}, cold {cold:.0f} ms")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    bwrap = statistics.median(figures["bwrap"])
    imports = statistics.median(figures["import"])
    cold = statistics.median(figures["cold"])
    floor = bwrap + imports
    ratio = cold / floor
    print(
        f"cold start: {cold:.0f} ms vs floor {floor:.0f} ms (bwrap python {bwrap:.0f} ms + "
        f"server import {imports:.0f} ms) = {ratio:.2f}x (target <= {TARGET_RATIO}x)"
    )
    return {
        "cold_start_ms": round(cold, 1),
        "bwrap_python_ms": round(bwrap, 1),
        "server_import_ms": round(imports, 1),
        "floor_ms": round(floor, 1),
        "ratio": round(ratio, 3),
        "target_ratio": TARGET_RATIO,
        "within_target": ratio <= TARGET_RATIO,
        "rounds": rounds,
        "bwrap_probe_ms": round(probe, 1),
        "samples_ms": {name: [round(v, 1) for v in values] for name, values in figures.items()},
    }


def main() -> None:
    """Print the summary line, then the figures as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS, help=f"default {ROUNDS}")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(measure(max(1, args.rounds)))))


if __name__ == "__main__":
    main()
