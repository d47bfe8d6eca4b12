"""The conversation pane: every session event as a compact cell, in one virtualized widget."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import ClassVar

from textual.binding import Binding, BindingType

from workbench.events import Event
from workbench.tui.cells import Cell, cell_for_event, first_line, thought_cell
from workbench.tui.messages import BranchRequested, RewindRequested
from workbench.tui.widgets.cell_list import CellList

_EVENT_KEY = re.compile(r"e(\d+)")


class ConversationView(CellList):
    """User and agent messages, tool calls and results; enter expands, c copies, b branches,
    r rewinds the workspace's files to a cell."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "branch_here", "Branch"),
        Binding("r", "rewind_here", "Rewind"),
    ]

    empty_text = "No task yet: type one below and press enter."

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "conversation"

    def show_image(self, key: str, data: bytes) -> None:
        """Draw `data` (a PNG or JPEG) below the body of the cell `key` (a tool's result)."""
        for index, cell in enumerate(self.cells):
            if cell.key == key:
                self.replace_cell(index, dataclasses.replace(cell, image=data))
                return

    def show_waiting_task(self, task: str) -> None:
        """Say that `task` starts once start-up is done ("" goes back to the usual hint)."""
        if task:
            first = first_line(task)
            self.empty_text = f"Starting once the LLM client and the sandbox are ready: {first}"
        else:
            self.empty_text = type(self).empty_text
        self.refresh()

    def add_events(self, events: Iterable[Event], live: bool = True) -> None:
        """Append the cells of `events` (those the conversation shows)."""
        cells: list[Cell] = []
        for event in events:
            for cell in (thought_cell(event, live), cell_for_event(event, live=live)):
                if cell is not None:
                    cells.append(cell)
        self.add_cells(cells)

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
