"""Benchmark of MCP servers in the sandbox: start a server and list its tools, then call one.

Run: `python benchmarks/mcp.py`. Progress goes to stderr; the last line on stdout is ONE JSON
object (milliseconds). The server is the tests' demo server (the SDK's `MCPServer` over stdio).
Each figure through the sandbox (`mcp_list` / `mcp_call` sent to a started local runtime, the
server started by the sandbox server inside bubblewrap where it works) stands beside the same
work done by the bare SDK client in this process with no sandbox (`mcp.Client` on
`StdioServerParameters`), measured alternately so that machine noise hits both alike.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

# This file is named like the SDK: its folder must not shadow the `mcp` package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

from sandbox.protocol import (  # noqa: E402  (after the path is set)
    McpCallAction,
    McpCallObservation,
    McpListAction,
    McpListObservation,
    McpServerSpec,
)
from sandbox.runtimes.local import LocalRuntime  # noqa: E402

ROUNDS = 5
CALLS = 100
DEMO = Path(__file__).resolve().parents[1] / "tests" / "mcp_servers" / "demo_server.py"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def sandbox_start_ms(runtime: LocalRuntime, round_: int) -> float:
    """`mcp_list` of a server not running yet (a new name each round): start + list."""
    spec = McpServerSpec(command=[sys.executable, str(DEMO)])
    start = time.perf_counter()
    obs = await runtime.execute(McpListAction(servers={f"demo{round_}": spec}))
    elapsed = (time.perf_counter() - start) * 1000
    assert isinstance(obs, McpListObservation) and obs.servers[0].tools, obs
    return elapsed


async def sandbox_calls_ms(runtime: LocalRuntime, server: str) -> list[float]:
    add = McpCallAction(server=server, tool="add", arguments={"a": 1, "b": 2})
    times = []
    for _ in range(CALLS):
        start = time.perf_counter()
        obs = await runtime.execute(add)
        times.append((time.perf_counter() - start) * 1000)
        assert isinstance(obs, McpCallObservation) and obs.content == "3", obs
    return times


async def bare_ms() -> tuple[float, list[float]]:
    """The bare SDK: start the same server and list its tools; then `CALLS` calls."""
    from mcp import Client, StdioServerParameters

    start = time.perf_counter()
    async with Client(StdioServerParameters(command=sys.executable, args=[str(DEMO)])) as client:
        listed = await client.list_tools()
        started = (time.perf_counter() - start) * 1000
        assert listed.tools
        times = []
        for _ in range(CALLS):
            begin = time.perf_counter()
            result = await client.call_tool("add", {"a": 1, "b": 2})
            times.append((time.perf_counter() - begin) * 1000)
            assert not result.is_error
    return started, times


async def main(isolation: str = "auto") -> dict[str, object]:
    workspace = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
    runtime = LocalRuntime(
        workspace,
        isolation=isolation,  # type: ignore[arg-type]
        disable=["browser", "jupyter"],
        warm_up=False,
    )
    await runtime.start()
    log(f"local runtime started (isolation: {runtime.isolation})")
    starts: dict[str, list[float]] = {"sandbox": [], "bare": []}
    calls: dict[str, list[float]] = {"sandbox": [], "bare": []}
    try:
        import mcp  # noqa: F401  (the sandbox server imports it once too: not part of a start)

        for round_ in range(ROUNDS):
            starts["sandbox"].append(await sandbox_start_ms(runtime, round_))
            calls["sandbox"] += await sandbox_calls_ms(runtime, f"demo{round_}")
            started, times = await bare_ms()
            starts["bare"].append(started)
            calls["bare"] += times
            log(
                f"round {round_ + 1}: start+list sandbox {starts['sandbox'][-1]:.0f} ms, "
                f"bare {started:.0f} ms"
            )
    finally:
        await runtime.close()
    result: dict[str, object] = {"isolation": runtime.isolation, "rounds": ROUNDS}
    for where in ("sandbox", "bare"):
        result[f"start_and_list_{where}_ms"] = round(statistics.median(starts[where]), 1)
        result[f"call_{where}_ms"] = round(statistics.median(calls[where]), 2)
    result["start_and_list_sandbox_first_ms"] = round(starts["sandbox"][0], 1)
    return result


if __name__ == "__main__":
    # `--isolation none`: the same with the sandbox's isolation off
    isolation = sys.argv[2] if sys.argv[1:2] == ["--isolation"] else "auto"
    print(json.dumps(asyncio.run(main(isolation))))
