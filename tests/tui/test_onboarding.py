"""Onboarding and the keys around it (issue 14, friction 4, 9 and 13): the welcome, the workspace
in view, the help screen with every binding, the palette's keys, esc (closes; twice interrupts),
ctrl+q asking while a task runs, and letters typed in the conversation reaching the input box."""

from __future__ import annotations

import time
from pathlib import Path

from pilot_wait import waiter
from textual.events import Key
from tui_support import T0, demo_events, make_config

from workbench.events import StateChangedEvent
from workbench.testing.fake_backend import FakeBackend
from workbench.tui.agent_controls import ESCAPE_TWICE_S
from workbench.tui.app import WorkbenchApp, create_app, key_groups
from workbench.tui.messages import StrayKey
from workbench.tui.screens.help import HelpScreen, bindings_of
from workbench.tui.screens.quit import QuitScreen
from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import CELL_KEYS, KEYS_HINT, ConversationView
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane

_until = waiter(30)


def _app(tmp_path: Path, backend: FakeBackend | None = None) -> WorkbenchApp:
    config = make_config()
    config.sandbox.workspace = str(tmp_path / "project")
    return create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "none"
    )


def _rows(app: WorkbenchApp, widget: ConversationView, count: int) -> list[str]:
    return [widget.render_line(y).text for y in range(count)]


async def test_the_welcome_names_the_workspace_the_model_and_three_keys(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(ConversationView)
        text = "\n".join(_rows(app, view, 9))
        assert "No task yet" in text
        assert "openai/test-model" in text
        workspace = next(row for row in text.splitlines() if "workspace" in row).rstrip()
        assert workspace.endswith("/project") and len(workspace) <= 78  # its end kept
        for key in ("enter", "F1", "esc esc"):
            assert key in text
        title = str(view.border_title)
        assert title.startswith("conversation · …") and title.endswith("/project")
        assert len(title) < 78  # fits the border, the workspace's end kept
        await pilot.resize_terminal(200, 40)
        await pilot.pause()
        assert str(tmp_path / "project") in "\n".join(_rows(app, view, 9))
        app.load_events(demo_events())
        await pilot.pause()
        # Cells replace the welcome; the workspace stays in the border.
        assert "workspace" not in "\n".join(_rows(app, view, 9))
        title = str(view.border_title)
        shown = title.removeprefix("conversation · ").removeprefix("…")
        assert title.endswith("/project") and str(tmp_path / "project").endswith(shown)


async def test_help_lists_every_binding_and_closes_with_esc(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(120, 80)) as pilot:
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        shown = app.export_screenshot().replace("&#160;", " ")
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        # ? types a question mark in the input box, but opens help from the conversation.
        await pilot.press("question_mark")
        assert app.query_one(PromptInput).text == "?" and not isinstance(app.screen, HelpScreen)
        app.load_events(demo_events())
        app.query_one(ConversationView).focus()
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
    every = {what for group in key_groups(app) for _, what in group.keys}
    for binding in app.BINDINGS:
        assert binding.tooltip in every  # type: ignore[union-attr]
    for cls in (ConfirmPanel, ConversationView, PromptInput, ShellPane, BrowserPane):
        for binding in bindings_of(cls):
            assert (binding.tooltip or binding.description) in every, binding
    assert "rules in effect" in shown and "Settings" in shown and "interrupt the agent" in shown
    assert "Everywhere" in shown and "Input box" in shown


async def test_the_palette_shows_each_entrys_key(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)):
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
    assert commands["Settings"].startswith("^s · ")
    assert commands["New session"].startswith("^n · ")
    assert commands["Help: every key"].startswith("f1 / ? · ")
    assert commands["Rules in effect"].startswith("^r · ")


async def test_esc_closes_and_twice_interrupts_the_agent(tmp_path: Path) -> None:
    backend = FakeBackend()
    app = _app(tmp_path, backend)
    async with app.run_test(size=(100, 30)) as pilot:
        app.load_events(demo_events())
        app.feed_event(StateChangedEvent(id=99, timestamp=T0, state="finished"))
        app.query_one("#conversation").focus()
        await pilot.press("f6")  # maximize the conversation
        assert app.screen.maximized is not None
        await pilot.press("escape")
        assert app.screen.maximized is None
        # Idle: esc esc only goes back to the input box.
        await pilot.press("escape", "escape")
        assert app.query_one(PromptInput).has_focus and "stop" not in backend.calls
        app.feed_event(StateChangedEvent(id=100, timestamp=T0, state="running"))
        app.query_one("#conversation").focus()
        await _until(pilot, lambda: _escape_window_over(app), "the idle esc esc long past")
        await pilot.press("escape")
        assert app.query_one(PromptInput).has_focus and "stop" not in backend.calls
        await _until(pilot, lambda: _escape_window_over(app), "the double-press window passed")
        await pilot.press("escape")  # too late for a double press
        assert "stop" not in backend.calls
        await pilot.press("escape")
        assert backend.calls.count("stop") == 1


