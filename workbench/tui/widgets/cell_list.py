"""A virtualized list of compact cells: one widget draws only the rows on screen.

Every cell has a known height (1 row collapsed; its rendered body plus the title expanded), so
a row number maps to a cell with a binary search over cumulative offsets. Bodies are rendered
with Rich (Markdown, Pygments, plain text, half-cell images) when first shown and kept in a
small cache; collapsed cells cost no rendering at all. Keys: up/down move the cursor, enter
expands, c copies, e opens the cell in $EDITOR.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Iterable
from itertools import accumulate
from typing import TYPE_CHECKING, Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from workbench.display import Cell
from workbench.tui.widgets.cell_editor import open_in_editor
from workbench.tui.widgets.cell_render import MIN_IMAGE_ROWS, body_strips

if TYPE_CHECKING:
    pass

_CACHE_SIZE = 256
_INLINE_INDENT = 4
"""Columns before an inline cell's text: the marker, the icon and a space."""
_BLOCK_STARTS = frozenset("#>-*+|`~=_0123456789")
"""First characters of Markdown that renders as more than its own line (headings, lists)."""
_ROLE_VARIABLE = {
    "user": "wb-user",
    "agent": "wb-agent",
    "action": "wb-action",
    "observation": "wb-observation",
    "error": "wb-error",
    "confirm": "warning",
    "state": "wb-muted",
}


