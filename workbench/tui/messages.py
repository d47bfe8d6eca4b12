"""Messages the TUI passes between the background work and its widgets (past tense, small)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from textual.message import Message

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from workbench.events import Event, LLMActivity
    from workbench.tui.slash import Refused, Run, SlashCommand

ConfirmAnswer = Literal["approve", "reject", "always"]


class EventArrived(Message):
    """The controller (or a loaded session) produced `event`."""

    def __init__(self, event: Event, live: bool = True, log: Path | None = None) -> None:
        super().__init__()
        self.event = event
        self.live = live
        self.log = log
        """The log of the session it belongs to, if known (one that ended is not shown)."""


class ModelCallChanged(Message):
    """A model call started, streamed text, was retried or ended (shown, never logged)."""

    def __init__(self, activity: LLMActivity, log: Path | None = None) -> None:
        super().__init__()
        self.activity = activity
        self.log = log
        """The log of the session it belongs to, if known (one that ended is not shown)."""


class ProgressChanged(Message):
    """A background job (LLM import, sandbox start) moved on: `part` is "llm" or "sandbox"."""

    def __init__(self, part: str, state: str, detail: str = "") -> None:
        super().__init__()
        self.part = part
        self.state = state
        self.detail = detail


class TaskWaiting(Message):
    """A task was sent before the LLM client and the sandbox were ready; it starts when they are.

    `text` is empty once the wait is over (started, or start-up failed).
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class MessageQueued(Message):
    """A message was queued for the running agent; it reads it before its next step."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class QueuedMessagesReturned(Message):
    """The run ended without reading these queued messages; they go back to the input box."""

    def __init__(self, texts: list[str], why: str) -> None:
        super().__init__()
        self.texts = texts
        self.why = why


class ConfirmationAnswered(Message):
    """The person answered the confirmation panel."""

    def __init__(self, cause: int, answer: ConfirmAnswer, reason: str = "") -> None:
        super().__init__()
        self.cause = cause
        self.answer = answer
        self.reason = reason
        """Why it was rejected, in the person's words (for the agent); may be empty."""


class NetworkAsked(Message):
    """A command in the sandbox wants a host not on the allowlist; `answered` takes the answer
    ("once", "session", "always" or "reject")."""

    def __init__(self, question: Any, answered: Callable[[str], None]) -> None:
        super().__init__()
        self.question = question
        """A `workbench.security.net_gate.NetQuestion`."""
        self.answered = answered


class NetworkAskWithdrawn(Message):
    """The run ended before the person answered a `NetworkAsked`: its question goes."""

    def __init__(self, question: Any) -> None:
        super().__init__()
        self.question = question


class PromptSubmitted(Message):
    """The person sent the text of the input box."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ShellInputSubmitted(Message):
    """The person typed `text` (or a key such as `C-c`) for the running shell command."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class RewindRequested(Message):
    """The person asked to rewind the workspace's files to the event with id `event_id`."""

    def __init__(self, event_id: int) -> None:
        super().__init__()
        self.event_id = event_id


class BranchRequested(Message):
    """The person asked to branch the session at the event with id `event_id`."""

    def __init__(self, event_id: int) -> None:
        super().__init__()
        self.event_id = event_id


class StrayKey(Message):
    """A letter typed where it does nothing (the conversation): it belongs in the input box.

    `typed_at` is the key's own time: a stray letter travels further than one typed in the
    box, which may arrive first once the box has the focus."""

    def __init__(self, character: str, typed_at: float) -> None:
        super().__init__()
        self.character = character
        self.typed_at = typed_at


class SlashEntered(Message):
    """The person sent a slash command (`parsed` is a `slash.Run` or a `slash.Refused`)."""

    def __init__(self, parsed: Run | Refused) -> None:
        super().__init__()
        self.parsed = parsed


class SlashMatchesChanged(Message):
    """The slash commands that complete what is typed changed (empty: none); `index` is the
    one picked (tab takes it)."""

    def __init__(self, matches: list[SlashCommand], index: int) -> None:
        super().__init__()
        self.matches = matches
        self.index = index
