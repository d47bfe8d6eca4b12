"""The network allowlist in a real headless run: scripted model, real local sandbox (bwrap),
the app's proxy and policy, and a real HTTP server on this machine standing for two hosts
(`localhost` on the allowlist, `127.0.0.1` not). A refused host is refused with a reason the
agent reads in its next request, and the session log names each host and the action."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from headless_harness import bash, finish, make_config
from net_support import MARKER, fetch, outside_server

from sandbox.runtimes.bwrap import bwrap_available
from workbench.events import NetworkEvent
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")


async def test_headless_reject_refuses_an_unlisted_host_and_tells_the_agent_why(
    tmp_path: Path,
) -> None:
    from workbench.testing.llm_server import ScriptedLLMServer

    ws = tmp_path / "ws"
    ws.mkdir()
    out, err = io.StringIO(), io.StringIO()
    with outside_server() as port:
        line = fetch(f"http://localhost:{port}/ok") + "; " + fetch(f"http://127.0.0.1:{port}/no")
        script = [bash(line, call_id="get"), finish()]
        async with ScriptedLLMServer(script) as server:
            config = make_config(
                tmp_path,
                server.base_url,
                ws,
                security__headless_on_confirm="reject",
                sandbox__network="allowlist",
                sandbox__network_allow=["net:localhost"],
                sandbox__local__isolation="bwrap",
            )
            summary = await run_session(config, "go", HumanPrinter(out, err))
            second = server.requests[1]
    assert summary["status"] == "success", out.getvalue() + err.getvalue()
    told = next(m["content"] for m in second["messages"] if m.get("tool_call_id") == "get")
    assert f"{MARKER} /ok" in told  # the allowed host answered through the proxy
    assert "code=403" in told and f"{MARKER} /no" not in told
    assert (
        "The sandbox's network proxy refused: 127.0.0.1 (host 127.0.0.1 is not on the network "
        "allowlist and nobody could be asked (headless, --on-confirm reject))"
    ) in told
    assert "ask the person to allow it" in told
    events = read(Path(summary["log"])).events
    action = next(e for e in events if getattr(e, "tool_call_id", "") == "get")
    network = [e for e in events if isinstance(e, NetworkEvent)]
    assert [(e.host, e.allowed, e.cause) for e in network] == [
        ("localhost", True, action.id),
        ("127.0.0.1", False, action.id),
    ]
    assert network[0].rule == "net:localhost"
    assert "The sandbox's network proxy refused: 127.0.0.1" in out.getvalue()
