""" "Always allow" at every risk level, through the TUI: scripted LLM server, real local runtime.

It is offered for LOW, MEDIUM and HIGH actions of no kind that must always ask (a signal); for
one that must (publishing) a says why no rule is offered. The rule proposed is the program and
its subcommand with a trailing `*` (`run:pip install *`), a rule edited wrong says which part of
the action it misses, and "this session only" applies a rule without saving it anywhere.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import is_showing, waiter
from textual.widgets import RadioButton, Static, TextArea
from tui_support import controller_events

from workbench.config.load import load_config
from workbench.events import ConfirmationDecisionEvent, ConfirmationRequestEvent
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.allow_rule import AllowRuleScreen
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar

_until = waiter(30)


def _bash(command: str) -> dict[str, Any]:
    call = {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
    return {"tool_calls": [call]}


def _script(*commands: str) -> dict[str, Any]:
    done = {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]}
    return {"steps": [*map(_bash, commands), done], "default": {"text": "nothing more"}}


@asynccontextmanager
async def _session(
    tmp_path: Path, script: dict[str, Any], threshold: str
) -> AsyncIterator[tuple[WorkbenchApp, Any]]:
    """The app on a real backend, the task sent, waiting for its first confirmation."""
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "ws").mkdir(exist_ok=True)
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
        overrides = {
            "sandbox.workspace": str(tmp_path / "ws"),
            "security.risk_threshold": threshold,
        }
        config = load_config(env=env, overrides=overrides)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
        async with app.run_test(size=(110, 34)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
            app.query_one(PromptInput).focus()
            await pilot.press(*"go", "enter")
            yield app, pilot
            await app.action_quit()


def _events(app: WorkbenchApp) -> list[Any]:
    return controller_events(app)


def _requests(app: WorkbenchApp) -> list[ConfirmationRequestEvent]:
    return [e for e in _events(app) if isinstance(e, ConfirmationRequestEvent)]


def _hint(panel: ConfirmPanel) -> str:
    return str(panel.query_one("#confirm-keys", Static).render())


def _notes(app: WorkbenchApp) -> list[str]:
    return [str(note.message) for note in app._notifications]


async def _asked(app: WorkbenchApp, pilot: Any, count: int) -> ConfirmPanel:
    """Wait for the `count`th confirmation to be shown and reachable."""
    panel = app.query_one(ConfirmPanel)
    await _until(pilot, lambda: len(_requests(app)) >= count, f"confirmation {count}")
    cause = _requests(app)[count - 1].cause
    await _until(
        pilot,
        lambda: panel.request is not None and panel.request.cause == cause and panel.has_focus,
        f"the panel showing confirmation {count}",
    )
    # past the panel's arming delay: the next letter is an answer
    await _until(pilot, lambda: time.monotonic() >= panel._armed_at, "the panel to arm")
    return panel


@pytest.mark.timeout(150)
async def test_always_allow_is_offered_at_low_medium_and_high_of_no_always_ask_kind(
    tmp_path: Path,
) -> None:
    script = _script("echo hi", "pip install --dry-run requests 2>&1", "kill 999999")
    async with _session(tmp_path, script, "LOW") as (app, pilot):
        for count, (risk, rule) in enumerate(
            [("LOW", "run:echo *"), ("MEDIUM", "run:pip install *"), ("HIGH", "run:kill 999999")],
            start=1,
        ):
            panel = await _asked(app, pilot, count)
            assert panel.request is not None and panel.request.risk == risk
            assert "always allow" in _hint(panel), (risk, _hint(panel))
            await pilot.press("a")
            await _until(pilot, lambda: is_showing(app, AllowRuleScreen), f"rules {risk}")
            assert app.screen.query_one("#allow-rules", TextArea).text == rule
            await pilot.press("escape")
            await _until(pilot, lambda: app.query_one(ConfirmPanel).has_focus, "the panel")
            await pilot.press("n")
        status = app.query_one(StatusBar)
        await _until(pilot, lambda: status.data.state == "finished", "the finish")


@pytest.mark.timeout(120)
async def test_an_always_ask_kind_offers_no_rule_and_pressing_a_says_why(tmp_path: Path) -> None:
    async with _session(tmp_path, _script("git push origin main"), "HIGH") as (app, pilot):
        panel = await _asked(app, pilot, 1)
        assert panel.request is not None and panel.request.risk == "HIGH"
        assert "always allow" not in _hint(panel)
        await pilot.press("a")
        why = "actions that publish or upload are asked about every time (publishes with git push)"
        await _until(pilot, lambda: any(why in note for note in _notes(app)), "why no rule")
        assert not isinstance(app.screen, AllowRuleScreen) and panel.request is not None
        await pilot.press("n")
        status = app.query_one(StatusBar)
        await _until(pilot, lambda: status.data.state == "finished", "the finish")


@pytest.mark.timeout(120)
async def test_the_proposed_rule_is_program_and_subcommand_and_a_bad_edit_says_which_part(
    tmp_path: Path,
) -> None:
    script = _script("pip install --dry-run requests 2>&1")
    async with _session(tmp_path, script, "MEDIUM") as (app, pilot):
        panel = await _asked(app, pilot, 1)
        await pilot.press("a")
        await _until(pilot, lambda: is_showing(app, AllowRuleScreen), "the rules")
        screen = app.screen
        rules = screen.query_one("#allow-rules", TextArea)
        assert rules.text == "run:pip install *"
        rules.load_text("run:pip instal *")
        await pilot.press("ctrl+s")
        errors = screen.query_one("#allow-errors", Static)
        await _until(pilot, lambda: "instal" in str(errors.render()), "the error")
        text = str(errors.render())
        assert "these rules do not match the action being approved" in text
        assert "'run:pip instal *' stops matching at word 2: 'instal' is not 'install'" in text
        assert app.screen is screen
        await pilot.press("escape")
        await _until(pilot, lambda: panel.has_focus, "back to the panel")
        await pilot.press("n")


@pytest.mark.timeout(120)
async def test_allow_for_this_session_applies_the_rule_and_saves_it_nowhere(
    tmp_path: Path,
) -> None:
    async with _session(tmp_path, _script("echo one", "echo two"), "LOW") as (app, pilot):
        await _asked(app, pilot, 1)
        await pilot.press("a")
        await _until(pilot, lambda: is_showing(app, AllowRuleScreen), "the rules")
        screen = app.screen
        session_only = list(screen.query(RadioButton))[-1]
        assert "this session only" in str(session_only.label)
        session_only.value = True
        await pilot.pause()
        await pilot.press("ctrl+s")
        status = app.query_one(StatusBar)
        await _until(pilot, lambda: status.data.state == "finished", "the finish")
        assert len(_requests(app)) == 1  # `echo two` ran without asking
        decisions = [e for e in _events(app) if isinstance(e, ConfirmationDecisionEvent)]
        # Approved by the person's choice, then by the rule it made.
        assert [(d.approved, d.rule) for d in decisions] == [(True, "allow:run:echo *")] * 2
    assert not (tmp_path / "cfg" / "config.toml").exists()
    assert not (tmp_path / "ws" / ".workbench" / "config.toml").exists()
