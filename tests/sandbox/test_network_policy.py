"""`network = "off" | "allowlist" | "on"` on the local runtime: real bwrap, real curl, a real
HTTP server on this machine standing for the outside (`net_support.py`). Under "allowlist" the
one way out is the app's proxy, which asks its policy about each host; nothing goes around it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from net_support import MARKER, allow_localhost, direct, fetch, outside_server

from sandbox.net_proxy import NetVerdict
from sandbox.protocol import CmdOutputObservation, CmdRunAction, IPythonAction, IPythonObservation
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")


@pytest.fixture
def port() -> Iterator[int]:
    with outside_server() as port:
        yield port


async def _start(tmp_path: Path, network: str, jupyter: bool = False) -> LocalRuntime:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    disable = ["browser"] if jupyter else ["browser", "jupyter"]
    runtime = LocalRuntime(workspace, isolation="bwrap", network=network, disable=disable)
    if runtime.net_proxy is not None:
        runtime.net_proxy.decide = allow_localhost
    await runtime.start()
    return runtime


async def _sh(runtime: LocalRuntime, command: str) -> str:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs.content


async def test_allowlist_reaches_allowed_hosts_through_the_proxy_only(
    tmp_path: Path, port: int
) -> None:
    runtime = await _start(tmp_path, "allowlist", jupyter=True)
    seen: list[tuple[str, bool]] = []
    assert runtime.net_proxy is not None
    runtime.net_proxy.observe = lambda host, _port, verdict: seen.append((host, verdict.allowed))
    try:
        allowed = await _sh(runtime, fetch(f"http://localhost:{port}/a"))
        assert f"{MARKER} /a" in allowed and "code=200" in allowed
        refused = await _sh(runtime, fetch(f"http://127.0.0.1:{port}/b"))
        assert "code=403" in refused and MARKER not in refused
        assert "host 127.0.0.1 is not on the network allowlist" in refused
        assert "Ask the person to allow it" in refused
        # HTTPS goes through CONNECT: the refusal comes before any TLS.
        tunnel = await _sh(runtime, fetch(f"https://127.0.0.1:{port}/"))
        assert "403" in tunnel, tunnel
        around = await _sh(runtime, direct(port))
        assert MARKER not in around and "DIRECT-CONNECTED" not in around, around
        assert around.count("DIRECT-FAILED") == 2
        # The kernel is an agent process too: it shares the namespace and its one bridge.
        code = "import os, urllib.request as u\n"
        code += "os.environ['no_proxy'] = os.environ['NO_PROXY'] = ''\n"
        code += f"print(u.urlopen('http://localhost:{port}/k').read())"
        obs = await runtime.execute(IPythonAction(code=code))
        assert isinstance(obs, IPythonObservation) and f"{MARKER} /k" in obs.content, obs
        reached = [("localhost", True), ("127.0.0.1", False), ("127.0.0.1", False)]
        assert seen == [*reached, ("localhost", True)]
    finally:
        await runtime.close()


async def test_off_reaches_nothing_and_on_reaches_every_host(tmp_path: Path, port: int) -> None:
    off = await _start(tmp_path / "off", "off")
    try:
        assert off.net_proxy is None
        out = await _sh(off, fetch(f"http://localhost:{port}/") + "; " + direct(port))
        assert MARKER not in out and "DIRECT-CONNECTED" not in out, out
    finally:
        await off.close()
    on = await _start(tmp_path / "on", "on")
    try:
        for host in ("localhost", "127.0.0.1"):
            assert f"{MARKER} /{host}" in await _sh(on, fetch(f"http://{host}:{port}/{host}"))
        assert "DIRECT-CONNECTED" in await _sh(on, direct(port))
    finally:
        await on.close()


async def test_a_question_keeps_the_connection_waiting_until_answered(
    tmp_path: Path, port: int
) -> None:
    """The policy may take its time (a person answering): the client waits, then gets in."""
    runtime = await _start(tmp_path, "allowlist")
    asked, answered = asyncio.Event(), asyncio.Event()

    async def person(host: str, _port: int) -> NetVerdict:
        asked.set()
        await answered.wait()
        return NetVerdict(True, "allowed once by the person")

    assert runtime.net_proxy is not None
    runtime.net_proxy.decide = person
    try:
        command = asyncio.ensure_future(_sh(runtime, fetch(f"http://127.0.0.1:{port}/late")))
        await asyncio.wait_for(asked.wait(), 30)
        assert not command.done()
        answered.set()
        assert f"{MARKER} /late" in await asyncio.wait_for(command, 30)
    finally:
        await runtime.close()
