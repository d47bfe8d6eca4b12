"""The conversation pane: every session event as a compact cell, in one virtualized widget.

An action and its result share one row (`result_cell`): the result, when it comes, replaces
the action's cell. A model call in flight is the last row (`show_activity`): its elapsed time
ticks, the reply streams into it, and it goes when the call ends.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType

from workbench.events import ActionEvent, Event, LLMActivity, ObservationEvent
from workbench.tui.cells import (
    Cell,
    cell_for_event,
    first_line,
    llm_call_cell,
    result_cell,
    thought_cell,
)
from workbench.tui.messages import BranchRequested
from workbench.tui.widgets.cell_list import CellList

if TYPE_CHECKING:
    from textual.timer import Timer

_EVENT_KEY = re.compile(r"e(\d+)")
OPEN_TAIL = 200
"""A loaded session shows the messages of its last this many cells whole (older ones as their
first line, one key away): the heights of thousands of wrapped texts are not computed up front."""
TICK_S = 0.1
"""How often the model-call row is redrawn while text streams (its clock shows seconds)."""
_LIVE_KEY = "llm-live"


class ConversationView(CellList):
    """User and agent messages, tool calls and results; enter expands, c copies, b branches."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "branch_here", "Branch"),
    ]

    empty_text = "No task yet: type one below and press enter."

    def __init__(self, *, id: str | None = None, clock: Callable[[], float] | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "conversation"
        self.clock = clock or time.monotonic
        """The time the model-call row counts from (`time.monotonic`, as the controller's)."""
        self._actions: dict[int, tuple[int, ActionEvent]] = {}
        """Actions waiting for their result: their cell's index, and the action."""
        self._activity: LLMActivity | None = None
        self._retries = 0
        self._shown = ""
        """The model-call row's title and text as last drawn (redrawn only when they change)."""
        self._ticker: Timer | None = None

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
        self._actions.clear()
        self._end_activity()
        super().clear()

    def add_events(self, events: Iterable[Event], live: bool = True) -> None:
        """Append the cells of `events` (those the conversation shows); a result goes into
        its action's row."""
        live_row = self.pop_cell() if self._has_live_row() else None
        base = len(self.cells)
        cells: list[Cell] = []
        actions = self._actions
        for event in events:
            if isinstance(event, ObservationEvent):
                waiting = actions.pop(event.cause, None)
                if waiting is not None and self._merge(waiting, event, cells, base):
                    continue
            elif isinstance(event, ActionEvent):
                thought = thought_cell(event, live)
                if thought is not None:
                    cells.append(thought)
                cell = cell_for_event(event, live=live)
                if cell is not None:
                    actions[event.id] = (base + len(cells), event)
                    cells.append(cell)
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

    def _merge(
        self,
        waiting: tuple[int, ActionEvent],
        result: ObservationEvent,
        cells: list[Cell],
        base: int,
    ) -> bool:
        """Put `result` into its action's row (in `cells`, the batch starting at row `base`,
        or already shown); False when the result has no cell of its own."""
        index, action = waiting
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
