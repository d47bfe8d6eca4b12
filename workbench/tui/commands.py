"""The command palette's entries (ctrl+p): everything the footer keys do, by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from textual.app import SystemCommand

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


def palette_commands(app: WorkbenchApp) -> Iterator[SystemCommand]:
    """Workbench's palette entries (Textual adds its own: theme, keys, screenshot, quit)."""
    yield SystemCommand("New session", "Clear the panes and start over", app.action_new_session)
    yield SystemCommand(
        "Pause / resume", "Pause the agent after its step, or resume", app.action_toggle_pause
    )
    yield SystemCommand("Stop the agent", "Stop the running task", app.action_stop)
    yield SystemCommand(
        "Toggle tool panes", "Show or hide shell/Jupyter/browser", app.action_toggle_tools
    )
    for pane in app.PANES:
        yield SystemCommand(
            f"Show {pane} pane",
            f"Show and focus the {pane} pane",
            lambda pane=pane: app.action_show_pane(pane),
        )
    yield SystemCommand(
        "Maximize pane", "Maximize the focused pane (again: restore)", app.action_maximize_pane
    )
    yield SystemCommand("Open a saved session", "Show a recorded session", app.action_open_session)
    yield SystemCommand("Settings", "Model, base URL and API key", app.action_settings)
