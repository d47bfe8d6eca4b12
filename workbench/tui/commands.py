"""The command palette's entries (ctrl+p), as data: everything the footer keys do, by name.

Each entry names an app action (what a key binding would run); the app turns them into
palette commands, so this module needs nothing of the app."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PaletteEntry:
    """One palette line: its title, its help text, and the app action it runs."""

    title: str
    help: str
    action: str
    """An action string as key bindings use it, e.g. `show_pane('shell')`."""


def palette_entries(panes: tuple[str, ...]) -> list[PaletteEntry]:
    """Workbench's palette entries (Textual adds its own: theme, keys, screenshot, quit)."""
    entries = [
        PaletteEntry("New session", "Clear the panes and start over", "new_session"),
        PaletteEntry("Pause / resume", "Pause the agent after its step, or resume", "toggle_pause"),
        PaletteEntry("Stop the agent", "Stop the running task", "stop"),
        PaletteEntry(
            "Condense now",
            "Condense the conversation's older history before the next LLM call",
            "condense_now",
        ),
        PaletteEntry("Toggle tool panes", "Show or hide shell/Jupyter/browser", "toggle_tools"),
    ]
    entries += [
        PaletteEntry(f"Show {pane} pane", f"Show and focus the {pane} pane", f"show_pane({pane!r})")
        for pane in panes
    ]
    entries += [
        PaletteEntry(
            "Maximize pane", "Maximize the focused pane (again: restore)", "maximize_pane"
        ),
        PaletteEntry("Open a saved session", "Show a recorded session", "open_session"),
        PaletteEntry(
            "Branch here",
            "A new session with the history up to the conversation's current cell",
            "branch_here",
        ),
        PaletteEntry(
            "Rewind to here",
            "Put the workspace's files back to the conversation's current cell, then branch",
            "rewind_here",
        ),
        PaletteEntry(
            "Settings",
            "Model, confirmation policy, streaming, theme, step limit, ...",
            "settings",
        ),
        PaletteEntry(
            "Rules in effect",
            "The confirmation rules and where each comes from; remove one",
            "rules",
        ),
        PaletteEntry("Help: every key", "Every key binding, by where it works", "help"),
        PaletteEntry("Quit", "Quit (asks first while the agent works)", "request_quit"),
    ]
    return entries