class CellList(ScrollView, can_focus=True):
    """Cells drawn through the Line API; the row count never becomes a widget count."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("home", "cursor_to(0)", "First", show=False),
        Binding("end", "cursor_to(-1)", "Last", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("enter,space", "toggle_cell", "Expand"),
        Binding("c", "copy", "Copy"),
        Binding("e", "edit", "Editor", show=False),
    ]

    DEFAULT_CSS = """
    CellList { background: $surface; }
    """

    empty_text = ""
    """Shown, muted, on the first row while there are no cells (what will appear here)."""

    def __init__(
        self, *, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.cells: list[Cell] = []
        self._heights: list[int] = []
        self._starts: list[int] = []
        self._total = 0
        self._bodies: OrderedDict[str, list[Strip]] = OrderedDict()
        self._body_width = 0
        self._body_height = 0
        self._typing_away = False
        self.cursor = -1
        self.follow = True
        """Keep the view (and the cursor) at the end as cells arrive."""
        self._pygments = "monokai"
        self._styles: dict[str, Style] = {}
        self._base: Style | None = None
        self._headers: dict[tuple[str, bool, int, int], Strip] = {}

    # ------------------------------------------------------------------ content

    def add_cells(self, cells: Iterable[Cell]) -> None:
        """Append cells (the view follows the end when it was there)."""
        added = list(cells)
        if not added:
            return
        was_at_end = self.follow
        width = self._content_width()
        for cell in added:
            height = self._height(cell, width)
            self._starts.append(self._total)
            self._heights.append(height)
            self._total += height
            self.cells.append(cell)
        if was_at_end:
            self.cursor = len(self.cells) - 1
        self._update_size()
        if was_at_end:
            self.scroll_to(
                y=max(0, self._total - self.scrollable_content_region.height),
                animate=False,
                immediate=True,
            )
        self.refresh()

    def replace_cell(self, index: int, cell: Cell) -> None:
        """Put `cell` in place of the cell at `index` (e.g. an output that grew)."""
        old = self.cells[index].key
        self._bodies.pop(old, None)
        self._bodies.pop(cell.key, None)
        for key in [key for key in self._headers if key[0] in (old, cell.key)]:
            del self._headers[key]
        self.cells[index] = cell
        self._update_height(index)

    def pop_cell(self) -> Cell | None:
        """Remove the last cell and return it (None when there is none)."""
        if not self.cells:
            return None
        cell = self.cells.pop()
        self._bodies.pop(cell.key, None)
        self._headers = {key: strip for key, strip in self._headers.items() if key[0] != cell.key}
        self._starts.pop()
        self._total -= self._heights.pop()
        self.cursor = min(self.cursor, len(self.cells) - 1)
        self._update_size()
        self.refresh()
        return cell

    def clear(self) -> None:
        """Remove every cell."""
        self.cells.clear()
        self._heights.clear()
        self._starts.clear()
        self._bodies.clear()
        self._headers.clear()  # keys (e1, e2 ...) repeat from one session to the next
        self._total = 0
        self.cursor = -1
        self.follow = True
        self._update_size()
        self.scroll_to(y=0, animate=False, immediate=True)
        self.refresh()

    def set_pygments_style(self, name: str) -> None:
        """Use the Pygments style `name` for code and re-render the bodies."""
        self._pygments = name
        self.restyle()

    def restyle(self) -> None:
        """Drop rendered rows (after a theme change) and lay out again."""
        self._base = None
        self._headers.clear()
        self._styles.clear()
        self._bodies.clear()
        self._relayout_from(0)

    # ------------------------------------------------------------------ layout

    def _relayout_from(self, index: int) -> None:
        width = self._content_width()
        for i in range(index, len(self.cells)):
            self._heights[i] = self._height(self.cells[i], width)
        self._starts = [0, *accumulate(self._heights)][: len(self._heights)]
        self._total = sum(self._heights)
        self._update_size()
        self.refresh()

    def _update_height(self, index: int) -> None:
        """One cell changed height: shift the cells after it (a view at the end stays there,
        e.g. when an image arrives in the last cell)."""
        following = self.follow
        delta = self._height(self.cells[index], self._content_width()) - self._heights[index]
        if delta:
            self._heights[index] += delta
            starts = self._starts
            for i in range(index + 1, len(starts)):
                starts[i] += delta
            self._total += delta
            self._update_size()
            if following and delta > 0:
                self.scroll_to(
                    y=max(0, self._total - self.scrollable_content_region.height),
                    animate=False,
                    immediate=True,
                )
        self.refresh()

    def _update_size(self) -> None:
        self.virtual_size = Size(self._content_width(), self._total)

    def _content_width(self) -> int:
        return max(1, self.scrollable_content_region.width)

    def _height(self, cell: Cell, width: int) -> int:
        """Rows the cell takes at `width` (the content width, which costs a lookup)."""
        if not cell.expanded or not cell.expandable:
            return 1
        if cell.inline:
            return 1 if self._fits_title(cell, width) else max(1, len(self._body(cell)))
        return 1 + len(self._body(cell))

    def _fits_title(self, cell: Cell, width: int) -> bool:
        """An inline cell whose text is one short line: its title row shows all of it (no
        rendering needed, which keeps a loaded session's many short messages cheap)."""
        body = cell.body.strip()
        return (
            cell.image is None
            and not cell.more
            and "\n" not in body
            and len(body) <= width - _INLINE_INDENT
            and body[:1] not in _BLOCK_STARTS
        )

    def on_resize(self, event: events.Resize) -> None:
        """Bodies wrap to the width, so a new width means new heights; the end stays in view."""
        following = self.follow
        self._rewrap_if_resized()
        if self.scrollable_content_region.height != self._body_height:
            # Images are sized to the view's height (F6 maximized the pane, say): draw again.
            self._body_height = self.scrollable_content_region.height
            drawn = [cell.key for cell in self.cells if cell.image and cell.key in self._bodies]
            for key in drawn:
                del self._bodies[key]
            if drawn:
                self._relayout_from(0)
        if following:  # e.g. the confirmation panel came or went and the pane changed height
            self.follow = True
            self.call_after_refresh(self.scroll_end, animate=False, immediate=True)

    def _rewrap_if_resized(self) -> None:
        """Bodies rendered for another width (the pane, or a scrollbar that came or went,
        changed it) are rendered again, and the heights follow."""
        if self._bodies and self._content_width() != self._body_width:
            self._bodies.clear()
            self._headers.clear()  # an open message's title row is its body's first row
            self._relayout_from(0)

    # ------------------------------------------------------------------ rendering

    @property
    def base_style(self) -> Style:
        """The pane's own colours (cached: Textual computes `rich_style` on every call)."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def _style(self, role: str) -> Style:
        style = self._styles.get(role)
        if style is None:
            variables = self.app.theme_variables
            color = variables.get(_ROLE_VARIABLE.get(role, "foreground"), "")
            style = Style.parse(color) if color else Style()
            self._styles[role] = style
        return style

    def _body(self, cell: Cell) -> list[Strip]:
        cached = self._bodies.get(cell.key)
        if cached is not None:
            self._bodies.move_to_end(cell.key)
            return cached
        width = self._content_width()
        self._body_width = width
        self._body_height = self.scrollable_content_region.height
        inner = max(8, width - (_INLINE_INDENT if cell.inline else 2))
        base = self.base_style
        if cell.inline:  # the text wraps under its first row, which the title row shows
            gutter = Segment(" " * _INLINE_INDENT, base)
        else:
            gutter = Segment("│ ", base + self._style(cell.role) + Style(dim=True))
        # Images: at most a view's height (so they can be seen whole), unless that is too
        # small to read: then they scroll, or F6 maximizes the pane.
        rows = max(MIN_IMAGE_ROWS, self.scrollable_content_region.height - 2)
        kitty = getattr(self.app, "image_mode", "halfcell") == "kitty"
        console = self.app.console
        strips = body_strips(cell, console, inner, gutter, base, self._pygments, (rows, kitty))
        self._bodies[cell.key] = strips
        if len(self._bodies) > _CACHE_SIZE:
            self._bodies.popitem(last=False)
        return strips

    def _header(self, index: int, width: int) -> Strip:
        cell = self.cells[index]
        mode = 2 if index == self.cursor and self.has_focus else int(index == self.cursor)
        key = (cell.key, cell.expanded, mode, width)
        cached = self._headers.get(key)
        if cached is not None:
            return cached
        if len(self._headers) > 4096:
            self._headers.clear()
        strip = self._title_strip(cell, width)
        if mode == 2:
            strip = strip.apply_style(Style(reverse=True))
        elif mode == 1:
            strip = strip.apply_style(Style(underline=True))
        self._headers[key] = strip
        return strip

    def _title_strip(self, cell: Cell, width: int) -> Strip:
        """The title row: marker, icon, title (or an open inline cell's first row of text),
        and the summary at the right end."""
        role = self._style(cell.role)
        inline = cell.inline and cell.expanded and cell.expandable
        fits = inline and self._fits_title(cell, width)
        expander = ("▾ " if cell.expanded else "▸ ") if cell.expandable else "  "
        marker = "  " if fits else expander  # all shown at once: nothing to expand
        head = Text.assemble(
            (marker, role + Style(dim=True)),
            (cell.icon + " ", role + Style(bold=True)),
            no_wrap=True,
            end="",
        )
        console = self.app.console
        if inline and not fits:
            body = self._body(cell)
            head.truncate(_INLINE_INDENT, pad=True)
            first = body[0].crop(_INLINE_INDENT) if body else Strip([])
            row = Strip.join([Strip(head.render(console), head.cell_len), first])
            return row.apply_style(self.base_style)
        head.append(cell.title.replace("\n", " "), role)
        summary = cell.summary if not inline else ""
        if summary:
            shown = Text(summary, self._style(cell.summary_role or cell.role), no_wrap=True, end="")
            shown.truncate(max(12, width // 2), overflow="ellipsis")
            room = max(1, width - shown.cell_len - 1)
            head.truncate(room, overflow="ellipsis")
            head.append(" " * (room - head.cell_len + 1), role)
            head.append_text(shown)
        head.truncate(width, overflow="ellipsis")
        return Strip(head.render(console), head.cell_len).apply_style(self.base_style)

    def _empty_line(self, width: int) -> Strip:
        text = Text.assemble((self.empty_text, self._style("state")), no_wrap=True, end="")
        text.truncate(width, overflow="ellipsis")
        strip = Strip(text.render(self.app.console), text.cell_len).apply_style(self.base_style)
        return strip.crop_extend(0, width, self.base_style)

    def render_line(self, y: int) -> Strip:
        """The row `y` rows below the top of the view."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        if self._bodies and max(1, width) != self._body_width:
            self._rewrap_if_resized()
        row = scroll_y + y
        if row >= self._total or not self.cells:
            if row == 0 and self.empty_text:
                return self._empty_line(width)
            return Strip.blank(width, self.base_style)
        index = bisect.bisect_right(self._starts, row) - 1
        offset = row - self._starts[index]
        cell = self.cells[index]
        if offset == 0:
            strip = self._header(index, width)
        else:
            body = self._body(cell)
            line = offset if cell.inline else offset - 1  # an inline cell's row 0 is its title
            strip = body[line] if line < len(body) else Strip.blank(width)
        return strip.crop_extend(scroll_x, scroll_x + width, self.base_style)

    # ------------------------------------------------------------------ navigation

    def _row_to_index(self, row: int) -> int:
        return max(0, bisect.bisect_right(self._starts, row) - 1)

    def watch_scroll_y(self, old: float, new: float) -> None:
        """Leaving the end stops following; coming back resumes it."""
        super().watch_scroll_y(old, new)
        self.follow = round(new) >= self.max_scroll_y

    def _show_cursor(self) -> None:
        if self.cursor < 0:
            return
        top, height = self._starts[self.cursor], self._heights[self.cursor]
        view = self.scrollable_content_region.height
        if top < self.scroll_y:
            self.scroll_to(y=top, animate=False, immediate=True)
        elif top + min(height, view) > self.scroll_y + view:
            self.scroll_to(y=top + min(height, view) - view, animate=False, immediate=True)
        self.refresh()

    def action_cursor(self, delta: int) -> None:
        """Move the cursor by `delta` cells."""
        if self.cells:
            self.cursor = min(len(self.cells) - 1, max(0, self.cursor + delta))
            self._show_cursor()

    def action_cursor_to(self, index: int) -> None:
        """Put the cursor on cell `index` (negative counts from the end)."""
        if self.cells:
            self.cursor = index % len(self.cells)
            self._show_cursor()

    def action_page(self, direction: int) -> None:
        """Scroll a page and put the cursor on the first cell in view."""
        view = self.scrollable_content_region.height
        self.scroll_to(y=self.scroll_y + direction * view, animate=False, immediate=True)
        if self.cells:
            self.cursor = self._row_to_index(round(self.scroll_y))
            self.refresh()

    def action_toggle_cell(self) -> None:
        """Expand or collapse the cell under the cursor."""
        if 0 <= self.cursor < len(self.cells) and self.cells[self.cursor].expandable:
            cell = self.cells[self.cursor]
            cell.expanded = not cell.expanded
            self._update_height(self.cursor)
            self._show_cursor()

    def current(self) -> Cell | None:
        """The cell under the cursor."""
        return self.cells[self.cursor] if 0 <= self.cursor < len(self.cells) else None

    def action_copy(self) -> None:
        """Copy the cell's text to the clipboard (OSC 52)."""
        cell = self.current()
        if cell is not None:
            text = cell.copy_text()
            self.app.copy_to_clipboard(text)
            self.notify(f"Copied {len(text)} characters", timeout=2)

    def action_edit(self) -> None:
        """Open the cell's text in $EDITOR (read it, search it, save a copy)."""
        cell = self.current()
        if cell is None:
            return
        open_in_editor(self, cell.copy_text(), cell.key)

    def on_key(self, event: events.Key) -> None:
        """A letter none of this list's keys takes (any letter while it has no cell) goes to
        the input box and is typed there: text typed while the Jupyter pane or the
        conversation had the focus was lost."""
        if not event.is_printable or event.character is None:
            return
        own_key = event.key == "question_mark" or (
            bool(self.cells) and event.key in self._bindings.key_to_bindings
        )
        # Once a letter went to the input box, the keys typed with it (already on their way
        # here, before the focus moves) follow it, the list's own keys too.
        if own_key and not self._typing_away:
            return
        from workbench.tui.messages import StrayKey

        self._typing_away = True
        event.stop()
        event.prevent_default()
        self.post_message(StrayKey(event.character, event.time))

    def on_click(self, event: events.Click) -> None:
        """A click selects a cell; a click on its title row expands it."""
        offset = event.get_content_offset(self)  # event.y counts the border's row too
        if offset is None:
            return
        row = round(self.scroll_y) + offset.y
        if 0 <= row < self._total:
            index = self._row_to_index(row)
            on_title = self._starts[index] == row
            self.cursor = index
            if on_title:
                self.action_toggle_cell()
            self.refresh()

    def on_focus(self, event: events.Focus) -> None:
        """The cursor row looks different while focused."""
        self.refresh()

    def on_blur(self, event: events.Blur) -> None:
        """See `on_focus`."""
        self._typing_away = False
        self.refresh()

    def _debug_state(self) -> dict[str, Any]:
        return {"cells": len(self.cells), "rows": self._total, "cursor": self.cursor}
