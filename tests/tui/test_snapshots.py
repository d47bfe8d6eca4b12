"""Snapshots of the real app (built by `create_app`, as the CLI does), at 80x24 and 160x48.

Each test's docstring says what the picture should show. Fixed clock, ids and times; images
drawn as half-cell blocks. Update baselines with `--snapshot-update` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from textual.pilot import Pilot
from tui_support import MemoryArtifacts, confirm_events, demo_events, png

from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.jupyter import JupyterPane

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
THEMES = ["workbench-dark", "workbench-light", "workbench-high-contrast"]


async def _load_demo(pilot: Pilot[Any], pane: str | None = None) -> None:
    app = pilot.app
    assert isinstance(app, WorkbenchApp)
    files = MemoryArtifacts({"p1.png": png(), "shot.png": png(64, 40)})
    app.query_one(JupyterPane).loader = files.load
    app.query_one(BrowserPane).loader = files.load
    app.load_events(demo_events())
    await pilot.pause()
    await app.workers.wait_for_complete()
    if pane is not None:
        app.action_show_pane(pane)
    await pilot.pause()


class TestMainScreen:
    """The main screen."""

    @pytest.mark.parametrize("size", SIZES)
    def test_empty(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """An empty conversation, the shell tab, the input box focused, status and footer."""
        assert snap_compare(app_factory(), terminal_size=size)

    @pytest.mark.parametrize("size", SIZES)
    def test_conversation(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """Messages shown whole (the agent's last one: Markdown with a highlighted code block);
        one row per action with its outcome at the right end; the edit expanded under the
        cursor, showing its diff."""

        async def before(pilot: Pilot[Any]) -> None:
            await _load_demo(pilot)
            app = pilot.app
            app.query_one("#conversation").focus()
            await pilot.press("up", "up", "up", "up", "up", "enter")

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)


class TestPanes:
    """Each tool pane with content."""

    @pytest.mark.parametrize("size", SIZES)
    def test_shell(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The shell pane: both commands in colour, their output, `✗ exit 2` in the header."""

        async def before(pilot: Pilot[Any]) -> None:
            await _load_demo(pilot, "shell")

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)

    @pytest.mark.parametrize("size", SIZES)
    def test_jupyter(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The Jupyter pane: highlighted code, output with the error in red, a gradient image."""

        async def before(pilot: Pilot[Any]) -> None:
            await _load_demo(pilot, "jupyter")
            await pilot.press("f6")

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)

    @pytest.mark.parametrize("size", SIZES)
    def test_browser(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The browser pane: URL and title on top, the screenshot as half-cell blocks."""

        async def before(pilot: Pilot[Any]) -> None:
            await _load_demo(pilot, "browser")

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)

    @pytest.mark.parametrize("size", SIZES)
    def test_browser_page_text(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The browser pane after `t`: the page text instead of the screenshot."""

        async def before(pilot: Pilot[Any]) -> None:
            await _load_demo(pilot, "browser")
            await pilot.press("t")

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)


class TestConfirmation:
    """The confirmation panel."""

    @pytest.mark.parametrize("size", SIZES)
    def test_panel(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """A yellow-bordered panel above the input: tool, risk HIGH, why, the highlighted
        command, and the keys y / n / a."""

        async def before(pilot: Pilot[Any]) -> None:
            app = pilot.app
            assert isinstance(app, WorkbenchApp)
            for event in confirm_events():
                app.feed_event(event)
            await pilot.pause()

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)


class TestSettings:
    """The settings screen."""

    @pytest.mark.parametrize("size", SIZES)
    def test_settings(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """Model and base URL filled in, the key field masked and empty, the file path,
        Save and Cancel buttons, over the dimmed main screen."""
        assert snap_compare(app_factory(), terminal_size=size, press=["ctrl+s"])


class TestThemes:
    """Each built-in theme on the demo session."""

    @pytest.mark.parametrize("size", SIZES)
    @pytest.mark.parametrize("theme", THEMES)
    def test_theme(
        self,
        snap_compare: Any,
        app_factory: Callable[..., WorkbenchApp],
        theme: str,
        size: tuple[int, int],
    ) -> None:
        """The demo session in `theme`: its colours for actions (orange/yellow), observations,
        errors (red) and the diff, code in the theme's Pygments style."""

        async def before(pilot: Pilot[Any]) -> None:
            await _load_demo(pilot)
            app = pilot.app
            app.query_one("#conversation").focus()
            await pilot.press("up", "up", "up", "up", "up", "up", "up", "up", "up", "up", "enter")

        assert snap_compare(app_factory(theme), terminal_size=size, run_before=before)
