"""The "rewind to here" screen: what rewinding the workspace to a cell's step changes, asked
before anything is touched; y (or the button) goes ahead, n or escape leaves it as it is."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from workbench.checkpoints.rewind_here import RewindPreview

SHOWN = 200
"""Changed paths listed at most; the rest are counted."""


def change_lines(preview: RewindPreview) -> list[str]:
    """One line per path the rewind changes: + comes back, ~ changes, - goes away."""
    return preview.changes.lines(SHOWN)


class RewindScreen(ModalScreen[bool]):
    """Ask before rewinding the workspace's files to a step, listing every change."""

    DEFAULT_CSS = """
    RewindScreen { align: center middle; }
    #rewind {
        width: 80%; max-width: 90; height: auto; max-height: 90%;
        border: round $warning; background: $surface; padding: 0 1;
    }
    #rewind-title { text-style: bold; color: $warning; }
    #rewind-changes { height: auto; max-height: 12; }
    #rewind-help { color: $text-muted; }
    #rewind-buttons { height: auto; align-horizontal: right; }
    #rewind-buttons Button { margin-left: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,n", "dismiss(False)", "Cancel"),
        Binding("y", "dismiss(True)", "Rewind"),
    ]

    def __init__(self, preview: RewindPreview, agent_running: bool) -> None:
        super().__init__()
        self.preview = preview
        self.agent_running = agent_running

    def compose(self) -> ComposeResult:
        """The question, the changes, the buttons."""
        preview = self.preview
        counts = (
            f"+{len(preview.changes.added)} ~{len(preview.changes.changed)} "
            f"-{len(preview.changes.deleted)}"
        )
        with Vertical(id="rewind"):
            yield Static(f"Rewind to step {preview.step}", id="rewind-title")
            if preview.changes.empty:
                what = f"The files in {preview.workspace} are already as they were at this step."
            else:
                what = f"These files in {preview.workspace} change ({counts}):"
            yield Static(what, id="rewind-what", markup=False)
            if not preview.changes.empty:
                with VerticalScroll(id="rewind-changes"):
                    yield Static("\n".join(change_lines(preview)), markup=False)
            stop = "The agent is stopped first. " if self.agent_running else ""
            yield Static(
                f"{stop}The session then goes on from here as a new branch; "
                f"`workbench rewind {preview.session_id} --undo` puts the files back.",
                id="rewind-help",
                markup=False,
            )
            with Horizontal(id="rewind-buttons"):
                yield Button("Rewind  y", id="rewind-yes", variant="warning")
                yield Button("Cancel  n", id="rewind-no")

    def on_mount(self) -> None:
        """Start on Cancel, so a stray Enter changes nothing."""
        self.query_one("#rewind-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Go ahead or leave the files as they are."""
        self.dismiss(event.button.id == "rewind-yes")
