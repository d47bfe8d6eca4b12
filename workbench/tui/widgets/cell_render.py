"""Drawing one cell's body as rows of segments (`cell_list.CellList` caches them): Markdown,
Pygments, plain text, and images in half-cell blocks or the Kitty protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from workbench.display import Cell

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

MAX_BODY_LINES = 400
"""An expanded body shows at most this many rows; the rest is one `e` (editor) away."""
MIN_IMAGE_ROWS = 12
"""Images are drawn at most as high as the view, but never cut below this many rows."""


def renderable(body: str, body_format: str, lexer: str, pygments: str) -> RenderableType:
    """What Rich draws for a body in `body_format` (Markdown, code in `lexer`, plain text)."""
    if body.count("\n") > MAX_BODY_LINES:
        lines = body.splitlines()
        body = "\n".join(lines[:MAX_BODY_LINES])
        body += f"\n… {len(lines) - MAX_BODY_LINES} more lines (e: open in $EDITOR)"
    # Markdown and Syntax pull in markdown-it and Pygments (~80 ms): not before the first paint.
    if body_format == "markdown":
        from rich.markdown import Markdown

        return Markdown(body, code_theme=pygments)
    if body_format == "code":
        from rich.syntax import Syntax

        return Syntax(body, lexer, theme=pygments, word_wrap=True, background_color="default")
    return Text(body)


def body_strips(
    cell: Cell,
    console: Console,
    inner: int,
    gutter: Segment,
    base: Style,
    pygments: str,
    image: tuple[int, bool],
) -> list[Strip]:
    """The rows of `cell`'s body (its sections, then its image), `inner` columns wide after
    the `gutter`, in the pane's `base` style; `image`: its most rows, and whether Kitty."""
    options = console.options.update(
        width=inner, min_width=inner, max_width=inner, height=None, highlight=False
    )
    # Code styles paint their own background; the pane's background wins.
    flat = Style(bgcolor=base.bgcolor)
    strips: list[Strip] = []
    sections = [(cell.body, cell.body_format, cell.lexer)] if cell.body else []
    sections += [(part.text, part.body_format, part.lexer) for part in cell.more if part.text]
    for number, (body, body_format, lexer) in enumerate(sections):
        if number:
            strips.append(Strip([gutter]))
        drawn = renderable(body, body_format, lexer, pygments)
        lines = console.render_lines(drawn, options, pad=False)
        # Markdown pads its paragraphs, and a text's final newline makes a row: no blank
        # rows at the end (nor, where the text starts on the title row, at the start).
        while lines and not "".join(seg.text for seg in lines[-1]).strip():
            lines.pop()
        while cell.inline and lines and not "".join(seg.text for seg in lines[0]).strip():
            lines.pop(0)
        strips.extend(Strip([gutter, *Segment.apply_style(line, base, flat)]) for line in lines)
    if cell.image is not None:
        rows, kitty = image
        strips.extend(
            Strip([gutter, *Segment.apply_style(line, base)])
            for line in image_lines(cell.image, console, inner, rows, kitty)
        )
    return strips


def image_lines(
    data: bytes, console: Console, width: int, rows: int, kitty: bool
) -> list[list[Segment]]:
    """A PNG or JPEG as rows at most `width` x `rows` (half-cell blocks, or `kitty`)."""
    from workbench.tui.halfcell import HalfcellImage, open_image

    try:
        image = HalfcellImage(open_image(data), max_rows=rows)
        options = console.options.update(width=width, height=None)
        if kitty:
            # The Kitty protocol draws in placeholder characters, which rows of text can
            # hold (Sixel draws over cells: only the browser pane's own widget can).
            from textual_image.renderable.tgp import Image as KittyImage

            columns, shown = image.size(width, rows)
            picture = KittyImage(image.image, width=columns, height=shown)
            return console.render_lines(picture, options, pad=False)
        return console.render_lines(image, options, pad=False)
    except Exception as exc:  # a broken PNG must not break the pane
        return [[Segment(f"[image could not be drawn: {exc}]")]]
