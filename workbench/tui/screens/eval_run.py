"""Watching an eval run (`workbench eval watch DIR`): every trial of the run with its state
(queued, running, done, error, cancelled), reward, cost and time, refreshed as trial folders
appear in DIR; enter opens a finished trial's conversation (its session log, read-only, in the
usual conversation pane), esc comes back.

The folder is polled (`poll_s`): each poll reads it in a thread (`workbench.eval.results.scan`,
which also reads the trials `run.json` plans but has not started as "queued") and redraws
the rows that changed. The task column takes what the other columns leave of the width, so
the table fits 80 columns. Task names are shown as plain text (`Text`, never markup).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from workbench.eval.results import Trial, TrialCache, scan
from workbench.safe_text import one_line
from workbench.session.log import SessionLogError, read
from workbench.tui import themes as theme_files
from workbench.tui.widgets.conversation import ConversationView

POLL_S = 1.0
STATE_STYLE = {
    "queued": "dim",
    "running": "yellow",
    "done": "green",
    "error": "bold red",
    "cancelled": "magenta",
}
COLUMNS = (("try", 5), ("state", 9), ("reward", 6), ("cost", 8), ("time", 7))
"""The columns after the task, with their widths."""
CELL_PADDING = 2
"""DataTable pads each cell by one column on both sides."""
HINT = "enter open the trial's conversation · r refresh · q quit"
CONVERSATION_HINT = "j/k move · ⏎ expand · c copy · e edit · esc back to the trials"
MAX_TASK_WIDTH = 64
"""On a wide terminal the task column stops here, keeping the figures near the names."""


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    value = max(0.0, value)
    if value < 60:
        return f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
    return f"{int(value // 60)}m{int(value % 60):02d}s"


def trial_cells(trial: Trial, task_width: int, now: float | None = None) -> list[Text]:
    """One row: task, attempt, state, reward, cost, time (a running trial's time so far)."""
    task = one_line(trial.task)
    if len(task) > task_width:
        task = task[: max(1, task_width - 1)] + "…"
    reward = "-" if trial.reward is None else f"{trial.reward:.2f}"
    cost = f"${trial.cost_usd:.4f}" if trial.finished else "-"
    if trial.finished:
        elapsed = trial.seconds.get("total")
    elif trial.state == "running":
        try:  # since its folder appeared
            elapsed = (now or time.time()) - trial.folder.stat().st_mtime
        except OSError:
            elapsed = None
    else:
        elapsed = None
    return [
        Text(task),
        Text(str(trial.attempt), justify="right"),
        Text(trial.state, style=STATE_STYLE.get(trial.state, "")),
        Text(reward, justify="right"),
        Text(cost, justify="right"),
        Text(_seconds(elapsed), justify="right"),
    ]


def summary_text(trials: list[Trial], unreadable: int) -> Text:
    """The line above the table: the counts by state, success and cost so far."""
    counts = {state: sum(t.state == state for t in trials) for state in STATE_STYLE}
    scored = [t for t in trials if t.state == "done" and t.reward is not None]
    wins = sum(t.reward is not None and t.reward >= 1.0 for t in scored)
    cost = sum(t.cost_usd for t in trials)
    text = Text(no_wrap=True, overflow="ellipsis")
    for state, count in counts.items():
        if count:
            text.append(f"{count} {state}  ", STATE_STYLE[state])
    if unreadable:
        text.append(f"{unreadable} unreadable  ", "bold red")
    if not trials and not unreadable:
        text.append("no trial yet  ", "dim")
    text.append(f"success {wins}/{len(scored)}  ${cost:.4f}")
    return text


class ReadOnlyConversation(ConversationView):
    """The conversation pane for a finished trial: no branching or rewinding from here."""

    def on_focus(self, event: events.Focus) -> None:
        """Say in the border which keys act here (no typing, branching or rewinding)."""
        event.prevent_default()  # the base classes' handlers would put their own hint there
        self.border_subtitle = CONVERSATION_HINT
        self.refresh()  # the cursor row looks different while focused

    def action_branch_here(self) -> None:
        """Say how to continue the trial instead (it is someone else's finished session)."""
        self.notify(
            "A trial is read-only here: `workbench replay LOG --continue-from N`.", markup=False
        )

    def action_rewind_here(self) -> None:
        """See `action_branch_here`."""
        self.action_branch_here()


class TrialConversationScreen(Screen[None]):
    """One trial's conversation, read from its session log."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "app.pop_screen", "Back to the trials"),
    ]
    DEFAULT_CSS = """
    TrialConversationScreen #trial-title { height: auto; max-height: 2; padding: 0 1; }
    TrialConversationScreen ReadOnlyConversation { height: 1fr; border: round $wb-border; }
    """

    def __init__(self, trial: Trial, log: Path) -> None:
        super().__init__()
        self.trial = trial
        self.log_path = log

    def compose(self) -> ComposeResult:
        """The trial's figures, the conversation, the keys."""
        trial = self.trial
        title = Text(no_wrap=True, overflow="ellipsis")
        title.append(one_line(trial.trial_id), "bold")
        title.append(f"  {trial.state}", STATE_STYLE.get(trial.state, ""))
        if trial.reward is not None:
            title.append(f"  reward {trial.reward:.2f}")
        title.append(f"  ${trial.cost_usd:.4f}  replay: workbench replay {self.log_path}", "dim")
        yield Static(title, id="trial-title", markup=False)
        yield ReadOnlyConversation(id="trial-conversation")
        yield Footer()

    def on_mount(self) -> None:
        """Load the session log into the pane (a damaged one as far as it reads)."""
        view = self.query_one(ReadOnlyConversation)
        try:
            loaded = read(self.log_path)
        except SessionLogError as exc:
            view.empty_text = f"Cannot read the session log: {exc}"
            view.refresh()
            return
        view.set_welcome(loaded.header.workspace, loaded.header.model)
        view.add_events(loaded.events, live=False)
        if loaded.truncated or loaded.bad_lines:
            self.notify("Parts of this session log could not be read.", severity="warning")
        view.focus()


class EvalRunScreen(Screen[None]):
    """The trials of the eval run in `out_dir`, refreshed every `poll_s` seconds."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh"),
        Binding("q", "app.quit", "Quit"),
    ]
    DEFAULT_CSS = """
    EvalRunScreen #eval-summary { height: 1; padding: 0 1; }
    EvalRunScreen #eval-hint { height: 1; padding: 0 1; color: $text-muted; }
    EvalRunScreen DataTable {
        height: 1fr;
        border: round $wb-border;
        border-title-color: $text-muted;
    }
    EvalRunScreen DataTable:focus { border: round $primary; }
    """

    def __init__(self, out_dir: Path, poll_s: float = POLL_S) -> None:
        super().__init__()
        self.out_dir = Path(out_dir)
        self.poll_s = poll_s
        self.trials: dict[str, Trial] = {}
        self.unreadable = 0
        self.polls = 0
        """How many scans have been shown (tests wait on it)."""
        self._task_width = 0
        self._cache: TrialCache = {}
        self.last_notice = ""
        """The last thing said in a notification (why a trial cannot be opened)."""

    def compose(self) -> ComposeResult:
        """The summary line, the table, the keys."""
        yield Static(id="eval-summary", markup=False)
        yield DataTable(id="eval-trials", cursor_type="row", zebra_stripes=True)
        yield Static(HINT, id="eval-hint", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Read the folder now and then every `poll_s` seconds."""
        table: DataTable[Text] = self.query_one(DataTable)
        table.border_title = Text(f"trials · {self.out_dir}")  # a path, not markup
        table.focus()
        self.action_refresh()
        self.set_interval(self.poll_s, self.action_refresh)

    def action_refresh(self) -> None:
        """Read the run's folder again (in a thread) and show what changed."""
        self._scan()

    @work(thread=True, exclusive=True, group="eval-scan")
    def _scan(self) -> None:
        trials, unreadable = scan(self.out_dir, self._cache)
        self.app.call_from_thread(self._show, trials, len(unreadable))

    def _fit_columns(self, table: DataTable[Text]) -> bool:
        """(Re)make the columns when the width changed; True when the table was rebuilt."""
        fixed = sum(width + CELL_PADDING for _, width in COLUMNS)
        room = self.size.width - 2 - 1 - CELL_PADDING  # border, scrollbar, the task's padding
        width = min(MAX_TASK_WIDTH, max(8, room - fixed))
        if width == self._task_width and table.columns:
            return False
        self._task_width = width
        table.clear(columns=True)
        table.add_column("task", width=width, key="task")
        for name, column_width in COLUMNS:
            table.add_column(name, width=column_width, key=name)
        return True

    def _show(self, trials: list[Trial], unreadable: int) -> None:
        table: DataTable[Text] = self.query_one(DataTable)
        rebuilt = self._fit_columns(table)
        order = [t.trial_id for t in trials]
        now = time.time()
        if rebuilt or order != list(self.trials):
            cursor = self._cursor_trial(table)
            table.clear()
            for trial in trials:
                table.add_row(*trial_cells(trial, self._task_width, now), key=trial.trial_id)
            if cursor in order:
                table.move_cursor(row=order.index(cursor))
        else:
            for trial in trials:
                old = self.trials.get(trial.trial_id)
                if old != trial or trial.state == "running":
                    cells = trial_cells(trial, self._task_width, now)
                    keys = ["task", *(name for name, _ in COLUMNS)]
                    for key, cell in zip(keys, cells, strict=True):
                        table.update_cell(trial.trial_id, key, cell)
        self.trials = {t.trial_id: t for t in trials}
        self.unreadable = unreadable
        self.query_one("#eval-summary", Static).update(summary_text(trials, unreadable))
        self.polls += 1

    def _cursor_trial(self, table: DataTable[Text]) -> str | None:
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return str(key.value) if key.value is not None else None

    def on_resize(self) -> None:
        """Fit the task column to the new width."""
        if self.trials or self.polls:
            self._show(list(self.trials.values()), self.unreadable)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Open the chosen trial's conversation, if it has one yet."""
        trial = self.trials.get(str(event.row_key.value))
        if trial is None:
            return
        log = trial.session_log
        if log is None:
            why = {"queued": "has not started", "running": "is still running"}
            self.last_notice = (
                f"{one_line(trial.trial_id)} {why.get(trial.state, 'left no session log')}."
            )
            self.notify(self.last_notice, severity="warning", markup=False)
            return
        self.app.push_screen(TrialConversationScreen(trial, log))


class EvalWatchApp(App[int]):
    """The app of `workbench eval watch DIR`: the run screen, in workbench's default theme."""

    TITLE = "workbench eval watch"

    def __init__(self, out_dir: Path, poll_s: float = POLL_S) -> None:
        super().__init__()
        self.out_dir = Path(out_dir)
        self.poll_s = poll_s
        loaded = theme_files.load_themes([theme_files.builtin_themes_dir()])
        for theme in loaded.themes.values():
            self.register_theme(theme)
        if theme_files.DEFAULT_THEME in self.available_themes:
            self.theme = theme_files.DEFAULT_THEME

    def on_mount(self) -> None:
        """Show the run."""
        self.push_screen(EvalRunScreen(self.out_dir, self.poll_s))
