"""Open a saved session: a search box over the session logs, newest first, each with its task,
when, outcome, steps, cost, duration and model (a continued one names its parent). Typing
filters (every word must match the task, id, model, workspace or outcome); up/down move, enter
opens. Steps, cost and duration are read in a background thread, so that a long list opens at
once. The app shows the chosen session read-only until a message resumes it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from workbench.session.title import session_title

if TYPE_CHECKING:
    from workbench.session.stats import SessionStats
    from workbench.session.summaries import SessionSummary


def duration_text(seconds: float) -> str:
    """`seconds` as 42s, 3m05s or 2h10m."""
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def summary_text(summary: SessionSummary, stats: SessionStats | None) -> Text:
    """Two lines (three when damaged): the task, then when, outcome, figures and model."""
    header = summary.header
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(header.created))
    task = " ".join(session_title(summary).split()) or "(no task)"
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(task, style="bold")
    text.append(f"\n{when}  ", "dim")
    outcome = summary.state or "-"
    style = {"finished": "green", "error": "red", "stopped": "yellow"}.get(outcome, "dim")
    text.append(outcome, style)
    if stats is None:
        text.append("  …", "dim")
    else:
        steps = f"{stats.steps} step{'' if stats.steps == 1 else 's'}"
        figures = f"{steps}  ${stats.cost:.4f}  {duration_text(stats.duration_s)}"
        text.append(f"  {figures}", "dim")
    text.append(f"  {header.model or '-'}  {header.workspace}", "dim")
    if header.parent_id:  # resumed or branched from another session
        text.append(f"  <- {header.parent_id}", "dim")
    if summary.damaged:
        text.append(f"\ndamaged: {summary.damaged}", "yellow")
    return text


def matches(summary: SessionSummary, query: str) -> bool:
    """Whether every word of `query` is in the task, id, model, workspace or outcome."""
    header = summary.header
    haystack = " ".join(
        (session_title(summary), header.session_id, header.model, header.workspace, summary.state)
    ).lower()
    return all(word in haystack for word in query.lower().split())


class SessionPicker(ModalScreen[Path | None]):
    """Search and pick a session log; enter opens it, escape closes."""

    DEFAULT_CSS = """
    #sessions-search { margin: 0 0 1 0; background: $panel; }
    #sessions-count { color: $text-muted; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Close"),
        Binding("down", "move(1)", "Next", show=False),
        Binding("up", "move(-1)", "Previous", show=False),
    ]

    def __init__(self, directory: Path) -> None:
        super().__init__()
        self.directory = directory
        self.summaries: list[SessionSummary] = []
        self.stats: dict[str, SessionStats] = {}

    def compose(self) -> ComposeResult:
        """The search box and the list (or a line saying there is none)."""
        from workbench.session.index import list_summaries

        self.summaries = list_summaries(self.directory)
        with Vertical(id="sessions"):
            yield Static(f"Saved sessions in {self.directory}", id="sessions-title", markup=False)
            if not self.summaries:
                yield Static("No saved sessions yet.", markup=False)
                return
            yield Input(
                id="sessions-search",
                placeholder="search: task, id, model, workspace, outcome",
                compact=True,
            )
            yield OptionList(*self._options(""), id="sessions-list")
            yield Static("", id="sessions-count")

    def on_mount(self) -> None:
        """Read the figures in the background; start in the search box."""
        if self.summaries:
            self.query_one(Input).focus()
            self.query_one(OptionList).highlighted = 0
            self._count("")
            self.run_worker(self._read_stats, thread=True, group="session-stats")

    def _options(self, query: str) -> list[Option]:
        return [
            Option(summary_text(s, self.stats.get(s.header.session_id)), id=s.header.session_id)
            for s in self.summaries
            if matches(s, query)
        ]

    def _count(self, query: str) -> None:
        shown = self.query_one(OptionList).option_count
        total = len(self.summaries)
        words = f"{shown} of {total}" if query.strip() else f"{total}"
        noun = "session" if total == 1 else "sessions"
        self.query_one("#sessions-count", Static).update(
            f"{words} {noun} · type to search · ↑/↓ choose · enter open · esc close"
        )

    def _read_stats(self) -> None:
        from workbench.session.stats import session_stats

        for summary in self.summaries:
            stats = session_stats(summary.path, summary.header.created)
            self.stats[summary.header.session_id] = stats
        self.app.call_from_thread(self._refill)

    def _refill(self) -> None:
        """Show the list again (with the figures), for the current search."""
        if not self.summaries or not self.is_attached:
            return
        options = self.query_one(OptionList)
        highlighted = options.highlighted
        current = options.get_option_at_index(highlighted).id if highlighted is not None else None
        query = self.query_one(Input).value
        options.clear_options()
        options.add_options(self._options(query))
        if options.option_count:
            ids = [options.get_option_at_index(i).id for i in range(options.option_count)]
            options.highlighted = ids.index(current) if current in ids else 0
        self._count(query)

    def on_input_changed(self, event: Input.Changed) -> None:
        """Filter as the person types."""
        self._refill()
        options = self.query_one(OptionList)
        if options.option_count:
            options.highlighted = 0

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in the search box opens the highlighted session."""
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self._open(options.get_option_at_index(options.highlighted).id)

    def action_move(self, delta: int) -> None:
        """Up/down from the search box move the list's highlight."""
        options = self.query_one(OptionList)
        if options.option_count:
            current = options.highlighted if options.highlighted is not None else -1
            options.highlighted = max(0, min(options.option_count - 1, current + delta))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Open the chosen log."""
        self._open(event.option.id)

    def _open(self, session_id: str | None) -> None:
        if session_id is not None:
            self.dismiss(self.directory / f"{session_id}.jsonl")
