"""The Docker runtime against an adversarial agent: real Docker, real server, real shell and kernel.

The agent runs under its own uid while the server keeps root as its real uid, so the agent can
neither read the server's secrets nor signal it (`sandbox/confine.py`). Each attack runs as the
agent would run it, through the runtime's shell or kernel; `user_id=0`, the one way to run the
agent as root, is the control that shows the same attacks succeed without that separation.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from docker_support import (
    MakeRuntime,
    close_runtime,
    docker_api,
    make_runtime,
    new_runtime,
    sandbox_image,
)
from test_isolation import HUNT

from sandbox.protocol import CmdOutputObservation, CmdRunAction, IPythonAction, IPythonObservation
from sandbox.runtimes.docker import SERVER_PORT, DockerRuntime

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker

APP_KEY = "sk-app-" + secrets.token_hex(12)
AGENT_UID = 1234


async def sh(runtime: DockerRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


def token_of(runtime: DockerRuntime) -> str:
    client = runtime._client
    assert client is not None
    return str(client._auth["Authorization"]).split()[1]  # type: ignore[attr-defined]


@pytest.fixture
def app() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for the workbench app on the host: its environment holds the LLM key."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(300)"],
        env={**os.environ, "LLM_API_KEY": APP_KEY},
    )
    yield proc
    proc.kill()
    proc.wait()


# The attacks marked `on_shared` leave the sandbox as they found it: they share one container.
on_shared = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def agent_apart(
    sandbox_image: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DockerRuntime]:
    """The agent under its own uid, started from an environment that holds the app's key."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LLM_API_KEY", APP_KEY)
        runtime = new_runtime(tmp_path_factory.mktemp("apart") / "workspace", user_id=AGENT_UID)
        await runtime.start()
    yield runtime
    await close_runtime(runtime)


@pytest.fixture
async def agent_alone(make_runtime: MakeRuntime, monkeypatch: pytest.MonkeyPatch) -> DockerRuntime:
    """`agent_apart`, fresh: for an attack that kills the agent's own processes."""
    monkeypatch.setenv("LLM_API_KEY", APP_KEY)
    return await make_runtime(user_id=AGENT_UID)


@on_shared
async def test_the_agent_runs_under_its_own_uid_and_the_server_keeps_root(
    agent_apart: DockerRuntime,
) -> None:
    server = (await agent_apart.info()).pid
    obs = await sh(agent_apart, f"id -u; ps -o ruid=,euid=,suid= -p {server}")
    assert obs.content.split() == [str(AGENT_UID), "0", str(AGENT_UID), "0"]
    cell = await agent_apart.execute(IPythonAction(code="import os; print(os.getresuid())"))
    assert isinstance(cell, IPythonObservation) and not cell.error
    assert f"({AGENT_UID}, {AGENT_UID}, {AGENT_UID})" in cell.content
    # no-new-privileges: a setuid program gives nothing back
    obs = await sh(agent_apart, "grep NoNewPrivs /proc/self/status; grep CapEff /proc/self/status")
    assert "NoNewPrivs:\t1" in obs.content and "CapEff:\t0000000000000000" in obs.content


@on_shared
async def test_the_agent_cannot_find_the_key_or_the_token(
    agent_apart: DockerRuntime, app: subprocess.Popen[bytes]
) -> None:
    token = token_of(agent_apart)
    server = (await agent_apart.info()).pid
    out = (await sh(agent_apart, HUNT.replace("REPO", "no-such-dir"))).content
    assert "LLM_API_KEY" not in out and APP_KEY not in out
    assert token not in out and "SANDBOX_TOKEN" not in out
    assert f"NOMEM {server} Permission denied" in out  # the server's memory is closed to it
    direct = await sh(
        agent_apart,
        f"cat /proc/{server}/environ /proc/{server}/mem /proc/1/environ /.sandbox-token 2>&1; "
        f"ls /proc/{server}/fd 2>&1; ps e -p {server} 2>&1",
    )
    assert direct.content.count("Permission denied") >= 4
    assert token not in direct.content and "SANDBOX" not in direct.content.replace(
        "sandbox serve", ""
    ).replace("sandbox.runtimes", "")
    cell = await agent_apart.execute(
        IPythonAction(
            code="import glob\nfound = []\nfor p in glob.glob('/proc/[0-9]*/environ'):\n"
            "    try:\n        found.append(open(p, 'rb').read())\n"
            "    except OSError as exc:\n        print(p, exc.strerror)\nprint(b''.join(found))"
        )
    )
    assert isinstance(cell, IPythonObservation) and not cell.error
    assert f"/proc/{server}/environ Permission denied" in cell.content
    assert APP_KEY not in cell.content and token not in cell.content


