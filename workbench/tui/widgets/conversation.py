"""The conversation pane: every session event as a compact cell, in one virtualized widget.

An action and its result share one row (`result_cell`): the result, when it comes, replaces
the action's cell. A model call in flight is the last row (`show_activity`): its elapsed time
ticks, the reply streams into it, and it goes when the call ends. The events and their cells
(`cells.py`, which loads every tool) are imported with the first event, after the first paint.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.strip import Strip

from workbench.display import Cell, first_line
from workbench.tui.messages import BranchRequested, RewindRequested
from workbench.tui.widgets.cell_list import CellList

if TYPE_CHECKING:
    from textual.timer import Timer

    from workbench.events import ActionEvent, CheckpointEvent, Event, LLMActivity, ObservationEvent

_EVENT_KEY = re.compile(r"e(\d+)")
OPEN_TAIL = 200
"""A loaded session shows the messages of its last this many cells whole (older ones as their
first line, one key away): the heights of thousands of wrapped texts are not computed up front."""
TICK_S = 0.1
"""How often the model-call row is redrawn while text streams (its clock shows seconds)."""
_LIVE_KEY = "llm-live"
EDITOR_TOOL = "str_replace_editor"
CELL_KEYS = frozenset({"j", "k", "c", "e", "b", "r", "space"})
"""The printable keys that act on the cell under the cursor; other letters are typed."""
KEYS_HINT = "j/k move · ⏎ expand · c copy · e edit · b branch · r rewind · letters type"
NO_CELL_HINT = "no cell yet · letters go to the input box"


@dataclass
class ActionRow:
    """An action's row in the conversation while its result or its checkpoint is to come."""

    index: int
    action: ActionEvent
    result_due: bool = True
    """Its result, merged into the row when it comes."""
    checkpoint_due: bool = True
    """Its step's checkpoint, whose changed files the row then lists."""


