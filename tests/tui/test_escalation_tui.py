"""Escalation in the TUI: a command the agent asks to run outside the sandbox is put to the
person, saying so and why, with no "always allow"; a yes runs it on the host. Scripted LLM
server, real local runtime."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter
from textual.widgets import Static
from tui_support import controller_events

from workbench.config.load import load_config
from workbench.events import HostRunObservation, ObservationEvent
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.allow_rule import AllowRuleScreen
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar

_until = waiter(30)
MARK = "host-only-9d2b"
WHY = "the data file is only on my machine"


def _events(app: WorkbenchApp) -> list[Any]:
    return controller_events(app)


@pytest.mark.timeout(120)
async def test_the_panel_asks_saying_outside_the_sandbox_and_why_and_a_yes_runs_on_the_host(
    tmp_path: Path,
) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "ws").mkdir()
    (tmp_path / "host-only").mkdir()
    marker = tmp_path / "host-only" / "marker.txt"
    marker.write_text(MARK + "\n")
    args = {"command": f"cat {marker}", "escalate": True, "justification": WHY}
    args["security_risk"] = "LOW"
    script = {
        "steps": [
            {"tool_calls": [{"name": "execute_bash", "arguments": args}]},
            {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]},
        ],
        "default": {"text": "nothing more"},
    }
    with ScriptedLLMServer(script) as server:
        env = {
            "LLM_MODEL": "openai/test-model",
            "LLM_BASE_URL": server.base_url,
            "LLM_API_KEY": "test-key-123456",
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
        }
        # Every rule and policy that would let a command through unasked.
        overrides = {
            "sandbox.workspace": str(tmp_path / "ws"),
            "security.confirmation": "never",
            "security.allow": ["run:cat *"],
        }
        config = load_config(env=env, overrides=overrides)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
        async with app.run_test(size=(110, 34)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
            app.query_one(PromptInput).focus()
            await pilot.press(*"go", "enter")
            panel = app.query_one(ConfirmPanel)
            await _until(pilot, lambda: panel.request is not None and panel.has_focus, "asked")
            title = str(panel.query_one("#confirm-title", Static).render())
            assert "risk HIGH" in title and "runs OUTSIDE the sandbox, on the host" in title
            assert WHY in title
            keys = str(panel.query_one("#confirm-keys", Static).render())
            assert "always allow" not in keys
            await _until(pilot, lambda: time.monotonic() >= panel._armed_at, "the panel armed")
            await pilot.press("a")  # no rule may approve it: a says why
            notes = lambda: [str(n.message) for n in app._notifications]  # noqa: E731
            said = "actions that run outside the sandbox are asked about every time"
            await _until(pilot, lambda: any(said in n for n in notes()), "why no rule")
            assert not isinstance(app.screen, AllowRuleScreen)
            await pilot.press("y")
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            ran = [
                e.observation
                for e in _events(app)
                if isinstance(e, ObservationEvent) and isinstance(e.observation, HostRunObservation)
            ]
            assert len(ran) == 1 and MARK in ran[0].content and ran[0].exit_code == 0
            await app.action_quit()
