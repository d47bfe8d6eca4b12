"""The agent never runs as host root on the local runtime: real bwrap, idmapped mounts, real shell.

With the app running as root (as on these machines), the agent's shell and kernel run as a
separate unprivileged uid. The workspace, /tmp (its HOME), /run and /dev/shm reach it through
idmapped mounts, so it works there as before and what it makes belongs to the folder's owner on
the host. `agent_uid=0`, the old way, is the control: the same reads succeed as root.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
)
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = [
    pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work"),
    pytest.mark.skipif(os.geteuid() != 0, reason="a separate agent uid is for an app run as root"),
]

AGENT_UID = 61234
GIT = (
    "git init -q && git add -A && git -c user.name=a -c user.email=a@b commit -qm x && "
    "git checkout -q -b b && git stash list && echo git-ok"
)


async def sh(runtime: LocalRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def start(workspace: Path, **options: object) -> LocalRuntime:
    runtime = LocalRuntime(workspace, isolation="bwrap", disable=["browser"], **options)  # type: ignore[arg-type]
    await runtime.start()
    return runtime


@pytest.fixture
async def agent(tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = await start(workspace, agent_uid=AGENT_UID)
    yield runtime
    await runtime.close()


async def test_the_agent_is_an_unprivileged_uid_with_a_name(agent: LocalRuntime) -> None:
    obs = await sh(agent, "id -u; id -g; whoami; echo $HOME; cat /proc/self/status | grep CapEff")
    uid, gid, name, home, caps = obs.content.splitlines()
    assert (uid, gid, name, home) == (str(AGENT_UID), str(AGENT_UID), "workbench", "/tmp/home")
    assert caps.split()[1] == "0000000000000000"
    cell = await agent.execute(IPythonAction(code="import os; print(os.getresuid())"))
    assert isinstance(cell, IPythonObservation)
    assert cell.content.strip() == f"({AGENT_UID}, {AGENT_UID}, {AGENT_UID})"


async def test_root_files_and_the_server_are_out_of_reach(agent: LocalRuntime) -> None:
    obs = await sh(
        agent,
        "cat /etc/shadow; echo rc=$?; kill -0 1; echo kill=$?; grep NoNewPrivs /proc/self/status",
    )
    assert "Permission denied" in obs.content and "rc=1" in obs.content, obs.content
    assert "kill=1" in obs.content  # pid 1 of its namespace is root's: not its to signal
    assert obs.content.split()[-1] == "1"  # no setuid program gives root back
    assert (await agent.info()).status == "ok" and agent.restarts == 0


async def test_it_works_in_the_workspace_and_its_files_stay_the_owners(
    agent: LocalRuntime,
) -> None:
    workspace = agent.workspace
    (workspace / "old.txt").write_text("from the person\n")
    edit = await agent.execute(
        FileEditAction(command="create", path=str(workspace / "edited.txt"), file_text="e\n")
    )
    assert isinstance(edit, FileEditObservation), edit
    obs = await sh(
        agent,
        "echo more >> old.txt && echo more >> edited.txt && mkdir -p d && echo n > d/new.txt "
        "&& touch /tmp/t /dev/shm/s /run/r $HOME/h && pip --version >/dev/null && echo ok",
    )
    assert obs.content.strip().endswith("ok"), obs.content
    for name in ("old.txt", "edited.txt", "d", "d/new.txt"):
        assert (workspace / name).stat().st_uid == os.getuid(), name
    assert (workspace / "old.txt").read_text() == "from the person\nmore\n"
    assert (await sh(agent, GIT)).content.strip().endswith("git-ok")


async def test_a_workspace_of_another_owner_gets_files_of_that_owner(tmp_path: Path) -> None:
    workspace = tmp_path / "theirs"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    for path in (workspace, workspace / "a.txt"):
        os.chown(path, 1000, 1000)
    runtime = await start(workspace, agent_uid=AGENT_UID)
    try:
        obs = await sh(runtime, "echo b >> a.txt && echo c > c.txt && id -u")
        assert obs.content.strip() == str(AGENT_UID), obs.content
    finally:
        await runtime.close()
    assert (workspace / "c.txt").stat().st_uid == 1000
    assert (workspace / "a.txt").read_text() == "a\nb\n"


async def test_agent_uid_0_is_root_again(tmp_path: Path) -> None:
    """The control: the old way (root, capabilities dropped) reads root's files."""
    runtime = await start(tmp_path, agent_uid=0)
    try:
        obs = await sh(runtime, "id -u; head -c 5 /etc/shadow >/dev/null && echo read")
        assert obs.content.split() == ["0", "read"], obs.content
    finally:
        await runtime.close()
