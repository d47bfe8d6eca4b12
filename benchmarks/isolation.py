"""Benchmark of the local runtime's isolation: cold start and echo, bubblewrap on and off.

Run: `python benchmarks/isolation.py`. Progress goes to stderr; the last line on stdout is ONE
JSON object (milliseconds). Each figure with isolation on ("bwrap": the server in bwrap, the
shell in a nested one) stands beside the same figure with isolation off ("none"), measured in
this run, alternating on and off so that machine noise hits both alike. Target: cold start with
isolation on <= 350 ms. `isolation_figures()` is importable for other benchmarks.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sandbox.client  # noqa: F401  (a workbench process has the client loaded already)
from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

COLD_STARTS = 7
ECHOES = 300
MODES = ("bwrap", "none")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def cold_start_ms(workspace: Path, isolation: str) -> float:
    """Runtime start to the first completed `echo`, in ms."""
    start = time.perf_counter()
    runtime = LocalRuntime(workspace, isolation=isolation, disable=["browser"])  # type: ignore[arg-type]
    try:
        await runtime.start()
        observation = await runtime.execute(CmdRunAction(command="echo cold"))
        elapsed = (time.perf_counter() - start) * 1000
        assert isinstance(observation, CmdOutputObservation) and "cold" in observation.content
    finally:
        await runtime.close()
    return elapsed


async def echo_ms(workspace: Path, isolation: str) -> list[float]:
    """`echo hi` round trips through a started runtime, in ms (after a warm-up)."""
    runtime = LocalRuntime(workspace, isolation=isolation, disable=["browser"])  # type: ignore[arg-type]
    await runtime.start()
    try:
        echo = CmdRunAction(command="echo hi")
        for _ in range(20):
            await runtime.execute(echo)
        times = []
        for _ in range(ECHOES):
            start = time.perf_counter()
            await runtime.execute(echo)
            times.append((time.perf_counter() - start) * 1000)
        return times
    finally:
        await runtime.close()


async def isolation_figures() -> dict[str, object]:
    """Cold start and echo medians with isolation on and off, measured alternately."""
    why = bwrap_available()
    if why is not None:
        return {"isolation_error": why}
    workspace = Path(tempfile.mkdtemp(prefix="bench-isolation-"))
    cold: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(COLD_STARTS):
        for mode in MODES:
            cold[mode].append(await cold_start_ms(workspace, mode))
    for mode in MODES:
        log(f"cold starts {mode} (ms): {[round(t) for t in cold[mode]]}")
    echoes = {mode: await echo_ms(workspace, mode) for mode in MODES}
    results: dict[str, object] = {}
    for mode, name in (("bwrap", "isolated"), ("none", "not_isolated")):
        results[f"cold_start_ms_{name}"] = round(statistics.median(cold[mode]), 1)
        results[f"echo_ms_median_{name}"] = round(statistics.median(echoes[mode]), 3)
    results["cold_start_target_ms"] = 350
    results["cold_start_within_target"] = results["cold_start_ms_isolated"] <= 350  # type: ignore[operator]
    return results


def main() -> None:
    """Print the figures as one JSON line."""
    results = asyncio.run(isolation_figures())
    print(json.dumps(results))


if __name__ == "__main__":
    main()
