"""A terminal-like output view: appends text chunks (partial lines included), draws visible rows.

Chunks arrive in any split (half a line, many lines); the last line stays open until its
newline, a carriage return rewrites the open line (progress bars), escape sequences are
stripped. Appending is a list operation; drawing touches only the rows on screen, so 100 000
lines stream in at list speed. Old lines beyond `max_lines` are dropped from the top.

Long lines wrap (`wrap=True`, the default): each line's row count at the current width is kept
as a running sum, so a row maps to its line with a binary search; a new width recounts them.
"""

from __future__ import annotations

import bisect

from rich.cells import chop_cells
from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from workbench.display import strip_ansi


def _apply_carriage_returns(line: str) -> str:
    body = line.rstrip("\r")
    return body.rsplit("\r", 1)[-1] if "\r" in body else body


class OutputView(ScrollView, can_focus=True):
    """Append-only shell output drawn through the Line API."""

    DEFAULT_CSS = """
    OutputView { background: $surface; }
    """

    def __init__(
        self,
        max_lines: int = 50_000,
        *,
        wrap: bool = True,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.max_lines = max_lines
        self.wrap = wrap
        self._row_width = 0
        """The width the rows are counted at (0: not laid out yet, one row a line)."""
        self._ends: list[int] = [1]
        """For each held line, the rows up to and including it, counted from the first line
        ever held (so dropping lines from the top changes no entry: `_row_base` moves)."""
        self._row_base = 0
        self.lines: list[str] = [""]
        self._marks: dict[int, str] = {}
        """Absolute line number -> style name ("command", "note") for lines drawn in colour."""
        self._dropped = 0
        self._width = 0
        self.lines_received = 0
        """Complete lines appended since the start (dropped ones included)."""
        self.follow = True
        """Keep the last line in view as output arrives and when the view changes height."""
        self._end_pending = False

    @property
    def line_count(self) -> int:
        """Lines held (the open last line counts when it has text)."""
        return len(self.lines) - (0 if self.lines[-1] else 1)

    def text(self) -> str:
        """Everything held, as one string."""
        return "\n".join(self.lines)

    def append(self, data: str) -> None:
        """Add raw output: partial lines continue the open line."""
        if not data:
            return
        data = strip_ansi(data).replace("\r\n", "\n")
        first = len(self.lines) - 1  # the open line changes; lines after it are new
        parts = data.split("\n")
        self.lines_received += len(parts) - 1
        lines = self.lines
        lines[-1] += parts[0]
        if "\r" in lines[-1]:
            lines[-1] = _apply_carriage_returns(lines[-1])
        if len(parts) > 1:
            rest = parts[1:]
            if "\r" in data:
                rest = [_apply_carriage_returns(line) for line in rest]
            lines.extend(rest)
        widest = max(len(line) for line in parts) if len(parts) < 64 else max(map(len, parts))
        self._width = max(self._width, widest)
        self._after_change(first)

    def append_marked(self, line: str, mark: str) -> None:
        """Start a new line in colour (`mark`: "command", "note" or "error")."""
        first = len(self.lines) - 1
        if self.lines[-1]:
            self.lines.append("")
        self._marks[self._dropped + len(self.lines) - 1] = mark
        self.lines[-1] = line
        self.lines.append("")
        self._width = max(self._width, len(line))
        self._after_change(first)

    def clear(self) -> None:
        """Forget all output."""
        self.lines = [""]
        self._marks.clear()
        self._dropped = 0
        self._width = 0
        self._ends = [1]
        self._row_base = 0
        self._after_change(0)

    def _rows_of(self, line: str) -> int:
        width = self._row_width
        if not self.wrap or width <= 0:
            return 1
        text = line.expandtabs(8)
        if text.isascii():
            return max(1, -(-len(text) // width))
        return max(1, len(chop_cells(text, width)))

    def _recount_from(self, index: int) -> None:
        """Count the rows of the lines from `index` on again."""
        ends = self._ends
        del ends[index:]
        total = ends[-1] if ends else self._row_base
        rows_of = self._rows_of
        for line in self.lines[index:]:
            total += rows_of(line)
            ends.append(total)

    @property
    def row_count(self) -> int:
        """Rows the held lines take at the current width (an empty open last line: none)."""
        rows = self._ends[-1] - self._row_base
        return rows - (0 if self.lines[-1] else self._ends[-1] - self._row_start(-1))

    def _row_start(self, index: int) -> int:
        """The absolute row where line `index` starts."""
        index %= len(self.lines)
        return self._ends[index - 1] if index else self._row_base

    def _after_change(self, first: int) -> None:
        self._recount_from(first)
        excess = len(self.lines) - self.max_lines
        if excess > 0:
            del self.lines[:excess]
            self._dropped += excess
            self._marks = {k: v for k, v in self._marks.items() if k >= self._dropped}
            self._row_base = self._ends[excess - 1]
            del self._ends[:excess]
        at_end = self.follow or self.scroll_y >= self.max_scroll_y - 1
        self._update_virtual_size()
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
            self.follow = True
            # The new size is laid out only at the next refresh (the vertical scrollbar may
            # just have appeared), which can clamp the scroll above: go to the end again.
            self._scroll_to_end_after_refresh()
        self.refresh()

    def _update_virtual_size(self) -> None:
        # The open last line takes no row until it has text: the newest output sits at the
        # bottom, even in a one-row view.
        if self.wrap and self._row_width > 0:
            self.virtual_size = Size(self._row_width, self.row_count)
        else:
            self.virtual_size = Size(self._width + 1, self.line_count)

    def _scroll_to_end_after_refresh(self) -> None:
        """Go to the end once the new size is laid out (asked only while following it)."""
        if not self._end_pending:
            self._end_pending = True
            self.call_after_refresh(self._scroll_to_end)

    def _scroll_to_end(self) -> None:
        # Not conditional on `follow`: the layout's own clamp of the scroll (to the old, smaller
        # range) also goes through `watch_scroll_y` and would have turned following off.
        self._end_pending = False
        self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.follow = True

    def watch_scroll_y(self, old: float, new: float) -> None:
        """Scrolling up stops following the end; scrolling back down resumes it."""
        super().watch_scroll_y(old, new)
        self.follow = round(new) >= self.max_scroll_y - 1

    def on_resize(self, event: events.Resize) -> None:
        """Lines wrap to the new width; a shorter view (the confirmation panel came) still
        shows the latest line."""
        # The scrollbar's column is always left free, so its coming does not change the rows.
        width = max(1, self.content_region.width - self.styles.scrollbar_size_vertical)
        if self.wrap and width != self._row_width:
            self._row_width = width
            self._recount_from(0)
            self._update_virtual_size()
            self.refresh()
        if self.follow:
            self._scroll_to_end_after_refresh()

    def _mark_style(self, mark: str) -> Style:
        variables = self.app.theme_variables
        name = {"command": "wb-action", "note": "wb-muted", "error": "wb-error"}.get(mark, "")
        color = variables.get(name, "")
        return Style.parse(color) + Style(bold=mark == "command") if color else Style()

    def render_line(self, y: int) -> Strip:
        """The row `y` rows below the top of the view."""
        if y == 0 and self.follow and round(self.scroll_y) < self.max_scroll_y - 1:
            # Following, yet drawn above the end: a layout came after the last scroll to the
            # end (under load the order of refreshes varies). Go there once this frame is out.
            self._scroll_to_end_after_refresh()
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        row = scroll_y + y
        part = 0
        if self.wrap and self._row_width > 0:
            index = bisect.bisect_right(self._ends, self._row_base + row)
            if index < len(self.lines):
                part = self._row_base + row - self._row_start(index)
        else:
            index = row
        if index >= len(self.lines):
            return Strip.blank(width, self.rich_style)
        line = self.lines[index].expandtabs(8)
        if self.wrap and self._row_width > 0:
            size = self._row_width
            if line.isascii():
                line = line[part * size : (part + 1) * size]
            else:
                chunks = chop_cells(line, size)
                line = chunks[part] if part < len(chunks) else ""
        mark = self._marks.get(self._dropped + index)
        # A Text's own `style` is dropped by `render`; a span's style is kept.
        text = Text.assemble((line, self._mark_style(mark) if mark else ""), no_wrap=True, end="")
        strip = Strip(text.render(self.app.console), text.cell_len).apply_style(self.rich_style)
        return strip.crop_extend(scroll_x, scroll_x + width, self.rich_style)
