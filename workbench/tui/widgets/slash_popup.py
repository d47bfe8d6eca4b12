"""The list of slash commands shown above the input box while one is typed: each with what it
does, the one tab takes highlighted. It never takes the focus (the input box keeps it)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from workbench.tui.slash import SlashCommand

SHOWN = 6
"""At most this many commands at a time (the window follows the picked one)."""


class SlashPopup(Static):
    """Matching slash commands, one a line; hidden when there are none."""

    can_focus = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.matches: list[SlashCommand] = []
        self.pick = 0

    def show(self, matches: list[SlashCommand], pick: int) -> None:
        """List `matches` with the one at `pick` highlighted (none: hide)."""
        self.matches, self.pick = list(matches), pick
        self.set_class(bool(matches), "-shown")
        if not matches:
            self.update("")
            return
        start = max(0, min(pick - SHOWN + 1, len(matches) - SHOWN)) if pick >= SHOWN else 0
        window = matches[start : start + SHOWN]
        width = max(len(self._usage(c)) for c in window)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for offset, command in enumerate(window):
            if offset:
                text.append("\n")
            style = "reverse" if start + offset == pick else ""
            text.append(f" {self._usage(command):<{width}} ", style=f"bold {style}".strip())
            text.append(f" {command.help}", style=style or "dim")
        more = len(matches) - len(window)
        if more:
            text.append(f"\n  … {more} more (↑/↓)", style="dim")
        text.append("\n  tab: complete · enter: run · // or a leading space: send as text", "dim")
        self.update(text)

    @staticmethod
    def _usage(command: SlashCommand) -> str:
        return " ".join(part for part in (f"/{command.name}", command.arg) if part)
