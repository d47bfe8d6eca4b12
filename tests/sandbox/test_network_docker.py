"""`network = "off" | "allowlist" | "on"` on the Docker runtime: a real container, real curl,
a real HTTP server on this machine standing for the outside (`net_support.py`). Under
"allowlist" and "off" the container is on an internal network: no route out; under "allowlist"
its one way out is the app's proxy, bound in as a unix socket."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from docker_support import BASE_IMAGE, MakeRuntime, docker_api, make_runtime, sandbox_image
from headless_harness import bash, cli_env, finish, json_lines, run_cli
from net_support import MARKER, allow_localhost, direct, fetch, outside_server

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.docker import DockerRuntime
from workbench.testing.llm_server import ScriptedLLMServer

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker

AWAY = (
    "python3 -c 'import socket\n"
    'try:\n  socket.create_connection(("1.1.1.1", 80), timeout=3); print("AWAY-CONNECTED")\n'
    'except OSError as e: print("AWAY-FAILED", e)\''
)
"""A connection to another machine, around any proxy."""


@pytest.fixture
def port() -> Iterator[int]:
    with outside_server() as port:
        yield port


async def _sh(runtime: DockerRuntime, command: str) -> str:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs.content


async def test_allowlist_in_docker_reaches_allowed_hosts_through_the_proxy_only(
    make_runtime: MakeRuntime, port: int
) -> None:
    runtime = await make_runtime(network="allowlist")
    assert runtime.net_proxy is not None
    runtime.net_proxy.decide = allow_localhost
    allowed = await _sh(runtime, fetch(f"http://localhost:{port}/a"))
    assert f"{MARKER} /a" in allowed and "code=200" in allowed
    refused = await _sh(runtime, fetch(f"http://127.0.0.1:{port}/b"))
    assert "code=403" in refused and "host 127.0.0.1 is not on the network allowlist" in refused
    tunnel = await _sh(runtime, fetch(f"https://127.0.0.1:{port}/"))
    assert "403" in tunnel and MARKER not in tunnel
    away = await _sh(runtime, AWAY + "; curl -sS --noproxy '*' -m 5 http://1.1.1.1/ 2>&1; echo")
    assert "AWAY-FAILED" in away and "AWAY-CONNECTED" not in away, away


async def test_off_in_docker_reaches_nothing_and_on_reaches_every_host(
    make_runtime: MakeRuntime, port: int
) -> None:
    off = await make_runtime(network="off")
    out = await _sh(off, fetch(f"http://localhost:{port}/") + "; " + AWAY)
    assert MARKER not in out and "AWAY-FAILED" in out, out
    on = await make_runtime(network="on", workspace=off.workspace + "-on")
    assert on.net_proxy is None
    assert "DIRECT-CONNECTED" in await _sh(on, direct(port))  # this machine, by its address


def test_headless_on_docker_refuses_an_unlisted_host_and_tells_the_agent_why(
    sandbox_image: str, tmp_path: Path
) -> None:
    """The real CLI, headless, `--on-confirm reject`, on the Docker runtime."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with outside_server() as port:
        line = fetch(f"http://localhost:{port}/ok") + "; " + fetch(f"http://127.0.0.1:{port}/no")
        script = [bash(line, call_id="get"), finish()]
        with ScriptedLLMServer(script) as server:
            env = cli_env(
                tmp_path,
                server.base_url,
                RUNTIME="docker",
                WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE=BASE_IMAGE,
                WORKBENCH_SANDBOX_NETWORK="allowlist",
                WORKBENCH_SANDBOX_NETWORK_ALLOW="net:localhost",
            )
            args = ["--headless", "--json", "--on-confirm", "reject", "-t", "get"]
            proc = run_cli(args, env, workspace, timeout=300)
            told = next(
                m["content"]
                for m in server.requests[1]["messages"]
                if m.get("tool_call_id") == "get"
            )
    assert proc.returncode == 0, proc.stderr
    assert f"{MARKER} /ok" in told and "code=403" in told and f"{MARKER} /no" not in told
    assert "The sandbox's network proxy refused: 127.0.0.1 (host 127.0.0.1 is not" in told
    assert json_lines(proc.stdout)[-1]["status"] == "success"
