"""Open a saved session: a list of the session logs, newest first (a continued one names its
parent). The app shows the chosen one read-only until a message resumes it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option


class SessionPicker(ModalScreen[Path | None]):
    """Pick a session log; enter opens it, escape closes."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "Close")]

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory

    def compose(self) -> ComposeResult:
        """The list (or a line saying there is none)."""
        from workbench.session_log import list_summaries

        summaries = list_summaries(self.directory) if self.directory.is_dir() else []
        with Vertical(id="sessions"):
            yield Static(f"Saved sessions in {self.directory}", id="sessions-title", markup=False)
            if not summaries:
                yield Static("No saved sessions yet.", markup=False)
                return
            options = []
            for summary in summaries:
                header = summary.header
                when = time.strftime("%Y-%m-%d %H:%M", time.localtime(header.created))
                task = " ".join(summary.task.split()) or "(no task)"
                text = Text(no_wrap=True, overflow="ellipsis")
                text.append(task, style="bold")
                text.append(f"\n{when}  {summary.state or '-'}  {header.model or '-'}", "dim")
                text.append(f"  {header.workspace}", "dim")
                if header.parent_id:  # resumed or branched from another session
                    text.append(f"  <- {header.parent_id}", "dim")
                if summary.damaged:
                    text.append(f"\ndamaged: {summary.damaged}", "yellow")
                options.append(Option(text, id=header.session_id))
            yield OptionList(*options, id="sessions-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Open the chosen log."""
        self.dismiss(self.directory / f"{event.option.id}.jsonl")
