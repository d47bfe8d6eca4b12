"""The input box: multi-line (ctrl+j or shift+enter add a line), enter sends, up/down recall
earlier messages. It stays usable while the agent works; what is sent then is queued.

Text starting with `/` is a slash command (`workbench.tui.slash`): while one is typed, the
commands it may be are listed (the app shows them above the box), the picked one's rest shows
greyed after the cursor; tab or right takes it, up/down pick another, enter runs it."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.widgets import TextArea
from textual.widgets.text_area import Location

from workbench.tui.messages import PromptSubmitted, SlashEntered, SlashMatchesChanged
from workbench.tui.slash import Refused, Send, SlashCommand, completions, find, parse

PLACEHOLDER = "Type a task and press enter · ctrl+j new line · ↑ earlier messages"
TYPING_PAUSE_S = 1.5
"""A key pressed in the input box less than this long ago counts as typing."""
ORDER_WINDOW_S = 2.0
"""How long a letter's place is kept, for a letter typed before it that arrives after it."""


class PromptInput(TextArea):
    """A TextArea that submits on enter and keeps a history."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+j,shift+enter", "newline", "New line", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            tab_behavior="focus",
            compact=True,
            highlight_cursor_line=False,
            placeholder=PLACEHOLDER,
        )
        self.sent: list[str] = []
        self._recall = 0
        self._draft = ""
        self._typed_at = -1e9  # time.monotonic() of the last key pressed here
        self.queued: list[str] = []  # sent while the agent worked, not read by it yet
        self._placed: list[tuple[float, Location]] = []  # recent letters: key time, place
        self.matches: list[SlashCommand] = []
        """The slash commands that complete what is typed (empty: not typing one)."""
        self.pick = 0
        """The index in `matches` of the one tab takes."""

    def add_queued(self, text: str) -> None:
        """`text` waits for the agent's next step: the box's border says so until it is read."""
        self.queued.append(text)
        self._show_queued()

    def delivered(self, text: str) -> None:
        """The agent got a user message: the queued texts it carries are no longer waiting."""
        self.queued = [queued for queued in self.queued if queued not in text]
        self._show_queued()

    def take_back(self, texts: list[str]) -> None:
        """Texts the agent never read: back into the box (before what is in it), unqueued."""
        self.queued = [queued for queued in self.queued if queued not in texts]
        self._show_queued()
        self.load_text("\n\n".join([*texts, self.text] if self.text.strip() else texts))
        self.move_cursor(self.document.end)

    def type_stray(self, text: str, typed_at: float) -> None:
        """Letters typed in another widget, at `typed_at` (a key event's time): placed in the
        order they were typed, before letters typed here later that arrived first."""
        later = [place for at, place in self._placed if at > typed_at]
        place = min(later) if later else self.cursor_location
        self.insert(text, place)
        if later:  # the letters after it moved right (all on its row: a line break forgets)
            row, column = place
            self._placed = [
                (at, (r, c + len(text) if r == row and c >= column else c))
                for at, (r, c) in self._placed
            ]
        self._remember(typed_at, place)

    def _remember(self, typed_at: float, place: Location) -> None:
        recent = [(at, p) for at, p in self._placed if at > typed_at - ORDER_WINDOW_S]
        self._placed = [*recent, (typed_at, place)]

    def load_text(self, text: str) -> None:
        """Replace the text (the letters' places are forgotten)."""
        self._placed = []
        super().load_text(text)

    def _show_queued(self) -> None:
        if not self.queued:
            self.border_title = None
            return
        more = f" (+{len(self.queued) - 1} more)" if len(self.queued) > 1 else ""
        latest = " ".join(self.queued[-1].split())
        latest = latest if len(latest) <= 40 else latest[:39] + "…"
        self.border_title = Text(f"queued for the agent's next step: {latest}{more}")

    def is_typing(self, within_s: float = TYPING_PAUSE_S) -> bool:
        """Whether someone is writing here: focused, and text in it or a key pressed lately."""
        recent = time.monotonic() - self._typed_at < within_s
        return self.has_focus and (bool(self.text.strip()) or recent)

    def update_suggestion(self) -> None:
        """While a slash command is typed: the commands it may be (posted for the list above
        the box) and the rest of the picked one, greyed after the cursor."""
        typed = self.text
        at_end = self.cursor_location == self.document.end
        matches = completions(typed) if at_end else []
        if [m.name for m in matches] != [m.name for m in self.matches]:
            self.matches, self.pick = matches, 0
            self.post_message(SlashMatchesChanged(matches, 0))
        picked = self.matches[self.pick].name if self.matches else ""
        word = typed[1:].lower()
        self.suggestion = picked[len(word) :] if picked.startswith(word) and at_end else ""

    def _move_pick(self, delta: int) -> None:
        self.pick = (self.pick + delta) % len(self.matches)
        self.post_message(SlashMatchesChanged(self.matches, self.pick))
        self.update_suggestion()

    def take_pick(self) -> None:
        """Complete the slash command being typed to the picked one."""
        command = self.matches[self.pick]
        self.load_text(f"/{command.name}" + (" " if command.arg else ""))
        self.move_cursor(self.document.end)
        self.update_suggestion()  # the list shows the one taken

    def _slash_key(self, key: str) -> bool:
        """Tab, up, down or enter while slash commands are listed; True if it was used."""
        if not self.matches:
            return False
        if key == "tab":
            self.take_pick()
        elif key in ("up", "down") and len(self.matches) > 1:
            self._move_pick(-1 if key == "up" else 1)
        elif key == "enter" and find(self.text.strip()[1:].lower()) is None:
            self.take_pick()  # "/he" + enter runs /help, as the list showed
            self.submit()
        else:
            return False
        return True

    async def _on_key(self, event: events.Key) -> None:
        self._typed_at = time.monotonic()
        if self._slash_key(event.key):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
            return
        if event.key in ("ctrl+j", "shift+enter"):
            # Here, not as a binding: a binding's action runs after the keys already queued,
            # so in a burst of keys the line break would land after them.
            event.stop()
            event.prevent_default()
            self.action_newline()
            return
        if event.key == "up" and self.cursor_location[0] == 0 and self.sent:
            event.stop()
            event.prevent_default()
            self._step_history(-1)
            return
        if (
            event.key == "down"
            and self._recall < len(self.sent)
            and self.cursor_location[0] == self.document.line_count - 1
        ):
            event.stop()
            event.prevent_default()
            self._step_history(1)
            return
        if not (event.is_printable and event.character and self.selection.is_empty):
            self._placed = []  # an edit or a move: the letters' places are no longer known
            await super()._on_key(event)
            return
        place = self.cursor_location
        await super()._on_key(event)
        self._remember(event.time, place)

    def _step_history(self, delta: int) -> None:
        if self._recall == len(self.sent):
            self._draft = self.text
        self._recall = max(0, min(len(self.sent), self._recall + delta))
        value = self._draft if self._recall == len(self.sent) else self.sent[self._recall]
        self.load_text(value)
        self.move_cursor(self.document.end)

    def action_newline(self) -> None:
        """Insert a line break."""
        self.insert("\n")

    def submit(self) -> None:
        """Send the text (if any) and remember it; a slash command runs instead (one that is
        no command stays in the box, to fix, and is not sent)."""
        raw = self.text
        text = raw.strip()
        if not text:
            return
        parsed = parse(raw)
        if isinstance(parsed, Refused):
            self.post_message(SlashEntered(parsed))
            return
        kept = f" {text}" if raw[:1].isspace() and text.startswith("/") else text
        if not self.sent or self.sent[-1] != kept:
            self.sent.append(kept)
        self._recall = len(self.sent)
        self._draft = ""
        self._typed_at = -1e9  # sent: done typing
        self.load_text("")
        if isinstance(parsed, Send):
            self.post_message(PromptSubmitted(parsed.text))
        else:
            self.post_message(SlashEntered(parsed))
