"""Reject with a reason (r on the confirmation panel): one line that goes to the agent with the
rejection, in the observation it reads and in the session's `confirmation_decision` event.
Enter rejects with it; escape goes back to the panel, nothing answered."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class RejectReasonScreen(ModalScreen[str | None]):
    """Type why the action is rejected; enter rejects, escape goes back."""

    DEFAULT_CSS = """
    RejectReasonScreen { align: center middle; }
    #reject {
        width: 80%; max-width: 90; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    #reject-title { text-style: bold; color: $warning; }
    #reject-hint { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Back")]

    def __init__(self, action: str) -> None:
        super().__init__()
        self.action = action

    def compose(self) -> ComposeResult:
        """The action, the reason's line, the keys."""
        first = (self.action.strip().splitlines() or [""])[0]
        with Vertical(id="reject"):
            yield Static("Reject, and tell the agent why", id="reject-title")
            yield Static(first, id="reject-action", markup=False)
            yield Input(
                id="reject-reason",
                placeholder="e.g. don't delete files; move them to ./trash instead",
                compact=True,
            )
            yield Static("enter reject with this reason · esc back", id="reject-hint")

    def on_mount(self) -> None:
        """Start in the reason."""
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Reject with what was typed (nothing typed: a plain rejection)."""
        event.stop()
        self.dismiss(" ".join(event.value.split()))
