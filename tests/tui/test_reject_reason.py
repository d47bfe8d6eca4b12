"""Reject with a reason (issue 14, friction 5): r on the confirmation panel asks why; the
reason reaches the agent in the observation the model reads next, and the session records it
in the `confirmation_decision` event. Scripted LLM server, real local runtime and bash."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pilot_wait import is_showing, waiter
from textual.widgets import Input
from tui_support import scripted_config

from workbench.config.schema import Config
from workbench.events import ConfirmationDecisionEvent, ObservationEvent
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.reject import RejectReasonScreen
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar

REASON = "do not delete it, move it to ./trash instead"
SCRIPT = {
    "steps": [
        {
            "tool_calls": [
                {
                    "name": "execute_bash",
                    "arguments": {"command": "rm -rf ./junk", "security_risk": "LOW"},
                }
            ]
        },
        {"tool_calls": [{"name": "finish", "arguments": {"message": "ok, left it"}}]},
    ],
    "default": {"text": "nothing more"},
}


def _load(tmp_path: Path, base_url: str) -> Config:
    return scripted_config(tmp_path, base_url)


_until = waiter(30)


@pytest.mark.timeout(120)
async def test_a_rejection_carries_the_persons_reason_to_the_agent(tmp_path: Path) -> None:
    (tmp_path / "ws" / "junk").mkdir(parents=True)
    with ScriptedLLMServer(SCRIPT) as server:
        config = _load(tmp_path, server.base_url)
        backend = ControllerBackend(config)
        app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
        async with app.run_test(size=(100, 32)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
            app.query_one(PromptInput).focus()
            await pilot.press(*"tidy up", "enter")
            panel = app.query_one(ConfirmPanel)
            await _until(pilot, lambda: panel.request is not None, "a confirmation")
            await pilot.press("r")
            await _until(pilot, lambda: is_showing(app, RejectReasonScreen), "the reason")
            # Escape goes back to the panel with nothing answered; r again, then the reason.
            await pilot.press("escape")
            assert panel.request is not None and panel.has_focus
            await pilot.press("r")
            await _until(pilot, lambda: is_showing(app, RejectReasonScreen), "the reason")
            app.screen.query_one(Input).value = REASON
            await pilot.press("enter")
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            assert backend.controller is not None
            events = list(backend.controller.events)
            await app.action_quit()
        await asyncio.sleep(0)
    assert (tmp_path / "ws" / "junk").is_dir()  # not run
    (decision,) = [e for e in events if isinstance(e, ConfirmationDecisionEvent)]
    assert not decision.approved and decision.rule == "user" and REASON in decision.reason
    (observation,) = [e for e in events if isinstance(e, ObservationEvent)]
    assert REASON in observation.observation.content  # type: ignore[union-attr]
    # The model's next request carries it, in the tool's answer.
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert REASON in json.dumps(tool_messages[-1]["content"])