def _escape_window_over(app: WorkbenchApp) -> bool:
    """Whether an esc now would be a first press, not the second of a double press."""
    return time.monotonic() - app.last_escape > ESCAPE_TWICE_S


async def test_ctrl_q_asks_while_a_task_runs(tmp_path: Path) -> None:
    backend = FakeBackend()
    app = _app(tmp_path, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        app.feed_event(StateChangedEvent(id=100, timestamp=T0, state="running"))
        await pilot.press("ctrl+q")
        assert isinstance(app.screen, QuitScreen) and "close" not in backend.calls
        await pilot.press("n")
        assert not isinstance(app.screen, QuitScreen) and app.is_running
        await pilot.press("ctrl+q")
        await pilot.press("y")
        await pilot.pause()
    assert "close" in backend.calls and app.return_code == 0


async def test_ctrl_q_quits_at_once_when_idle(tmp_path: Path) -> None:
    backend = FakeBackend()
    app = _app(tmp_path, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        app.feed_event(StateChangedEvent(id=100, timestamp=T0, state="finished"))
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert "close" in backend.calls


async def test_letters_in_the_conversation_go_to_the_input_box(tmp_path: Path) -> None:
    app = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(ConversationView)
        view.focus()
        await pilot.press("c")  # no cell yet: even a cell key is typed
        prompt = app.query_one(PromptInput)
        assert prompt.has_focus and prompt.text == "c"
        app.load_events(demo_events())
        await pilot.pause()
        view.focus()
        await pilot.pause()
        assert view.border_subtitle == KEYS_HINT
        before = view.cursor
        await pilot.press("k")  # a cell key acts on the cell
        assert view.cursor == before - 1 and view.has_focus
        await pilot.press("h", "i")
        assert prompt.has_focus and prompt.text == "chi"
        assert view.border_subtitle == ""


async def test_a_word_typed_fast_in_the_conversation_arrives_whole(tmp_path: Path) -> None:
    """The keys after the first stray letter reach the conversation before the focus moves:
    they follow it, cell keys (e, c, j, k) included, in order."""
    app = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        app.load_events(demo_events())
        view = app.query_one(ConversationView)
        view.focus()
        await pilot.pause()
        before = view.cursor
        for key in "hey jack":  # queued at once, as a terminal delivers a burst
            app.post_message(Key("space" if key == " " else key, key))
        await pilot.pause()
        await pilot.pause()
        assert app.query_one(PromptInput).text == "hey jack"
        assert view.cursor == before  # j and k did not move it


async def test_letters_typed_elsewhere_keep_their_order_when_they_arrive_late(
    tmp_path: Path,
) -> None:
    """A stray letter travels further than one typed in the input box: " e" typed in the
    conversation, then "nd" in the box once it has the focus, read " end" even when "nd"
    arrives first (a tmux run under load showed "afternd e")."""
    app = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        prompt = app.query_one(PromptInput)
        prompt.focus()
        await pilot.press(*"after")
        typed_first = [Key("space", " "), Key("e", "e")]  # still on their way
        await pilot.press("n", "d")
        for key in typed_first:
            assert key.character is not None
            app.post_message(StrayKey(key.character, key.time))
        await pilot.pause()
        assert (prompt.text, prompt.cursor_location) == ("after end", (0, 9))
        await pilot.press("!", "left", "left", "X")  # typing on, and after a move, as usual
        app.post_message(StrayKey("?", Key("y", "y").time))
        await pilot.pause()
        assert prompt.text == "after enX?d!"


async def test_ctrl_q_does_not_ask_with_no_agent_behind_the_view(tmp_path: Path) -> None:
    """A recording shown without an agent (a replay, or no backend) whose last state is
    "running": nothing runs, so ctrl+q quits at once."""
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        app.load_events(demo_events())  # ends "running"
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert not isinstance(app.screen, QuitScreen)
    assert app.return_code == 0


def test_the_cell_keys_are_the_conversations_printable_bindings() -> None:
    """The keys the conversation keeps for its cells are exactly its one-letter bindings (and
    space): a binding added later is not typed into the input box by mistake."""
    keys = {
        key
        for binding in bindings_of(ConversationView)
        for key in binding.key.split(",")
        if len(key) == 1 or key == "space"
    }
    assert keys == CELL_KEYS
