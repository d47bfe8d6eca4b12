"""A host not on the network allowlist is asked about in the TUI while the connection waits:
scripted LLM server, real local runtime (bwrap), the app's proxy, and a real HTTP server on
this machine standing for hosts (`localhost` allowed; `127.0.0.1` and this machine's address
not). "For this session" lets the same host through again unasked; "always" saves `net:HOST`
to the person's config file."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import is_showing, waiter
from textual.widgets import Static
from tui_support import controller_events, scripted_config

from sandbox.runtimes.bwrap import bwrap_available
from workbench.config.schema import Config
from workbench.events import NetworkEvent, ObservationEvent
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.cells import cell_for_event
from workbench.tui.screens.net_ask import NetAskScreen
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")

_until = waiter(30)


def _script(urls: list[str]) -> dict[str, Any]:
    from net_support import fetch

    steps: list[dict[str, Any]] = []
    for url in urls:
        args = {"command": fetch(url), "security_risk": "LOW"}
        steps.append({"tool_calls": [{"name": "execute_bash", "arguments": args}]})
    steps.append({"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]})
    return {"steps": steps, "default": {"text": "nothing more"}}


def _load(tmp_path: Path, base_url: str) -> Config:
    overrides = {
        "sandbox.local.isolation": "bwrap",
        "sandbox.network": "allowlist",
        "sandbox.network_allow": ["net:localhost"],
        "security.confirmation": "never",
    }
    return scripted_config(tmp_path, base_url, overrides)


def _events(app: WorkbenchApp) -> list[Any]:
    return controller_events(app)


@pytest.mark.timeout(120)
async def test_an_unlisted_host_is_asked_about_and_the_answer_holds(tmp_path: Path) -> None:
    from net_support import MARKER, host_address, outside_server

    (tmp_path / "cfg").mkdir()
    (tmp_path / "ws").mkdir()
    with outside_server() as port:
        address = host_address()
        urls = [f"http://127.0.0.1:{port}/{n}" for n in ("one", "two")]
        urls.append(f"http://{address}:{port}/three")
        with ScriptedLLMServer(_script(urls)) as server:
            config = _load(tmp_path, server.base_url)
            backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
            app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
            async with app.run_test(size=(110, 32)) as pilot:
                status = app.query_one(StatusBar)
                await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
                app.query_one(PromptInput).focus()
                await pilot.press(*"go", "enter")
                await _until(pilot, lambda: is_showing(app, NetAskScreen), "a question")
                text = str(app.screen.query_one("#net-ask-text", Static).render())
                assert f"127.0.0.1:{port}" in text and "execute_bash" in text
                assert f"http://127.0.0.1:{port}/one" in text  # the command that asked
                await pilot.press("s")  # for this session: /two goes through unasked
                await _until(pilot, lambda: is_showing(app, NetAskScreen), "the next")
                text = str(app.screen.query_one("#net-ask-text", Static).render())
                assert address in text and "127.0.0.1" not in text
                await pilot.press("a")
                await _until(pilot, lambda: status.data.state == "finished", "the finish")
                events = _events(app)
                await app.action_quit()
        await asyncio.sleep(0)
    outputs = [e.observation.content for e in events if isinstance(e, ObservationEvent)]
    for name in ("one", "two", "three"):
        assert any(f"{MARKER} /{name}" in out for out in outputs), (name, outputs)
    network = [(e.host, e.allowed, e.asked) for e in events if isinstance(e, NetworkEvent)]
    local = [("127.0.0.1", True, True), ("127.0.0.1", True, False)]
    assert network == [*local, (address, True, True)]
    assert f'"net:{address}"' in (tmp_path / "cfg" / "config.toml").read_text()
    # The conversation shows the hosts asked about (not those a rule let through).
    shown = [c.title for e in events if (c := cell_for_event(e)) and c.title.startswith("network")]
    assert shown == [
        f"network 127.0.0.1:{port} reached · allowed for this session by the person",
        f"network {address}:{port} reached · always allowed by the person (net:{address})",
    ]


@pytest.mark.timeout(120)
async def test_a_question_still_open_when_the_run_ends_is_withdrawn(tmp_path: Path) -> None:
    """Found in the user trial: a command left in the background asked about a host, the run
    finished, and the question stayed on screen with nobody waiting for it."""
    from net_support import fetch, outside_server

    (tmp_path / "cfg").mkdir()
    (tmp_path / "ws").mkdir()
    with outside_server() as port:
        command = f"({fetch(f'http://127.0.0.1:{port}/late')}) > /dev/null 2>&1 &"
        background = {"command": command, "security_risk": "LOW"}
        script = {
            "steps": [
                {"tool_calls": [{"name": "execute_bash", "arguments": background}]},
                {  # the question is up before the run ends
                    "tool_calls": [{"name": "think", "arguments": {"thought": "wait"}}],
                    "held": True,
                },
                {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]},
            ],
            "default": {"text": "nothing more"},
        }
        with ScriptedLLMServer(script) as server:
            config = _load(tmp_path, server.base_url)
            backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
            app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
            async with app.run_test(size=(110, 32)) as pilot:
                status = app.query_one(StatusBar)
                await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
                app.query_one(PromptInput).focus()
                await pilot.press(*"go", "enter")
                await _until(pilot, lambda: is_showing(app, NetAskScreen), "a question")
                server.release()
                await _until(pilot, lambda: status.data.state == "finished", "the finish")
                await _until(
                    pilot, lambda: not isinstance(app.screen, NetAskScreen), "the question gone"
                )
                await _until(
                    pilot,
                    lambda: any(isinstance(e, NetworkEvent) for e in _events(app)),
                    "the refusal logged",
                )
                events = _events(app)
                await app.action_quit()
        await asyncio.sleep(0)
    (refused,) = [e for e in events if isinstance(e, NetworkEvent)]
    assert not refused.allowed and "run ended before the person answered" in refused.reason
