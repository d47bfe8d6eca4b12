""" "Always allow" through the TUI: scripted LLM server, real local runtime and bash.

The person presses a on a confirmation, sees the rule proposed for it, tries a rule that is too
broad (refused, with why), saves the general one to the project's config file (its comments
kept), and the next action like it runs without asking, in this session and the next. An
action that must always be asked about (publishing) is offered no rule at all.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import holds, is_showing, waiter
from textual.widgets import Static, TextArea
from tui_support import controller_events, scripted_config

from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    CmdRunAction,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
)
from workbench.security.policy import check
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.allow_rule import AllowRuleScreen
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar


def _bash(command: str) -> dict[str, Any]:
    call = {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
    return {"tool_calls": [call]}


SCRIPT = {
    "steps": [
        _bash("git status --short"),
        _bash("git status"),
        _bash("git push origin main"),
        {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]},
    ],
    "default": {"text": "nothing more"},
}
PROJECT_TEXT = "# the team's rules\n[security]\n# ask before anything else\nallow = []\n"


def _load(tmp_path: Path, base_url: str) -> Config:
    return scripted_config(tmp_path, base_url, {"security.confirmation": "always"})


_until = waiter(30)


def _events(app: WorkbenchApp) -> list[Any]:
    return controller_events(app)


@pytest.mark.timeout(120)
async def test_always_allow_saves_a_general_rule_to_the_project(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    project_file = tmp_path / "ws" / ".workbench" / "config.toml"
    project_file.parent.mkdir(parents=True)
    project_file.write_text(PROJECT_TEXT)
    with ScriptedLLMServer(SCRIPT) as server:
        config = _load(tmp_path, server.base_url)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
        async with app.run_test(size=(100, 32)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
            app.query_one(PromptInput).focus()
            await pilot.press(*"go", "enter")
            panel = app.query_one(ConfirmPanel)
            await _until(pilot, lambda: panel.request is not None, "a confirmation")
            await pilot.press("a")
            await _until(pilot, lambda: is_showing(app, AllowRuleScreen), "the rules")
            screen = app.screen
            assert isinstance(screen, AllowRuleScreen)
            rules = screen.query_one("#allow-rules", TextArea)
            assert rules.text == "run:git status *"
            assert screen.offer.targets[0] == ("this project", project_file)
            # Too broad: refused with why, and the screen stays.
            rules.load_text("run:*")
            await pilot.press("ctrl+s")
            errors = str(screen.query_one("#allow-errors", Static).render())
            assert "would allow every run action" in errors and app.screen is screen
            rules.load_text("run:git status*")
            await pilot.press("ctrl+s")
            await _until(pilot, lambda: not isinstance(app.screen, AllowRuleScreen), "saving")
            # The second `git status` runs without asking; `git push` is offered no rule.
            await _until(pilot, lambda: len(_requests(app)) == 2, "the git push confirmation")
            await _until(pilot, lambda: panel.request is not None, "the panel")
            await pilot.press("a")
            await holds(
                pilot,
                lambda: not isinstance(app.screen, AllowRuleScreen) and panel.request is not None,
                0.2,
                "no rule offered for git push",
            )
            await pilot.press("n")
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            decisions = [
                (d.approved, d.rule)
                for d in _events(app)
                if isinstance(d, ConfirmationDecisionEvent)
            ]
            allowed = (True, "allow:run:git status*")
            assert decisions == [allowed, allowed, (False, "user")]  # asked twice, not three times
            assert len(_requests(app)) == 2
            ran = [e.action.command for e in _events(app) if _is_run(e)]
            assert ran[:2] == ["git status --short", "git status"]
            await app.action_quit()
        await asyncio.sleep(0)
        # Saved to the project, its comments kept; the next session honours it.
        text = project_file.read_text()
        assert "# the team's rules" in text and "# ask before anything else" in text
        assert '"run:git status*"' in text
        assert not (tmp_path / "cfg" / "config.toml").exists()  # not the person's own file
        later = _load(tmp_path, server.base_url)
        verdict = check(CmdRunAction(command="git status -s"), None, later.security, "/ws")
        assert not verdict.needs_confirmation and verdict.rule == "allow:run:git status*"


def _requests(app: WorkbenchApp) -> list[ConfirmationRequestEvent]:
    return [e for e in _events(app) if isinstance(e, ConfirmationRequestEvent)]


def _is_run(event: Any) -> bool:
    return isinstance(event, ActionEvent) and isinstance(event.action, CmdRunAction)
