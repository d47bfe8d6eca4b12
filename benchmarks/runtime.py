"""Benchmark of the local runtime: echo latency, cold start, big output, editor, Jupyter, memory.

Run: `python benchmarks/runtime.py`. Progress goes to stderr; the last line on stdout is ONE
JSON object with the figures (milliseconds unless the key says otherwise). Everything is
measured in this run, on this machine, including the baseline (a persistent bash over pipes).
Targets: echo <= 3 ms, cold start <= 300 ms, seq200k <= 100 ms, editor view <= 5 ms,
Jupyter cell <= 15 ms, server RSS <= 80 MB.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sandbox.client  # noqa: F401  (a workbench process has the client loaded already)
from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    FileEditAction,
    IPythonAction,
    Observation,
)
from sandbox.runtimes.local import LocalRuntime

ECHOES = 300
COLD_STARTS = 5
CELLS = 40
VIEWS = 50


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def baseline_echo_ms(rounds: int = ECHOES) -> float:
    """Median `echo` round trip through a persistent bash over pipes with an end marker."""
    bash = subprocess.Popen(
        ["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert bash.stdin is not None and bash.stdout is not None
    out = bash.stdout.fileno()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        bash.stdin.write(b"echo hi; echo __END__$?\n")
        bash.stdin.flush()
        buffer = b""
        while b"__END__" not in buffer or not buffer.endswith(b"\n"):
            buffer += os.read(out, 65536)
        times.append(time.perf_counter() - start)
    bash.stdin.close()
    bash.wait()
    return statistics.median(times) * 1000


async def timed(
    runtime: LocalRuntime, action: CmdRunAction | FileEditAction | IPythonAction
) -> tuple[float, Observation]:
    start = time.perf_counter()
    observation = await runtime.execute(action)
    return (time.perf_counter() - start) * 1000, observation


async def cold_start_ms(workspace: Path) -> float:
    """Median over a few runs of: runtime start to the first completed `echo`."""
    times = []
    for _ in range(COLD_STARTS):
        start = time.perf_counter()
        runtime = LocalRuntime(workspace)
        await runtime.start()
        observation = await runtime.execute(CmdRunAction(command="echo cold"))
        times.append((time.perf_counter() - start) * 1000)
        assert isinstance(observation, CmdOutputObservation) and "cold" in observation.content
        await runtime.close()
    log(f"cold starts (ms): {[round(t) for t in times]}")
    return statistics.median(times)


async def main() -> dict[str, object]:
    workspace = Path(tempfile.mkdtemp(prefix="bench-runtime-"))
    results: dict[str, object] = {}
    results["cold_start_ms"] = round(await cold_start_ms(workspace), 1)

    runtime = LocalRuntime(workspace)
    await runtime.start()
    try:
        echo = CmdRunAction(command="echo hi")
        for _ in range(20):
            await runtime.execute(echo)
        echoes = [(await timed(runtime, echo))[0] for _ in range(ECHOES)]
        results["echo_ms_median"] = round(statistics.median(echoes), 3)
        results["echo_ms_p95"] = round(percentile(echoes, 0.95), 3)
        results["echo_ms_baseline_median"] = round(baseline_echo_ms(), 3)
        log(f"echo median {results['echo_ms_median']} ms, p95 {results['echo_ms_p95']} ms")

        seq_times, head_kept, tail_kept = [], True, True
        for _ in range(3):
            elapsed, observation = await timed(runtime, CmdRunAction(command="seq 1 200000"))
            assert isinstance(observation, CmdOutputObservation), observation
            lines = observation.content.splitlines()
            head_kept = head_kept and lines[:3] == ["1", "2", "3"]
            tail_kept = tail_kept and lines[-1] == "200000"
            seq_times.append(elapsed)
        results["seq200k_ms"] = round(statistics.median(seq_times), 1)
        results["seq200k_head_kept"] = head_kept
        results["seq200k_tail_kept"] = tail_kept

        big = workspace / "big.txt"
        big.write_text("".join(f"line {i} of the big file\n" for i in range(1, 20001)))
        view = FileEditAction(command="view", path=str(big), view_range=[10000, 10049])
        _, first_view = await timed(runtime, view)
        assert "line 10000 of" in getattr(first_view, "content", ""), first_view
        views = [(await timed(runtime, view))[0] for _ in range(VIEWS)]
        results["editor_view_ms"] = round(statistics.median(views), 3)

        _, warm = await timed(runtime, IPythonAction(code="x = 1"))  # starts the kernel
        log(f"kernel start: {warm!r:.120}")
        cells = [(await timed(runtime, IPythonAction(code="x + 1")))[0] for _ in range(CELLS)]
        results["jupyter_cell_ms"] = round(statistics.median(cells), 2)

        await asyncio.sleep(1.0)
        results["server_rss_mb"] = (await runtime.info()).rss_mb
    finally:
        await runtime.close()
    keys = [
        "echo_ms_median",
        "echo_ms_p95",
        "echo_ms_baseline_median",
        "cold_start_ms",
        "seq200k_ms",
        "seq200k_head_kept",
        "seq200k_tail_kept",
        "editor_view_ms",
        "jupyter_cell_ms",
        "server_rss_mb",
    ]
    return {key: results[key] for key in keys}


if __name__ == "__main__":
    began = time.perf_counter()
    figures = asyncio.run(main())
    log(f"benchmark took {time.perf_counter() - began:.1f} s")
    print(json.dumps(figures))