@on_shared
async def test_the_server_refuses_the_agent_without_the_token(agent_apart: DockerRuntime) -> None:
    """Reaching the server is possible; every route answers 401 without the token (which
    the agent cannot read: see the environ tests above)."""
    out = await sh(
        agent_apart,
        f"""python3 - <<'EOF'
import urllib.request, urllib.error
for path in ("/files?path=.", "/execute", "/upload?path=x"):
    try:
        urllib.request.urlopen(
            "http://127.0.0.1:{SERVER_PORT}" + path,
            data=None if path.startswith("/files") else b"{{}}",
            timeout=10,
        )
        print("OPEN", path)
    except urllib.error.HTTPError as exc:
        print("HTTP", exc.code)
EOF""",
    )
    assert "OPEN" not in out.content and out.content.count("HTTP 401") == 3, out.content


async def test_the_agent_cannot_signal_the_server_or_the_app(
    agent_alone: DockerRuntime, app: subprocess.Popen[bytes]
) -> None:
    agent_apart = agent_alone
    before = await agent_apart.info()
    out = await sh(
        agent_apart,
        f"kill -9 {before.pid}; echo kill=$?; kill -TERM {app.pid} 1; echo app=$?; "
        "pkill -9 -f 'sandbox serve'; echo pkill=$?; pkill -9 -f docker-init; echo init=$?",
    )
    assert "kill=1" in out.content and "app=1" in out.content, out.content
    assert "pkill=1" in out.content and "init=1" in out.content, out.content
    # The last resort: signal every process it may. Only its own die (the shell among them).
    await agent_apart.execute(CmdRunAction(command="kill -9 -1", timeout=30))
    after = await agent_apart.info()
    assert (after.pid, agent_apart.restarts) == (before.pid, 0)  # the same server, never restarted
    assert after.uptime_s >= before.uptime_s
    assert "still" in (await sh(agent_apart, "echo still")).content
    assert app.poll() is None


async def test_by_default_the_agent_is_the_workspace_owner_when_the_app_is_root(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    if os.getuid() != 0:
        pytest.skip("the default for a root app; others run the agent as themselves")
    workspace = tmp_path / "owned"
    workspace.mkdir()
    (workspace / "theirs.txt").write_text("old\n")
    for path in (workspace, workspace / "theirs.txt"):
        os.chown(path, 1000, 1000)
    runtime = await make_runtime(workspace=workspace)
    server = (await runtime.info()).pid
    obs = await sh(
        runtime,
        f"id -u; echo new > theirs.txt && echo mine > made.txt; kill -9 {server}; echo kill=$?",
    )
    assert obs.content.split()[0] == "1000" and "kill=1" in obs.content, obs.content
    assert runtime.warning is None
    assert (workspace / "made.txt").stat().st_uid == 1000
    assert (workspace / "theirs.txt").read_text() == "new\n"


async def test_user_id_0_runs_the_agent_as_root_and_says_so(
    make_runtime: MakeRuntime, docker_api: Any
) -> None:
    """The control: as root in the container, the same agent can signal the server."""
    runtime = await make_runtime(user_id=0)
    assert runtime.warning is not None and "SANDBOX_USER_ID" in runtime.warning
    container = docker_api.containers.get(runtime.container_name)
    assert b"WARNING: the agent runs as root" in container.logs()
    server = (await runtime.info()).pid
    obs = await sh(runtime, f"id -u; kill -0 {server}; echo may-signal=$?")
    assert obs.content.split()[0] == "0" and "may-signal=0" in obs.content, obs.content
    await runtime.execute(CmdRunAction(command=f"kill -9 {server}", timeout=30))
    await runtime.info()
    assert runtime.restarts == 1  # the server died and was replaced


async def test_a_root_app_on_a_root_owned_workspace_runs_a_non_root_agent(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    """The workspace reaches it through an idmapped mount: its files are root's on the host."""
    if os.getuid() != 0:
        pytest.skip("the default for a root app; others run the agent as themselves")
    workspace = tmp_path / "roots"
    workspace.mkdir()
    (workspace / "old.txt").write_text("old\n")
    runtime = await make_runtime(workspace=workspace)
    assert runtime.warning is None
    obs = await sh(runtime, "id -u; echo more >> old.txt && echo new > new.txt; cat /etc/shadow")
    assert obs.content.split()[0] not in ("0", "") and "Permission denied" in obs.content
    assert (workspace / "new.txt").stat().st_uid == 0
    assert (workspace / "old.txt").read_text() == "old\nmore\n"
    # None of this process's left on the host (another worker's test may hold one meanwhile).
    assert f"workbench-idmap-{os.getpid()}-" not in mounts()
    git = (
        "git init -q && git add -A && git -c user.name=a -c user.email=a@b commit -qm x && "
        "git checkout -q -b b && git stash list && echo git-ok"
    )
    assert (await sh(runtime, git)).content.strip().endswith("git-ok")
    assert (workspace / ".git" / "HEAD").stat().st_uid == 0


def mounts() -> str:
    """This process's mount table."""
    return Path("/proc/self/mountinfo").read_text()
