"""Every key of the app, grouped by where it works (for the help screen, `screens/help.py`,
imported when it opens)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App
from textual.binding import Binding

from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane

if TYPE_CHECKING:
    from workbench.tui.screens.help import KeyGroup


def key_groups(app: App[Any]) -> list[KeyGroup]:
    """Every key of the app, grouped by where it works (for the help screen)."""
    from workbench.tui.screens.help import KeyGroup, bindings_of, describe
    from workbench.tui.slash import help_rows as slash_help_rows

    def group(
        title: str,
        *classes: type,
        before: tuple[tuple[str, str], ...] = (),
        after: tuple[tuple[str, str], ...] = (),
    ) -> KeyGroup:
        rows = [row for cls in classes for row in describe(app, bindings_of(cls))]
        return KeyGroup(title, (*before, *rows, *after))

    everywhere = bindings_of(type(app), own_only=False)
    return [
        KeyGroup(
            "Everywhere",
            (
                *describe(app, everywhere),
                (
                    app.get_key_display(Binding(app.COMMAND_PALETTE_BINDING, "")),
                    "Command palette: every action by name, with its key",
                ),
            ),
        ),
        group(
            "Input box",
            PromptInput,
            before=(("enter", "Send (while the agent works: queued for its next step)"),),
            after=(
                ("↑ / ↓", "Earlier messages (while / commands are listed: pick one)"),
                ("tab", "Next pane (while / commands are listed: complete the picked one)"),
            ),
        ),
        KeyGroup("Slash commands (type them in the input box)", slash_help_rows()),
        group(
            "Conversation (tab to it, or click a cell)",
            ConversationView,
            after=(("other letters", "Go to the input box, typed there"),),
        ),
        group("Confirmation panel", ConfirmPanel),
        group(
            "Shell pane",
            ShellPane,
            before=(("enter", "Send the line typed to the running command"),),
        ),
        group("Jupyter pane", JupyterPane),
        group("Browser pane", BrowserPane),
    ]