class ConversationView(CellList):
    """User and agent messages, tool calls and results; enter expands, c copies, b branches,
    r rewinds the workspace's files to a cell."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Not in the footer (which 80 columns cannot hold): the border lists them while the
        # conversation has the focus.
        Binding("b", "branch_here", "Branch", show=False),
        Binding("r", "rewind_here", "Rewind", show=False),
    ]

    empty_text = "No task yet: type one below and press enter."

    def __init__(self, *, id: str | None = None, clock: Callable[[], float] | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "conversation"
        self.clock = clock or time.monotonic
        """The time the model-call row counts from (`time.monotonic`, as the controller's)."""
        self._action_rows: dict[int, ActionRow] = {}
        """Actions whose result or checkpoint is still to come, by id: their row."""
        self._activity: LLMActivity | None = None
        self._retries = 0
        self._shown = ""
        """The model-call row's title and text as last drawn (redrawn only when they change)."""
        self._ticker: Timer | None = None
        self._diffs: dict[str, tuple[str | None, str]] = {}
        """Rows whose step changed files, by key: the commits before and after the step."""
        self._last_commit: str | None = None
        self.diff_of: Callable[[str | None, str], str] | None = None
        """The unified diff between two checkpoints of the workspace shown (set by the app)."""
        self.workspace = ""
        """The workspace's path, shown in the border title (see `set_welcome`)."""
        self.welcome: list[Text] = []
        """Shown under `empty_text` while there are no cells (see `set_welcome`)."""

    def show_image(self, keys: tuple[str, ...], data: bytes) -> None:
        """Draw `data` (a PNG or JPEG) below the body of the first cell found among `keys`
        (a tool's result: its own cell, else the row its action shares with it)."""
        for key in keys:
            for index, cell in enumerate(self.cells):
                if cell.key == key:
                    self.replace_cell(index, dataclasses.replace(cell, image=data))
                    return

    def set_welcome(self, workspace: str, model: str) -> None:
        """The welcome shown while the conversation is empty: the workspace, the model, the
        keys that matter; the workspace stays in the border title."""
        self.workspace = workspace
        self._show_title()
        key, muted = "bold", "dim"
        self.welcome = [
            Text(""),
            Text.assemble(("workspace  ", muted), workspace),
            Text.assemble(
                ("model      ", muted),
                model or "none set",
                ("  ctrl+s", key),
                (" to change", muted),
            ),
            Text(""),
            Text.assemble(("enter      ", key), "send a task (queued while the agent works)"),
            Text.assemble(("F1         ", key), "help: every key (? too, outside the input box)"),
            Text.assemble(("esc esc    ", key), "interrupt the agent"),
        ]
        self.refresh()

    def _show_title(self) -> None:
        """ "conversation · WORKSPACE" in the border, the workspace's end kept when it is long."""
        if not self.workspace:
            return
        room = max(8, self.size.width - len("conversation · ") - 6)
        shown = self.workspace if len(self.workspace) <= room else "…" + self.workspace[1 - room :]
        self.border_title = Text(f"conversation · {shown}")  # a path, not markup

    def on_resize(self, event: events.Resize) -> None:
        """The border title fits the new width."""
        super().on_resize(event)
        self._show_title()

    def render_line(self, y: int) -> Strip:
        """The welcome while there are no cells, else the cells."""
        row = round(self.scroll_y) + y
        if self.cells or not 1 <= row <= len(self.welcome):
            return super().render_line(y)
        width = self.scrollable_content_region.width
        text = self.welcome[row - 1].copy()
        if text.cell_len > width and text.plain.startswith("workspace"):  # keep its end
            text = Text.assemble(("workspace  ", "dim"), "…" + text.plain[-(width - 12) :])
        text.no_wrap, text.end = True, ""
        text.truncate(width, overflow="ellipsis")
        strip = Strip(text.render(self.app.console), text.cell_len).apply_style(self.base_style)
        return strip.crop_extend(0, width, self.base_style)

    def on_focus(self, event: events.Focus) -> None:
        """Say in the border which keys act on cells."""
        self.border_subtitle = KEYS_HINT if self.cells else NO_CELL_HINT
        super().on_focus(event)

    def on_blur(self, event: events.Blur) -> None:
        """See `on_focus`."""
        self.border_subtitle = ""
        super().on_blur(event)

    def show_waiting_task(self, task: str) -> None:
        """Say that `task` starts once start-up is done ("" goes back to the usual hint)."""
        if task:
            first = first_line(task)
            self.empty_text = f"Starting once the LLM client and the sandbox are ready: {first}"
        else:
            self.empty_text = type(self).empty_text
        self.refresh()

    def clear(self) -> None:
        """Remove every cell (and forget the actions waiting for a result)."""
        self._action_rows.clear()
        self._diffs.clear()
        self._last_commit = None
        self._end_activity()
        super().clear()

    def add_events(self, events: Iterable[Event], live: bool = True) -> None:
        """Append the cells of `events` (those the conversation shows); a result goes into
        its action's row."""
        from workbench.events import ActionEvent, CheckpointEvent, ObservationEvent
        from workbench.tui.cells import cell_for_event, thought_cell

        live_row = self.pop_cell() if self._has_live_row() else None
        base = len(self.cells)
        cells: list[Cell] = []
        for event in events:
            if isinstance(event, ObservationEvent):
                waiting = self._awaiting(event.cause, result=True)
                if waiting is not None and self._merge(waiting, event, cells, base):
                    continue
            elif isinstance(event, ActionEvent):
                thought = thought_cell(event, live)
                if thought is not None:
                    cells.append(thought)
                cell = cell_for_event(event, live=live)
                if cell is not None:
                    self._action_rows[event.id] = ActionRow(base + len(cells), event)
                    cells.append(cell)
                continue
            elif isinstance(event, CheckpointEvent):
                self._note_checkpoint(event, cells, base)
                continue
            cell = cell_for_event(event, live=live)
            if cell is not None:
                cells.append(cell)
        if not live:
            for cell in cells[-OPEN_TAIL:]:
                cell.expanded = cell.expanded or cell.inline
        self.add_cells(cells)
        if live_row is not None:
            self.add_cells([live_row])

    def _note_checkpoint(self, event: CheckpointEvent, cells: list[Cell], base: int) -> None:
        """Show what the step's action changed in the workspace on its row: file counts, the
        files on expand, and their diff once expanded (read from the checkpoint store)."""
        from workbench.tui.cells import with_files

        before, self._last_commit = self._last_commit, event.commit
        row = self._awaiting(event.cause, result=False)
        if row is None or not (event.added or event.changed or event.deleted):
            return
        index, tool = row.index, row.action.tool_name
        shown = cells[index - base] if index >= base else self.cells[index]
        cell = shown if index >= base else dataclasses.replace(shown)
        # An edit's own row already counts its lines; files matter for everything else.
        with_files(cell, event, counts=tool != EDITOR_TOOL)
        self._diffs[cell.key] = (before, event.commit)
        if index < base:
            self.replace_cell(index, cell)

    def action_toggle_cell(self) -> None:
        """Expand or collapse the cell under the cursor; a row whose step changed files
        shows their diff when it first opens."""
        from workbench.tui.cells import show_diff

        cell = self.current()
        if cell is not None and not cell.expanded and cell.key in self._diffs:
            before, after = self._diffs.pop(cell.key)
            if self.diff_of is not None:
                show_diff(cell, self.diff_of, before, after)
                self.replace_cell(self.cursor, cell)
        super().action_toggle_cell()

    def _awaiting(self, cause: int | None, result: bool) -> ActionRow | None:
        """The row of action `cause` if its result (`result`), else its checkpoint, is still
        to come; from now on it is not."""
        row = self._action_rows.get(cause) if cause is not None else None
        if row is None or not (row.result_due if result else row.checkpoint_due):
            return None
        if result:
            row.result_due = False
        else:
            row.checkpoint_due = False
        if not (row.result_due or row.checkpoint_due):
            del self._action_rows[row.action.id]
        return row

    def _merge(
        self,
        waiting: ActionRow,
        result: ObservationEvent,
        cells: list[Cell],
        base: int,
    ) -> bool:
        """Put `result` into its action's row (in `cells`, the batch starting at row `base`,
        or already shown); False when the result has no cell of its own."""
        from workbench.tui.cells import result_cell

        index, action = waiting.index, waiting.action
        if index >= base:  # in this batch: changed in place, laid out with the batch
            return result_cell(action, result, cells[index - base]) is not None
        merged = result_cell(action, result)
        if merged is None:
            return False
        merged.expanded = self.cells[index].expanded
        self.replace_cell(index, merged)
        return True

    # ------------------------------------------------------------------ the model call

    def show_activity(self, activity: LLMActivity) -> None:
        """A model call started, streamed, was retried or ended: update its row."""
        if activity.phase == "end":
            self._end_activity()
            return
        if activity.phase == "start":
            self._retries = 0
        elif activity.phase == "retry":
            self._retries += 1
        self._activity = activity
        if self._ticker is None:
            self._ticker = self.set_interval(TICK_S, self._draw_activity)
        if activity.phase != "text" or not self._has_live_row():
            self._draw_activity()  # streamed text waits for the next tick: one render per tick

    def _has_live_row(self) -> bool:
        return bool(self.cells) and self.cells[-1].key == _LIVE_KEY

    def _draw_activity(self) -> None:
        from workbench.tui.cells import llm_call_cell

        if self._activity is None:
            return
        cell = llm_call_cell(self._activity, self.clock(), self._retries)
        drawn = f"{cell.title}\0{cell.body}"
        if drawn == self._shown and self._has_live_row():
            return
        self._shown = drawn
        following = self.follow
        if self._has_live_row():
            self.replace_cell(len(self.cells) - 1, cell)
        else:
            self.add_cells([cell])
        if following:
            self.cursor = len(self.cells) - 1
            self.scroll_end(animate=False, immediate=True)

    def _end_activity(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None
        self._activity = None
        self._shown = ""
        if self._has_live_row():
            self.pop_cell()

    # ------------------------------------------------------------------ branching

    def event_id_at_cursor(self) -> int | None:
        """The id of the event the cell under the cursor shows (None without one)."""
        cell = self.current()
        match = _EVENT_KEY.match(cell.key) if cell is not None else None
        return int(match.group(1)) if match else None

    def action_branch_here(self) -> None:
        """Ask the app for a new session with the history up to the cell under the cursor."""
        event_id = self.event_id_at_cursor()
        if event_id is None:
            self.notify("No cell here to branch from.", severity="warning")
            return
        self.post_message(BranchRequested(event_id))

    def action_rewind_here(self) -> None:
        """Ask the app to rewind the files to the cell under the cursor, then go on from there."""
        event_id = self.event_id_at_cursor()
        if event_id is None:
            self.notify("No cell here to rewind to.", severity="warning")
            return
        self.post_message(RewindRequested(event_id))
