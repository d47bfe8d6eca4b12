"""Benchmark of the sandbox profile's cost: the agent's own uid and the limits, on and off.

Run: `python benchmarks/limits.py`. Progress goes to stderr; the last line on stdout is ONE
JSON object (milliseconds). Three local runtimes are measured in the same run, alternating so
machine noise hits them alike:

- "profile": bubblewrap, the agent as its own uid (when run as root: idmapped mounts, the
  `setpriv` step) and the default limits (session cgroup, sized tmpfs);
- "bwrap_before": bubblewrap as before these changes (agent uid 0 with no capabilities, no
  limits: `agent_uid=0`, `Limits(0, 0, 0)`);
- "none": no isolation, no limits.

Figures: cold start (runtime start to the first completed `echo`), `echo` round trip (median),
the shell's restart (`exit`, then the next command: one agent process start), one agent process
start alone (nested bwrap + `true`, as its own uid vs as before), and the cost of the limits
themselves (making and removing the session's cgroup). Each ratio is printed beside
both of its figures.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sandbox.client  # noqa: F401  (a workbench process has the client loaded already)
from sandbox.limits import AgentCgroup, Limits
from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

COLD_STARTS = 5
ECHOES = 200
RESTARTS = 10
CGROUPS = 20
MODES: dict[str, dict[str, Any]] = {
    "profile": {"isolation": "bwrap"},
    "bwrap_before": {"isolation": "bwrap", "agent_uid": 0, "limits": Limits(0, 0, 0)},
    "none": {"isolation": "none", "limits": Limits(0, 0, 0)},
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def runtime(workspace: Path, mode: str) -> LocalRuntime:
    return LocalRuntime(workspace, disable=["browser", "jupyter"], **MODES[mode])


async def run(box: LocalRuntime, command: str) -> str:
    observation = await box.execute(CmdRunAction(command=command))
    assert isinstance(observation, CmdOutputObservation), observation
    return observation.content


async def cold_start_ms(workspace: Path, mode: str) -> float:
    """Runtime start to the first completed `echo`, in ms."""
    start = time.perf_counter()
    box = runtime(workspace, mode)
    try:
        await box.start()
        assert "cold" in await run(box, "echo cold")
        return (time.perf_counter() - start) * 1000
    finally:
        await box.close()


async def warm_figures(workspace: Path, mode: str) -> tuple[list[float], list[float], str]:
    """Echo round trips, shell restarts (ms) and the limits line of one started runtime."""
    box = runtime(workspace, mode)
    await box.start()
    try:
        for _ in range(20):
            await run(box, "echo hi")
        echoes = []
        for _ in range(ECHOES):
            start = time.perf_counter()
            await run(box, "echo hi")
            echoes.append((time.perf_counter() - start) * 1000)
        restarts = []
        for _ in range(RESTARTS):
            await run(box, "exit")
            start = time.perf_counter()
            await run(box, "true")
            restarts.append((time.perf_counter() - start) * 1000)
        line = box.limits_in_force.line() if box.limits_in_force else ""
        return echoes, restarts, line
    finally:
        await box.close()


def cgroup_ms() -> tuple[float, float] | None:
    """Median ms to make the session's cgroup (with limits set) and to remove it again."""
    made, removed = [], []
    for index in range(CGROUPS):
        start = time.perf_counter()
        group, _ = AgentCgroup.create(f"bench{index}", Limits().resolved())
        if group is None:
            return None
        made.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        group.remove()
        removed.append((time.perf_counter() - start) * 1000)
    return statistics.median(made), statistics.median(removed)


def agent_start_ms() -> tuple[float, float] | None:
    """Median ms of one agent process start (`true`) through the nested bwrap: as its own uid
    (idmapped /tmp bound in, `setpriv`) and as before (uid 0, capabilities dropped)."""
    import os
    import shutil
    import subprocess

    from sandbox.agent_uid import AgentUser, agent_parts

    bwrap = shutil.which("bwrap")
    if bwrap is None or os.geteuid() != 0:
        return None
    base = [bwrap, "--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    base += ["--unshare-pid"]
    # The idmapped clone is attached in this (the host's) mount namespace for the run only.
    scratch = Path(tempfile.mkdtemp(prefix="bench-agent-"))
    parts = agent_parts(AgentUser(61000, 61000, idmap=[(str(scratch), 0, 0)]))
    if isinstance(parts, str):
        log(f"agent start not measured: {parts}")
        return None
    own = [*base, *parts[0], "--", *parts[1], "true"]
    before = [*base, "--cap-drop", "ALL", "--", "true"]
    times: dict[str, list[float]] = {"own": [], "before": []}
    try:
        for _ in range(RESTARTS * 2):
            for name, command in (("own", own), ("before", before)):
                start = time.perf_counter()
                # On the host, `--bind / /` fails now and then while another container's
                # overlay mount comes or goes: such a run is left out (both kinds alike).
                if subprocess.run(command, capture_output=True, check=False).returncode == 0:
                    times[name].append((time.perf_counter() - start) * 1000)
    finally:
        from sandbox import idmap

        for option, place in zip(parts[0], parts[0][1:], strict=False):
            if option == "--bind":
                idmap.detach(place)
                Path(place).rmdir()
                Path(place).parent.rmdir()
        scratch.rmdir()
    if not times["own"] or not times["before"]:
        return None
    return statistics.median(times["own"]), statistics.median(times["before"])


def side_by_side(results: dict[str, Any], name: str, a: str, b: str) -> None:
    """Add `name_a_over_b` with both figures beside it."""
    x, y = results[f"{name}_{a}"], results[f"{name}_{b}"]
    results[f"{name}_{a}_over_{b}"] = f"{x / y:.2f} ({x} vs {y})"


async def figures() -> dict[str, Any]:
    """Every figure of the three modes, measured alternately in this run."""
    why = bwrap_available()
    if why is not None:
        return {"error": why}
    workspace = Path(tempfile.mkdtemp(prefix="bench-limits-"))
    cold: dict[str, list[float]] = {mode: [] for mode in MODES}
    for _ in range(COLD_STARTS):
        for mode in MODES:
            cold[mode].append(await cold_start_ms(workspace, mode))
    results: dict[str, Any] = {}
    for mode in MODES:
        log(f"cold starts {mode} (ms): {[round(t) for t in cold[mode]]}")
        echoes, restarts, line = await warm_figures(workspace, mode)
        log(f"{mode}: {line}")
        results[f"cold_start_ms_{mode}"] = round(statistics.median(cold[mode]), 1)
        results[f"echo_ms_{mode}"] = round(statistics.median(echoes), 3)
        results[f"shell_restart_ms_{mode}"] = round(statistics.median(restarts), 1)
    for name in ("cold_start_ms", "echo_ms", "shell_restart_ms"):
        side_by_side(results, name, "profile", "none")
        side_by_side(results, name, "profile", "bwrap_before")
    starts = agent_start_ms()
    if starts is not None:
        results["agent_process_start_ms_own_uid"] = round(starts[0], 1)
        results["agent_process_start_ms_before"] = round(starts[1], 1)
        side_by_side(results, "agent_process_start_ms", "own_uid", "before")
    cgroup = cgroup_ms()
    if cgroup is not None:
        results["cgroup_create_ms"] = round(cgroup[0], 2)
        results["cgroup_remove_ms"] = round(cgroup[1], 2)
    return results


def main() -> None:
    """Print the figures as one JSON line."""
    print(json.dumps(asyncio.run(figures())))


if __name__ == "__main__":
    main()
