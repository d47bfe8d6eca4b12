"""The tool panes folded to one row on small terminals: what each pane shows now (the shell's
command and exit status, Jupyter's last cell, the browser's page), so that the conversation
keeps its rows; a click, or F3/F4/F5, opens a pane, and leaving it folds them again."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from rich.text import Text
from textual.css.query import NoMatches
from textual.events import Click
from textual.widgets import Static

MIN_CONVERSATION_ROWS = 14
"""The conversation keeps at least this many rows inside its border while the panes are
folded (at 80x24: 16)."""
CHROME_ROWS = 5
"""Rows the app takes below the panes whatever happens: the input box (3), status, footer."""
BORDER_ROWS = 2
MIN_PANE_ROWS = 6
"""Stacked panes smaller than this (tabs, border, a few lines) fold as well (F7 at 80x24)."""


def fold_tools(
    width: int, height: int, tools_percent: int, focused: bool, narrow_width: int
) -> bool:
    """Whether the tool panes show as one row: on a terminal too narrow to put them beside the
    conversation and too short to stack them without leaving it fewer than
    `MIN_CONVERSATION_ROWS` (or the panes too few to show anything), unless a pane has the
    focus."""
    if focused or width >= narrow_width:
        return False
    main = max(0, height - CHROME_ROWS)
    stacked = main * tools_percent // 100
    return stacked < MIN_PANE_ROWS or main - stacked - BORDER_ROWS < MIN_CONVERSATION_ROWS


def summary_line(active: str, parts: Mapping[str, str]) -> Text:
    """`▸ shell ✓ exit 0 $ make │ jupyter … │ browser …`: the shown pane first, then the others,
    each with what it shows now; keys to open them at the end."""
    order = [active, *(name for name in parts if name != active)]
    line = Text(no_wrap=True, overflow="ellipsis", end="")
    line.append("▸ ", style="bold")
    for number, name in enumerate(order):
        if number:
            line.append(" │ ", style="dim")
        line.append(name, style="bold" if name == active else "")
        detail = parts.get(name, "")
        if detail:
            line.append(" " + detail, style="" if name == active else "dim")
    return line


class ToolsSummary(Static):
    """One row standing for the folded tool panes; it follows them while shown."""

    DEFAULT_CSS = """
    ToolsSummary { height: 1; background: $panel; color: $text; text-wrap: nowrap; }
    ToolsSummary:hover { background: $panel-lighten-1; }
    """

    def __init__(
        self,
        source: Callable[[], tuple[str, dict[str, str]]],
        open_pane: Callable[[str], None],
        *,
        id: str | None = None,
    ) -> None:
        super().__init__("", id=id, markup=False)
        self.source = source
        self.open_pane = open_pane
        self._shown: tuple[str, tuple[tuple[str, str], ...]] | None = None
        self.tooltip = "The tool panes, folded: click (or F3 shell, F4 Jupyter, F5 browser) to open"

    def on_mount(self) -> None:
        """Follow the panes a few times a second (cheap: one string built, drawn if changed)."""
        self.set_interval(0.25, self.follow)

    def follow(self) -> None:
        """Redraw if what the panes show changed."""
        if not self.display:
            return
        try:
            active, parts = self.source()
        except NoMatches:  # the panes are composed after this row
            return
        key = (active, tuple(parts.items()))
        if key != self._shown:
            self._shown = key
            self.update(summary_line(active, parts))

    def on_click(self, event: Click) -> None:
        """Open the pane shown first."""
        event.stop()
        active, _ = self.source()
        self.open_pane(active)
