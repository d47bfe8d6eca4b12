"""The input box's traffic with the rest of the app: messages queued for the agent's next
step (and given back unread), slash commands listed and run, letters typed elsewhere."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.slash_popup import SlashPopup

if TYPE_CHECKING:
    from workbench.tui.host import Host
    from workbench.tui.messages import (
        MessageQueued,
        QueuedMessagesReturned,
        SlashEntered,
        SlashMatchesChanged,
        StrayKey,
    )
    from workbench.tui.slash_run import SlashTarget


def message_queued(app: Host, message: MessageQueued) -> None:
    """A message waits for the agent's next step: the input box's border says so."""
    app.query_one(PromptInput).add_queued(message.text)


def queued_messages_returned(app: Host, message: QueuedMessagesReturned) -> None:
    """Queued messages the agent never read go back into the input box."""
    app.query_one(PromptInput).take_back(message.texts)
    app.notify(
        f"Not sent: {message.why}. It is back in the input box.",
        severity="warning",
        markup=False,
    )


def slash_matches_changed(app: Host, message: SlashMatchesChanged) -> None:
    """A slash command is being typed: list what it may be above the input box."""
    app.query_one(SlashPopup).show(message.matches, message.index)


def slash_entered(app: SlashTarget, message: SlashEntered) -> None:
    """A slash command was sent: run it (one that is no command: say so)."""
    from workbench.tui.slash_run import run_slash

    run_slash(app, message.parsed)


def stray_key(app: Host, message: StrayKey) -> None:
    """A letter typed in the conversation: into the input box, which takes the focus."""
    prompt = app.query_one(PromptInput)
    prompt.focus()
    prompt.type_stray(message.character, message.typed_at)
