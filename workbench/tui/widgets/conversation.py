"""The conversation pane: every session event as a compact cell, in one virtualized widget."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.strip import Strip

from workbench.events import Event
from workbench.tui.cells import Cell, cell_for_event, first_line, thought_cell
from workbench.tui.messages import BranchRequested, RewindRequested, StrayKey
from workbench.tui.widgets.cell_list import CellList

_EVENT_KEY = re.compile(r"e(\d+)")
CELL_KEYS = frozenset({"j", "k", "c", "e", "b", "r", "space"})
"""The printable keys that act on the cell under the cursor; other letters are typed."""
KEYS_HINT = "j/k move · ⏎ expand · c copy · e edit · b branch · r rewind · letters type"
NO_CELL_HINT = "no cell yet · letters go to the input box"


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

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "conversation"
        self._typing_away = False
        self.workspace = ""
        """The workspace's path, shown in the border title (see `set_welcome`)."""
        self.welcome: list[Text] = []
        """Shown under `empty_text` while there are no cells (see `set_welcome`)."""

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
        self.border_title = f"conversation · {shown}"

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

    def on_key(self, event: events.Key) -> None:
        """A letter that is not a cell's key (any letter while there is no cell) goes to the
        input box and is typed there."""
        if not event.is_printable or event.character is None:
            return
        # Once a letter went to the input box, the keys typed with it (already on their way
        # here, before the focus moves) follow it, cell keys too.
        own_key = event.key == "question_mark" or (self.cells and event.key in CELL_KEYS)
        if own_key and not self._typing_away:
            return
        self._typing_away = True
        event.stop()
        event.prevent_default()
        self.post_message(StrayKey(event.character))

    def on_focus(self, event: events.Focus) -> None:
        """Say in the border which keys act on cells."""
        self.border_subtitle = KEYS_HINT if self.cells else NO_CELL_HINT
        super().on_focus(event)

    def on_blur(self, event: events.Blur) -> None:
        """See `on_focus`."""
        self._typing_away = False
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
