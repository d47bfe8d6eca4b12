"""Per-session limits in the Docker runtime: real Docker, real container, real floods.

Docker applies them (`pids_limit`, `mem_limit`, sized tmpfs for /tmp and /run, `shm_size`):
a fork flood stops at the limit, every tmpfs fills to its size and no further, the server
and the app still answer.
"""

from __future__ import annotations

import pytest
from docker_support import MakeRuntime, docker_api, make_runtime, sandbox_image
from test_limits import FLOOD

from sandbox.limits import Limits
from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.docker import DockerRuntime

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker

PROCESSES = 120
TMPFS = 24 << 20


async def sh(runtime: DockerRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def test_docker_holds_the_limits(make_runtime: MakeRuntime) -> None:
    runtime = await make_runtime(
        limits=Limits(processes=PROCESSES, memory=256 << 20, tmpfs=TMPFS), memory=None
    )
    line = runtime.limits_in_force.line()
    assert line == (
        f"limits: {PROCESSES} processes (Docker pids limit), memory 256 MiB (Docker memory "
        "limit), /tmp, /run, /dev/shm 24 MiB each (Docker tmpfs)"
    )
    for folder in ("/tmp", "/dev/shm", "/run"):
        obs = await sh(runtime, f"dd if=/dev/zero of={folder}/fill bs=1M count=100; df -k {folder}")
        assert "No space left on device" in obs.content, (folder, obs.content)
        assert int(obs.content.splitlines()[-1].split()[1]) == TMPFS >> 10, obs.content
    obs = await sh(runtime, "rm -f /tmp/fill /dev/shm/fill /run/fill; " + FLOOD)
    assert "stopped after" in obs.content, obs.content
    count = await sh(runtime, "cat /sys/fs/cgroup/pids/pids.current /sys/fs/cgroup/pids.current")
    assert int(count.content.split()[0]) <= PROCESSES
    assert (await runtime.info()).status == "ok" and runtime.restarts == 0
    assert (await sh(runtime, "echo next")).content.strip() == "next"
