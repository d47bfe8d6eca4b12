"""Slash commands in the input box (issue 23, item 8): `/help` went to the model as a task.
Each command runs what its key runs; one that is no command is refused, with the closest, and
stays in the box; `//` or a leading space sends the text; typing `/` lists the commands."""

from __future__ import annotations

from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input
from tui_support import make_config

from workbench.testing.fake_backend import FakeBackend
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.screens.help import HelpScreen
from workbench.tui.screens.rules import RulesScreen
from workbench.tui.screens.sessions import SessionPicker
from workbench.tui.screens.settings import SettingsScreen
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.slash_popup import SlashPopup
from workbench.tui.widgets.status import StatusBar


def _app(tmp_path: Path) -> tuple[WorkbenchApp, FakeBackend]:
    backend = FakeBackend()
    config = make_config()
    config.session.dir = str(tmp_path / "sessions")
    app = create_app(
        config,
        backend,
        clock=lambda: 0.0,
        image_mode="halfcell",
        user_themes=tmp_path / "themes",
        config_path=tmp_path / "config.toml",
    )
    return app, backend


def _keys(text: str) -> list[str]:
    names = {" ": "space", "/": "slash", ".": "full_stop", "-": "minus"}
    return [names.get(char, char) for char in text]


async def _send(pilot: Pilot[int], text: str) -> None:
    """Put `text` in the input box (faster than typing it) and press enter."""
    prompt = pilot.app.query_one(PromptInput)
    prompt.load_text(text)
    prompt.move_cursor(prompt.document.end)
    await pilot.press("enter")


def _toasts(app: WorkbenchApp) -> list[str]:
    return [str(note.message) for note in app._notifications]


async def test_help_is_not_sent_and_lists_the_commands(tmp_path: Path) -> None:
    app, backend = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press(*_keys("/help"), "enter")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(str(group) for group in app.screen.groups)
        for name in ("/new", "/resume [ID]", "/diff", "/cost", "/quit", "//text"):
            assert name in shown, name
        assert "ctrl+n" in shown  # and the keys, as before
        await pilot.press("escape")
        assert backend.sent == []


async def test_no_command_is_refused_and_kept_and_the_escapes_send_text(tmp_path: Path) -> None:
    app, backend = _app(tmp_path)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.press(*_keys("/hlep me"), "enter")
        await pilot.pause()
        assert backend.sent == []
        assert any("No command /hlep" in t and "Did you mean /help?" in t for t in _toasts(app))
        assert prompt.text == "/hlep me"  # left to fix
        prompt.load_text("")
        await pilot.press(*_keys("//etc/hosts is empty"), "enter")
        await pilot.press(*_keys(" /help me"), "enter")
        await pilot.pause()
        assert backend.sent == ["/etc/hosts is empty", "/help me"]
        assert not isinstance(app.screen, HelpScreen)


async def test_commands_run_what_their_keys_run(tmp_path: Path) -> None:
    app, backend = _app(tmp_path)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        screens = (
            ("/rules", RulesScreen),
            ("/settings", SettingsScreen),
            ("/sessions", SessionPicker),
            ("/resume", SessionPicker),
        )
        for command, screen in screens:
            await _send(pilot, command)
            await pilot.pause()
            assert isinstance(app.screen, screen), command
            await pilot.press("escape")
            await pilot.pause()
        await _send(pilot, "/model openai/other")
        await pilot.pause()
        assert isinstance(app.screen, SettingsScreen)
        field = app.screen.query_one("#model", Input)
        assert field.value == "openai/other" and field.has_focus
        await pilot.press("escape")
        app.query_one(StatusBar).set(steps=3, prompt_tokens=1200, completion_tokens=34, cost=0.5)
        await _send(pilot, "/cost")
        await _send(pilot, "/condense")
        await _send(pilot, "/new")
        await _send(pilot, "/resume nosuch")
        await pilot.pause()
        assert "3 step(s) with openai/test-model: 1,200 prompt + 34 completion tokens" in (
            " ".join(_toasts(app))
        )
        assert any("/resume: " in t and "nosuch" in t for t in _toasts(app))
        assert [c for c in backend.calls if c != "start"] == ["condense_now", "new_session"]
        assert backend.sent == []
        await _send(pilot, "/quit")
        await pilot.pause()
    assert app.return_code == 0 and "close" in backend.calls


async def test_typing_a_slash_lists_the_commands_and_tab_completes(tmp_path: Path) -> None:
    app, backend = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        popup, prompt = app.query_one(SlashPopup), app.query_one(PromptInput)
        assert not popup.display
        await pilot.press("slash")
        await pilot.pause()
        assert popup.display and len(popup.matches) == 12 and prompt.has_focus
        await pilot.press("r", "e")
        await pilot.pause()
        assert [c.name for c in popup.matches] == ["resume", "rewind"]
        assert prompt.suggestion == "sume"  # greyed after the cursor
        await pilot.press("down", "tab")
        await pilot.pause()
        assert prompt.text == "/rewind" and [c.name for c in popup.matches] == ["rewind"]
        prompt.load_text("")
        await pilot.pause()
        assert not popup.display
        await pilot.press("slash", "c", "o", "s", "enter")  # the one listed runs
        await pilot.pause()
        assert backend.sent == [] and prompt.text == ""
