"""Images drawn with half-cell blocks (`▀`, upper pixel as foreground, lower as background),
keeping the picture's aspect ratio.

A terminal cell is about twice as tall as it is wide, so one cell shows two square pixels
stacked: an image `w` x `h` pixels fills `w` columns and `h / 2` rows at scale 1. Ours rather
than textual-image's: importing that package's renderables asks the terminal what it can draw,
and once Textual owns the terminal the answer (`ESC [?1;2c` under tmux) arrives as typed keys.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich.color import Color
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage
    from rich.console import Console, ConsoleOptions, RenderResult


def fit(width: int, height: int, max_columns: int, max_rows: int | None) -> tuple[int, int]:
    """Columns and rows that show a `width` x `height` picture as large as fits, never larger
    than its own pixels, its aspect ratio kept (two square pixels per cell)."""
    if width <= 0 or height <= 0 or max_columns <= 0 or (max_rows is not None and max_rows <= 0):
        return 0, 0
    scale = min(1.0, max_columns / width)
    if max_rows is not None:
        scale = min(scale, 2 * max_rows / height)
    columns = max(1, round(width * scale))
    rows = max(1, round(height * scale / 2))
    return columns, rows


def open_image(data: bytes) -> PILImage:
    """A PNG (or any format Pillow reads) as RGB pixels."""
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image.convert("RGB")


class HalfcellImage:
    """A Rich renderable: the picture in the width it is given, at most `max_rows` high."""

    def __init__(self, image: PILImage, max_rows: int | None = None) -> None:
        self.image = image
        self.max_rows = max_rows

    def size(self, max_columns: int, max_rows: int | None = None) -> tuple[int, int]:
        """Columns and rows this picture takes in a space that large."""
        rows = self.max_rows if max_rows is None else max_rows
        if self.max_rows is not None and rows is not None:
            rows = min(rows, self.max_rows)
        return fit(self.image.width, self.image.height, max_columns, rows)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Rows of `▀` cells, one pixel pair each."""
        columns, rows = self.size(options.max_width, options.height)
        if not columns:
            return
        from PIL import Image

        scaled = self.image.resize((columns, rows * 2), Image.Resampling.BOX)
        data = scaled.tobytes()  # RGB, row after row
        stride = columns * 3
        for row in range(rows):
            upper = 2 * row * stride
            lower = upper + stride
            for x in range(0, stride, 3):
                top = Color.from_rgb(data[upper + x], data[upper + x + 1], data[upper + x + 2])
                bottom = Color.from_rgb(data[lower + x], data[lower + x + 1], data[lower + x + 2])
                yield Segment("▀", Style(color=top, bgcolor=bottom))
            yield Segment.line()

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        """As wide as it is drawn in the width given."""
        columns, _ = self.size(options.max_width, options.height)
        return Measurement(columns, columns)
