"""Text from a session shows literally in the TUI: file names, the model's words and a damaged
recording's notes holding Textual markup (`[bold]`, `[/]`, `[@click=...]`) neither style the
screen, run an action, nor crash the app. Scripted LLM server, real local sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pilot_wait import is_showing, waiter
from test_replay_player import record_session
from test_rewind_here import FINISH, _app, _screen_text, bash
from tui_support import make_config

from workbench.config.load import load_config
from workbench.replay.recording import load_recording
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.replay import create_player
from workbench.tui.rerun import RerunView
from workbench.tui.screens.rewind import RewindScreen
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar

NAMES = ("[bold]x[/].txt", "[b]y[/b]", "[@click=app.quit]q[/]")
"""Paths (a closing tag holds a slash: each is a file in a folder with a bracket in its name)."""
_until = waiter(60)


@pytest.mark.timeout(180)
async def test_file_names_and_model_text_with_markup_show_literally(tmp_path: Path) -> None:
    make = " && ".join(f"mkdir -p '{name.split('/')[0]}' && echo x > '{name}'" for name in NAMES)
    said = {"tool_calls": [{"name": "finish", "arguments": {"message": "made [/] [red]it"}}]}
    with ScriptedLLMServer(
        {"steps": [bash("echo a > s.txt"), bash(make), said, FINISH], "default": {"text": "ok"}}
    ) as s:
        app = _app(tmp_path, s)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            app.query_one(PromptInput).focus()
            await pilot.press(*"go", "enter")
            await _until(pilot, lambda: status.data.state == "finished", "the run")
            assert all((tmp_path / "ws" / name).is_file() for name in NAMES)
            view = app.query_one(ConversationView)
            row = next(i for i, c in enumerate(view.cells) if "echo x" in c.title)
            assert view.cells[row].summary.endswith("files +3 ~0 -0")
            assert any("made [/] [red]it" in c.title + c.body for c in view.cells)
            view.focus()
            view.action_cursor_to(row)
            await pilot.press("enter")  # the step's diff, names and all
            shown = "\n".join(section.text for section in view.cells[row].more)
            assert all(name in shown for name in NAMES), shown
            await pilot.pause()
            first = next(i for i, c in enumerate(view.cells) if "s.txt" in c.title)
            view.action_cursor_to(first)  # before the names: rewinding there removes them
            await pilot.press("r")
            await _until(pilot, lambda: is_showing(app, RewindScreen), "the question")
            # The list sits in a scrolling box, mounted a moment after the screen.
            await _until(pilot, lambda: f"- {NAMES[-1]}" in _screen_text(app), "the names")
            listed = _screen_text(app)
            assert all(f"- {name}" in listed for name in NAMES), listed
            await pilot.press("y")
            gone = lambda: not any((tmp_path / "ws" / n).exists() for n in NAMES)  # noqa: E731
            await _until(pilot, gone, "the rewind")
            assert app.is_running and app.return_code is None  # `[@click=app.quit]` did not quit
            await app.action_quit()


async def test_a_recording_s_notes_show_literally(tmp_path: Path) -> None:
    """What a trajectory's skipped events are called (their ids, their kinds) is its own text."""
    trajectory = tmp_path / "trajectory.json"
    items = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "hi"}},
        {"id": "[/]", "x": 1},
        {"id": "[bold]", "action": "[@click=app.quit]x", "args": {}},
    ]
    trajectory.write_text(json.dumps(items))
    app = create_player(
        load_recording(trajectory),
        make_config(),
        autoplay=False,
        clock=lambda: 0.0,
        image_mode="halfcell",
        user_themes=tmp_path / "none",
    )
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        toasts = lambda: list(app.screen.query("Toast"))  # noqa: E731 (Textual keeps Toast private)
        await _until(pilot, toasts, "the note")
        await pilot.pause()
        shown = "\n".join(str(toast.render()) for toast in toasts())
        assert "event [/] skipped" in shown and "event [bold] skipped" in shown, shown
        assert "[@click=app.quit]x" in shown, shown
        assert app.is_running and app.return_code is None


async def test_a_rerun_of_a_command_holding_markup_shows_it(tmp_path: Path) -> None:
    """A step's title in the re-run view is the recorded command, not markup (`[/]` in it
    raised a MarkupError when the step was shown)."""
    log = record_session(tmp_path, [bash("echo '[/]' '[bold]x'"), FINISH])
    again = tmp_path / "again"
    again.mkdir()
    overrides = {
        "sandbox.workspace": str(again),
        "agent.enable_browser": False,
        "agent.enable_jupyter": False,
    }
    app = RerunView(load_recording(log), load_config(env={}, overrides=overrides))
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.code is not None, "the end of the re-run")
        await pilot.pause()
        shown = app.export_screenshot()
        assert "[/]" in shown and "[bold]x" in shown
        assert app.code == 0 and app.is_running
