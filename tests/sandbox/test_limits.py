"""Per-session limits on the local runtime: real bwrap, real cgroups, real shell, real floods.

A fork flood, a memory hog and tmpfs fills run as the agent would run them; each test checks
the count stays at the limit, the agent is told, the sandbox server and this process (the app)
still answer, and the next command works. Limits are small here so the floods stay short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.limits import AgentCgroup, Limits, format_size, parse_size, plan
from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

PROCESSES = 150
MEMORY = 192 << 20
TMPFS = 24 << 20

CAN_CGROUP = AgentCgroup.create("probe", Limits(processes=10, memory=1 << 30))
if CAN_CGROUP[0] is not None:
    CAN_CGROUP[0].remove()
needs_cgroups = pytest.mark.skipif(
    CAN_CGROUP[0] is None, reason=f"no writable cgroup here: {CAN_CGROUP[1]}"
)
needs_bwrap = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")

FLOOD = """python3 - <<'EOF'
import subprocess
kids = []
try:
    for _ in range(3000):
        kids.append(subprocess.Popen(["sleep", "120"]))
except OSError as exc:
    print("stopped after", len(kids), "processes:", exc)
EOF"""


async def sh(runtime: LocalRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


@pytest.fixture
async def limited(tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = LocalRuntime(
        workspace,
        isolation="bwrap",
        disable=["browser", "jupyter"],
        limits=Limits(processes=PROCESSES, memory=MEMORY, tmpfs=TMPFS),
    )
    await runtime.start()
    yield runtime
    await runtime.close()


def test_sizes_read_and_print_as_people_write_them() -> None:
    assert [parse_size(t) for t in ("512m", "8g", "8GiB", "1 gb", "1024", "0")] == [
        512 << 20, 8 << 30, 8 << 30, 1 << 30, 1024, 0,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="not a size: '8 apples'"):
        parse_size("8 apples")
    assert [format_size(s) for s in (8 << 30, 512 << 20, 1000)] == ["8 GiB", "512 MiB", "1000 B"]
    memory = Limits().resolved().memory
    assert 0 < memory <= 8 << 30


def test_what_cannot_be_limited_is_said_with_the_reason() -> None:
    line = plan(Limits(processes=100, memory=1 << 30), None, "no cgroup v1 pids", False, None)
    assert line.line() == (
        "limits: processes not limited (no cgroup v1 pids), memory not limited (no cgroup v1 "
        "pids), tmpfs not limited (no private /tmp without isolation)"
    )
    own_uid = plan(Limits(processes=100, memory=0), None, "x", True, "bwrap tmpfs size")
    assert own_uid.processes == "100 processes (RLIMIT_NPROC of the agent's uid)"
    assert own_uid.memory == "memory not limited (off)"


@needs_bwrap
@needs_cgroups
async def test_a_fork_flood_stops_at_the_limit_and_everything_still_answers(
    limited: LocalRuntime,
) -> None:
    cgroup = limited._cgroup
    assert cgroup is not None
    assert limited.limits_in_force is not None
    assert f"{PROCESSES} processes (cgroup v" in limited.limits_in_force.line()
    obs = await sh(limited, FLOOD)
    assert "stopped after" in obs.content and "Resource temporarily unavailable" in obs.content
    assert obs.note is not None and f"the sandbox allows {PROCESSES} processes" in obs.note
    count = len(cgroup.processes())
    assert PROCESSES - 10 <= count <= PROCESSES, count  # the sleeps are still there
    info = await limited.info()  # the server answers: it is outside the agent's group
    assert info.status == "ok" and limited.restarts == 0
    assert (await sh(limited, "echo next")).content.strip() == "next"  # a builtin: no fork
    await sh(limited, "kill -9 -1")  # what the note advises: ends every process of the agent
    assert (await sh(limited, "ls / | wc -l")).exit_code == 0
    assert len(cgroup.processes()) < 10


@needs_bwrap
@needs_cgroups
async def test_a_shell_fork_loop_still_running_tells_the_agent_of_the_limit(
    limited: LocalRuntime,
) -> None:
    """bash retries a refused fork for a while, so the loop is still running when the agent
    looks: the note names the limit then, not only once the command ends (a user trial)."""
    loop = f"for i in $(seq {PROCESSES * 2}); do sleep 60 & done; echo started"
    obs = await limited.execute(CmdRunAction(command=loop, timeout=6))
    assert isinstance(obs, CmdOutputObservation), obs
    assert obs.running and "Resource temporarily unavailable" in obs.content, obs
    assert obs.note is not None and f"the sandbox allows {PROCESSES} processes" in obs.note
    assert "still running" in obs.note
    info = await limited.info()  # the server answers; closing the runtime ends the loop
    assert info.status == "ok"


@needs_bwrap
@needs_cgroups
async def test_a_memory_hog_is_killed_and_the_agent_is_told(limited: LocalRuntime) -> None:
    obs = await sh(limited, f"python3 -c \"b = b'x' * {3 * MEMORY}; print(len(b))\"")
    assert obs.exit_code == 137, obs
    assert obs.note is not None
    assert f"killed: memory limit {format_size(MEMORY)} reached" in obs.note
    assert (await sh(limited, "echo after")).content.strip() == "after"
    assert (await limited.info()).status == "ok" and limited.restarts == 0


@needs_bwrap
async def test_filling_every_tmpfs_ends_in_enospc_and_the_app_survives(
    limited: LocalRuntime,
) -> None:
    for folder in ("/tmp", "/dev/shm", "/run"):
        obs = await sh(limited, f"dd if=/dev/zero of={folder}/fill bs=1M count=100; df -k {folder}")
        assert "No space left on device" in obs.content, (folder, obs.content)
        size_kib = int(obs.content.splitlines()[-1].split()[1])
        assert size_kib == TMPFS >> 10, (folder, obs.content)
    assert (await limited.info()).status == "ok"
    assert (await sh(limited, "rm /tmp/fill && echo freed")).content.strip() == "freed"


@needs_bwrap
@needs_cgroups
async def test_the_session_group_is_removed_at_close(tmp_path: Path) -> None:
    runtime = LocalRuntime(tmp_path, isolation="bwrap", disable=["browser", "jupyter"])
    await runtime.start()
    cgroup = runtime._cgroup
    assert cgroup is not None
    folders = list(cgroup.dirs.values())
    assert all(f.is_dir() for f in folders)
    await sh(runtime, "sleep 100 &")
    await runtime.close()
    assert not any(f.exists() for f in folders)


@needs_cgroups
async def test_without_isolation_the_whole_server_is_in_the_group(tmp_path: Path) -> None:
    runtime = LocalRuntime(
        tmp_path, isolation="none", disable=["browser", "jupyter"], limits=Limits(processes=64)
    )
    await runtime.start()
    try:
        cgroup = runtime._cgroup
        assert cgroup is not None and runtime.pid in cgroup.processes()
        assert runtime.limits_in_force is not None
        assert "tmpfs not limited" in runtime.limits_in_force.line()
        obs = await sh(runtime, FLOOD)
        assert "stopped after" in obs.content
        assert len(cgroup.processes()) <= 64
        assert (await runtime.info()).status == "ok"
    finally:
        await runtime.close()  # kills what is left in the group
    assert not any(f.exists() for f in cgroup.dirs.values())
