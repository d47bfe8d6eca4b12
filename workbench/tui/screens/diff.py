"""The `/diff` screen: what a session changed in its workspace, as a unified diff, scrollable.
Escape or q closes it."""

from __future__ import annotations

from typing import ClassVar

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class DiffScreen(ModalScreen[None]):
    """A diff under a title."""

    DEFAULT_CSS = """
    DiffScreen { align: center middle; }
    #diff {
        width: 95%; height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    #diff-title { text-style: bold; color: $primary; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q", "dismiss(None)", "Close")]

    def __init__(self, title: str, diff: str, style: str = "ansi_dark") -> None:
        super().__init__()
        self.title_text = title
        self.diff = diff
        self.style = style

    def compose(self) -> ComposeResult:
        """The title, then the diff (or a line saying there is none)."""
        with Vertical(id="diff"):
            yield Static(f"{self.title_text}  ·  esc closes", id="diff-title", markup=False)
            with VerticalScroll(id="diff-body"):
                if self.diff.strip():
                    yield Static(Syntax(self.diff, "diff", theme=self.style, word_wrap=False))
                else:
                    yield Static("No file changed.", markup=False)

    def on_mount(self) -> None:
        """Focus the body, so that the arrows scroll it."""
        self.query_one("#diff-body").focus()
