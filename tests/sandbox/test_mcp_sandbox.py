"""MCP servers started by the sandbox server, inside the sandbox: a real server written with the
SDK's `MCPServer` (tests/mcp_servers/demo_server.py), over stdio and streamable HTTP, on the
local runtime (bubblewrap where it works) and the Docker runtime."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest
from docker_support import MakeRuntime, docker_api, make_runtime, sandbox_image
from waiting import wait_until

from sandbox import confine
from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    McpBind,
    McpCallAction,
    McpCallObservation,
    McpListAction,
    McpListObservation,
    McpServerSpec,
)
from sandbox.runtimes.base import Runtime
from sandbox.runtimes.local import LocalRuntime

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
SECRET = "mcp-secret-" + os.urandom(6).hex()
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def demo_spec(python: str, script: str) -> McpServerSpec:
    return McpServerSpec(command=[python, script], env={"DEMO_TOKEN": SECRET})


async def list_servers(runtime: Runtime, **specs: McpServerSpec) -> McpListObservation:
    obs = await runtime.execute(McpListAction(servers=specs))
    assert isinstance(obs, McpListObservation), obs
    return obs


async def call(runtime: Runtime, tool: str, **arguments: object) -> McpCallObservation:
    obs = await runtime.execute(McpCallAction(server="demo", tool=tool, arguments=arguments))
    assert isinstance(obs, McpCallObservation), obs
    return obs


async def sh(runtime: Runtime, command: str) -> str:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs.content.strip()


def demo_processes() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if not cmdline or "--http" in cmdline or Path(cmdline[0]).name == "bwrap":
            continue  # (the nested bubblewrap that starts it names it too)
        if any(part.endswith("demo_server.py") for part in cmdline):
            found.append(proc)
    return found


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = LocalRuntime(workspace, disable=["browser", "jupyter"], warm_up=False)
    await runtime.start()
    yield runtime
    await runtime.close()


async def test_tools_listed_called_and_a_raising_tool_is_an_error_result(
    local: LocalRuntime,
) -> None:
    started = await list_servers(
        local,
        demo=demo_spec(sys.executable, str(DEMO)),
        broken=McpServerSpec(command=["/nonexistent/mcp-server"]),
    )
    by_name = {state.name: state for state in started.servers}
    tools = {tool.name: tool for tool in by_name["demo"].tools}
    assert {"add", "boom", "whoami", "picture", "die"} <= set(tools)
    assert tools["add"].input_schema["properties"]["a"]["type"] == "integer"
    assert by_name["demo"].error == ""
    assert "did not start" in by_name["broken"].error and "/nonexistent" in by_name["broken"].error

    assert (await call(local, "add", a=2, b=3)).content == "5"
    failed = await call(local, "boom", why="on purpose")
    assert failed.error and not failed.server_failed
    assert (await call(local, "add", a=1, b=1)).content == "2"  # the server goes on

    picture = await call(local, "picture")
    assert picture.content == "a red square" and len(picture.images) == 1
    assert (await local.download(picture.images[0])).startswith(PNG_MAGIC)

    # A huge answer is cut in the sandbox, as shell output is (50 MB once went whole into the
    # log and stdout); a picture with no data is not saved as an empty file.
    flood = await call(local, "flood", megabytes=20)
    assert len(flood.content) < 110_000 and flood.content.startswith("line 000000000")
    assert flood.content.rstrip().endswith(f"line {20 * 1024 * 1024 // 15 - 1:09d}")
    assert flood.images == []


async def test_the_server_runs_inside_the_sandbox_apart_from_the_agent(
    local: LocalRuntime,
) -> None:
    await list_servers(local, demo=demo_spec(sys.executable, str(DEMO)))
    seen = json.loads((await call(local, "whoami")).content)
    assert seen["cwd"] == "/"  # not the workspace, where the agent could plant modules
    assert seen["session"] == local.session_id  # so a killed server's leftovers are found
    (proc,) = [p for p in demo_processes() if local.pid in {a.pid for a in p.parents()}]
    assert proc.cwd() == "/"
    # Its environment has its own variable; the agent's shell has not, and (isolated) cannot
    # see the server's process at all.
    assert (await call(local, "secret_seen", name="DEMO_TOKEN")).content == SECRET
    assert await sh(local, 'echo "[${DEMO_TOKEN:-}]"') == "[]"
    if local.isolation == "bwrap":
        mine = os.readlink("/proc/self/ns/pid")
        shell = await sh(local, "readlink /proc/self/ns/pid")
        assert seen["pidns"] not in (mine, shell)
        hunt = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c mcp-secret"
        assert await sh(local, hunt) == "0"
    await local.close()
    assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    if local.isolation != "bwrap":  # a skip fails under WORKBENCH_TEST_NO_SKIPS (scripts/test)
        pytest.skip("bubblewrap does not work here: pid namespace and environ checks not run")


async def test_a_server_that_dies_is_reported_once_and_forgotten(local: LocalRuntime) -> None:
    await list_servers(local, demo=demo_spec(sys.executable, str(DEMO)))
    died = await call(local, "die")
    assert died.error and "stopped" in died.server_failed
    assert "dying on request" in died.server_failed  # the end of its stderr
    again = await call(local, "add", a=1, b=2)
    assert again.error and "not running" in again.content
    # Listing again starts it afresh.
    restarted = await list_servers(local, demo=demo_spec(sys.executable, str(DEMO)))
    assert restarted.servers[0].tools
    assert (await call(local, "add", a=1, b=2)).content == "3"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def listening() -> bool:
        assert proc.poll() is None, "the streamable-HTTP demo server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    try:
        wait_until(listening, 30, "the streamable-HTTP demo server to listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


async def test_a_streamable_http_server_is_reached_from_the_sandbox(
    local: LocalRuntime, http_server: str
) -> None:
    started = await list_servers(
        local, demo=McpServerSpec(url=http_server, headers={"X-Demo": "1"})
    )
    assert "add" in {tool.name for tool in started.servers[0].tools}, started
    assert (await call(local, "add", a=20, b=22)).content == "42"


@pytest.mark.docker
async def test_the_server_runs_in_the_container_as_the_agent(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(DEMO, workspace / "demo_server.py")
    runtime = await make_runtime(workspace=workspace, user_id=1234)
    python = "/opt/sandbox/bin/python"
    started = await list_servers(runtime, demo=demo_spec(python, "/workspace/demo_server.py"))
    assert started.servers[0].error == "", started.servers[0].error
    assert (await call(runtime, "add", a=2, b=3)).content == "5"
    assert (await call(runtime, "boom", why="x")).error
    seen = json.loads((await call(runtime, "whoami")).content)
    server = (await runtime.info()).pid
    assert seen["uid"] == 1234 and seen["cwd"] == "/"
    assert seen["ppid"] == server  # started by the sandbox server, in the container
    assert await sh(runtime, 'echo "[${DEMO_TOKEN:-}]"') == "[]"
    picture = await call(runtime, "picture")
    assert (await runtime.download(picture.images[0])).startswith(PNG_MAGIC)


async def test_a_killed_sandbox_server_leaves_no_mcp_server_behind(tmp_path: Path) -> None:
    """The SDK starts the server in a session of its own; with no isolation nothing else
    ties it to the sandbox than the session marker the runtime sweeps by."""
    (tmp_path / "ws").mkdir()
    runtime = LocalRuntime(tmp_path / "ws", isolation="none", disable=["browser", "jupyter"])
    await runtime.start()
    try:
        await list_servers(runtime, demo=demo_spec(sys.executable, str(DEMO)))
        assert runtime.pid is not None
        (proc,) = [p for p in demo_processes() if runtime.pid in {a.pid for a in p.parents()}]
        os.kill(runtime.pid, 9)
    finally:
        await runtime.close()
    assert not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE


HANG = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
"""A server that never answers and ignores SIGTERM: stopping it takes the longest."""


@pytest.mark.timeout(120)
async def test_a_server_that_never_answers_costs_only_itself(local: LocalRuntime) -> None:
    """One hung server (it never answers `initialize`) once made every server fail to start:
    the wait for all of them ended before the hung one was stopped."""
    hung = McpServerSpec(command=[sys.executable, "-c", HANG], start_timeout=1)
    started = await list_servers(local, demo=demo_spec(sys.executable, str(DEMO)), hung=hung)
    states = {s.name: s for s in started.servers}
    assert not states["demo"].error and states["demo"].tools
    assert "did not start" in (states["hung"].error or "")
    assert (await call(local, "add", a=2, b=3)).content == "5"


async def test_staged_host_paths_and_a_cache_are_shown_to_that_server_alone(
    tmp_path: Path,
) -> None:
    """The local runtime stages host paths for MCP servers; the server's spec binds them back
    at their host paths (read-only unless writable) and gives it a cache: the agent sees none."""
    home = tmp_path / "home" / "me"
    server_dir, data = home / "srv", home / "data"
    server_dir.mkdir(parents=True)
    data.mkdir()
    shutil.copy(DEMO, server_dir / "demo_server.py")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    mounts = [(str(server_dir), False), (str(data), True)]
    runtime = LocalRuntime(
        workspace, disable=["browser", "jupyter"], warm_up=False, isolation="bwrap",
        mcp_mounts=mounts,
    )  # fmt: skip
    await runtime.start()
    try:
        binds = [
            McpBind(source=confine.stage_name(path, writable), target=path, writable=writable)
            for path, writable in mounts
        ]
        spec = McpServerSpec(
            command=[sys.executable, str(server_dir / "demo_server.py")],
            binds=binds,
            host_paths=[str(server_dir), str(home / "elsewhere")],
            cache=True,
        )
        (home / "elsewhere").mkdir()
        (state,) = (await list_servers(runtime, demo=spec)).servers
        assert state.error == "" and "write_text" in {tool.name for tool in state.tools}
        # Named on the host, not shown: said, with the fix; what it was shown is not named.
        assert str(home / "elsewhere") in state.notice and "read_only" in state.notice
        assert str(server_dir) not in state.notice

        assert (
            await call(runtime, "write_text", path=str(data / "out"), text="hi")
        ).content == "ok"
        assert (data / "out").read_text() == "hi"
        refused = await call(runtime, "write_text", path=str(server_dir / "x"), text="no")
        assert "Read-only file system" in refused.content
        cache = (await call(runtime, "secret_seen", name="UV_CACHE_DIR")).content
        assert cache == f"{confine.MCP_STAGE}/cache/demo/uv"
        assert (await call(runtime, "write_text", path=f"{cache}-x", text="c")).content == "ok"

        # The agent's shell sees neither the staged paths, nor the cache, nor the folders.
        seen = await sh(
            runtime,
            f"ls -A {confine.MCP_STAGE} | wc -l; ls -A {runtime._tmp / 'mcp-cache'} | wc -l; "
            f"test -e {server_dir}/demo_server.py && echo SEEN; test -e {data} && echo SEEN; true",
        )
        assert seen.splitlines()[:2] == ["0", "0"] and "SEEN" not in seen, seen
    finally:
        await runtime.close()
