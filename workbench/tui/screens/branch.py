"""Asked before `b` on a conversation cell branches the session there: y or enter branches, n or
escape stays. Any other letter means the person was typing ("build it" once branched at its
"b"): the screen closes and the letters, its "b" first, go to the input box."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from workbench.tui.messages import StrayKey


class BranchScreen(ModalScreen[bool]):
    """Branch here? y or enter: yes; n or escape: no; other letters: typing."""

    DEFAULT_CSS = """
    BranchScreen { align: center middle; }
    #branch {
        width: 74; max-width: 95%; height: auto;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "dismiss(True)", "Branch"),
        Binding("n,escape", "dismiss(False)", "Stay"),
    ]

    def __init__(self, what: str, running: bool, typed: str = "b") -> None:
        super().__init__()
        self.what = what
        self.running = running
        self.typed = typed

    def compose(self) -> ComposeResult:
        """The question and the keys."""
        stop = "The agent is stopped. " if self.running else ""
        with Vertical(id="branch"):
            yield Static(
                Text.assemble(
                    ("Branch here?  ", "bold"),
                    (self.what, "italic"),
                    f"\n{stop}The next message goes on from this point as a new session; this "
                    "one is kept (ctrl+o opens it).\n\n",
                    ("y", "bold"),
                    " or ",
                    ("enter", "bold"),
                    " branch    ",
                    ("n", "bold"),
                    " or ",
                    ("esc", "bold"),
                    " stay    other letters are typed in the input box",
                ),
                id="branch-text",
            )

    def on_key(self, event: events.Key) -> None:
        """A letter that is no answer: the person was typing; it goes to the input box."""
        if not event.is_printable or event.character is None or event.key in ("y", "n"):
            return
        event.stop()
        event.prevent_default()
        self.app.post_message(StrayKey(self.typed + event.character, event.time))
        self.dismiss(False)
