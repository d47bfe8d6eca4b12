"""The command palette's commands (ctrl+p): Textual's own, less those ours replace, then
workbench's entries (`commands.py`), each with the keys that run it too."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

from textual.actions import parse as parse_action
from textual.app import App, SystemCommand

from workbench.tui.commands import palette_entries


def system_commands(
    app: App[Any], textuals: Iterable[SystemCommand], panes: tuple[str, ...]
) -> Iterator[SystemCommand]:
    """Palette entries for everything the footer keys do (Textual's own "Maximize", which
    would maximize the input box, gives way to "Maximize pane")."""
    from workbench.tui.screens.help import bindings_of

    keys: dict[str, list[str]] = {}
    for binding in bindings_of(type(app), own_only=False):
        keys.setdefault(binding.action, []).append(app.get_key_display(binding))
    for command in textuals:
        if command.title not in ("Maximize", "Quit"):  # ours ask first while a task runs
            yield command
    for entry in palette_entries(panes):
        run = partial(run_action_now, app, entry.action)
        shown = " / ".join(keys.get(entry.action, []))
        yield SystemCommand(entry.title, f"{shown} · {entry.help}" if shown else entry.help, run)


def run_action_now(app: App[Any], action: str) -> None:
    """Run the app action `action` (as a key binding names it) now; an async one as a
    worker (the palette and slash commands)."""
    _, name, params = parse_action(action)
    result = getattr(app, f"action_{name}")(*params)
    if inspect.isawaitable(result):
        app.run_worker(result, group="palette")
