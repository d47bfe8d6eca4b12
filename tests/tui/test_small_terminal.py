"""At 80x24 and 200x50 (issue 23, items 12 and 13): the conversation keeps at least 14 rows
(the tool panes fold to one row until one has the focus), a toast wraps between words, a
dialog leaves the screen behind it in view, dimmed, and the status bar says "no model" when
none is set."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pilot_wait import waiter
from rich.segment import Segment
from textual.strip import Strip
from tui_support import demo_events, image_cell, make_config

from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.status import StatusBar
from workbench.tui.widgets.tools_summary import MIN_CONVERSATION_ROWS, ToolsSummary

_until = waiter(30)

SIZES = [(80, 24), (200, 50)]
RULE_NOTE = "Saved the rule to /home/me/project/.workbench/config.toml and it applies from now on."


def _screen(app: WorkbenchApp) -> list[Strip]:
    """The rows on screen, dialogs over what they cover (as the terminal shows them)."""
    from textual._context import visible_screen_stack  # as `App.export_screenshot` does

    visible_screen_stack.set(app._background_screens)
    return app.screen._compositor.render_strips()


def _text(strip: Strip) -> str:
    return "".join(segment.text for segment in strip)


@pytest.mark.parametrize("size", SIZES)
async def test_the_conversation_keeps_its_rows_and_the_panes_fold_until_opened(
    app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    app = app_factory()
    async with app.run_test(size=size) as pilot:
        for event in demo_events():
            app.feed_event(event)
        await pilot.pause()
        view = app.query_one(ConversationView)
        assert view.scrollable_content_region.height >= MIN_CONVERSATION_ROWS
        tools, summary = app.query_one("#tools"), app.query_one(ToolsSummary)
        small = size == (80, 24)
        assert tools.display is not small and summary.display is small
        if not small:
            return
        summary.follow()
        await pilot.pause()
        row = str(summary.render())
        assert row.startswith("▸ browser http://127.0.0.1:8000/  Demo page"), row
        assert "shell ✗ exit 2" in row, row
        await pilot.press("f3")  # open the shell pane
        await pilot.pause()
        assert tools.display and not summary.display
        assert app.focused is not None and app.focused.id == "shell-input"
        await pilot.press("escape")  # back to the input box: folded again
        await pilot.pause()
        assert not tools.display and summary.display
        assert view.scrollable_content_region.height >= MIN_CONVERSATION_ROWS
        await pilot.click(ToolsSummary)  # a click opens the pane named first (the shell, now)
        await pilot.pause()
        assert tools.display and app.focused is app.query_one("#shell-input")


@pytest.mark.parametrize("size", SIZES)
async def test_a_toast_wraps_between_words(
    app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    app = app_factory()
    async with app.run_test(size=size, notifications=True) as pilot:
        app.notify(RULE_NOTE, title="rules", markup=False)
        for _ in range(20):
            await pilot.pause()
            if list(app.screen.query("Toast")):
                break
        (toast,) = app.screen.query("Toast")
        await pilot.pause()
        rows = [toast.render_line(y).text.strip(" ▌") for y in range(toast.size.height)]
        words = [word for row in rows for word in row.split()]
        assert words == ["rules", *RULE_NOTE.split()], rows


@pytest.mark.parametrize("size", SIZES)
async def test_a_dialog_leaves_the_screen_behind_it_in_view_dimmed(
    app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    app = app_factory()
    async with app.run_test(size=size) as pilot:
        for event in demo_events():
            app.feed_event(event)
        await pilot.pause()
        before = _screen(app)
        await pilot.press("ctrl+s")  # the settings dialog
        await pilot.pause()
        await pilot.pause()
        assert type(app.screen).__name__ == "SettingsScreen"
        after = _screen(app)
        assert "Settings" in "".join(_text(row) for row in after)
        # The first row (the conversation's border and title) is outside the dialog: still
        # there, in other (dimmer) colours.
        assert _text(after[0]) == _text(before[0])
        assert "conversation" in _text(after[0])
        old = [seg.style for seg in Segment.simplify(before[0]) if seg.text.strip()]
        new = [seg.style for seg in Segment.simplify(after[0]) if seg.text.strip()]
        assert old and new and old[0] is not None and new[0] is not None
        assert old[0].color != new[0].color


@pytest.mark.parametrize("size", SIZES)
async def test_the_llm_indicator_says_no_model_when_none_is_set(
    app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    app = app_factory()
    assert app.config is not None
    app.config.llm.model = ""
    async with app.run_test(size=size) as pilot:
        status = app.query_one(StatusBar)
        status.set(llm="ready")  # the LLM library loaded: no news while there is no model
        await pilot.pause()
        line = status.render().plain
        assert "llm: no model" in line, line
        assert "✓" not in line and "ready" not in line, line
        status.set(model="openai/test-model")
        await pilot.pause()
        line = status.render().plain
        assert "no model" not in line and ("llm ✓" in line or "llm ready" in line), line


@pytest.mark.parametrize(
    ("mode", "browser_widget"),
    [("kitty", "textual_image.widget.TGPImage"), ("sixel", "textual_image.widget.sixel.Image")],
)
async def test_images_use_the_graphics_protocol_the_terminal_named_at_start_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, browser_widget: str
) -> None:
    """Kitty: plots in rows of placeholder characters, the picture sent to the terminal as
    Kitty graphics; Sixel: the browser's screenshot as Sixel (plots stay half-cell blocks: a
    Sixel picture cannot live in a row of text). Nothing asks the terminal anything."""
    from tui_support import MemoryArtifacts, png

    from sandbox.protocol import IPythonAction, IPythonObservation
    from workbench.events import ActionEvent, ObservationEvent
    from workbench.tui.app import create_app
    from workbench.tui.widgets.browser import BrowserPane
    from workbench.tui.widgets.jupyter import JupyterPane

    written = io.StringIO()  # the terminal, as textual-image writes to it
    monkeypatch.setattr(sys, "__stdout__", written)
    app = create_app(make_config(), None, clock=lambda: 0.0, image_mode=mode,
                     user_themes=tmp_path / "none")  # fmt: skip
    chart = png(320, 200)
    async with app.run_test(size=(200, 50)) as pilot:
        jupyter = app.query_one(JupyterPane)
        jupyter.loader = MemoryArtifacts({"chart.png": chart}).load
        app.feed_event(ActionEvent(id=1, tool_name="execute_ipython_cell", tool_call_id="c1",
                                   action=IPythonAction(code="plot()")))  # fmt: skip
        obs = IPythonObservation(code="plot()", content="", images=["chart.png"])
        app.feed_event(ObservationEvent(id=2, cause=1, tool_call_id="c1", observation=obs))
        await _until(pilot, lambda: image_cell(jupyter) is not None, "the image drawn")
        image = image_cell(jupyter)
        drawn = "".join(strip.text for strip in jupyter._body(image))
        if mode == "kitty":
            assert chr(0x10EEEE) in drawn and "▀" not in drawn
            assert "\x1b_G" in written.getvalue() and "a=p" in written.getvalue()
        else:
            assert "▀" in drawn and chr(0x10EEEE) not in drawn
        browser = app.query_one(BrowserPane)
        await browser.set_screenshot(chart)
        kind = type(browser.query_one("#browser-shot"))
        assert f"{kind.__module__}.{kind.__name__}" == browser_widget
    assert "\x1b[c" not in written.getvalue()  # no question to the terminal after start-up
