"""Asked before quitting while the agent is in the middle of a task (ctrl+q): y or ctrl+q again
quits (the agent is stopped, its session log kept), n or escape stays."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class QuitScreen(ModalScreen[bool]):
    """Quit while the agent works? y quits, n or escape stays."""

    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    #quit {
        width: 74; max-width: 95%; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "dismiss(True)", "Quit"),
        Binding("n,escape", "dismiss(False)", "Stay"),
    ]

    def __init__(self, state: str) -> None:
        super().__init__()
        self.state = state

    def compose(self) -> ComposeResult:
        """The question and the keys."""
        with Vertical(id="quit"):
            yield Static(
                Text.assemble(
                    ("Quit while the agent is ", "bold"),
                    (self.state, "bold reverse"),
                    ("?", "bold"),
                    "\nThe task is stopped; its session log is kept (ctrl+o opens it later).\n\n",
                    ("y", "bold"),
                    " or ",
                    ("ctrl+q", "bold"),
                    " quit    ",
                    ("n", "bold"),
                    " or ",
                    ("esc", "bold"),
                    " stay",
                ),
                id="quit-text",
            )
