"""The help screen (F1, or ? outside the input box): every key binding, read from the widgets'
own `BINDINGS` so that it cannot drift from what the keys do, grouped by where each key works.
Escape, F1, ? or q close it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


@dataclass(frozen=True)
class KeyGroup:
    """Where some keys work, and those keys as (keys shown, what they do)."""

    title: str
    keys: tuple[tuple[str, str], ...]


def bindings_of(cls: type, own_only: bool = True) -> list[Binding]:
    """The bindings `cls` declares (with `own_only`, only those of workbench's own classes, not
    the scrolling and editing keys Textual's base widgets add), the subclass's first."""
    seen: set[str] = set()
    found: list[Binding] = []
    for klass in cls.__mro__:
        if own_only and not klass.__module__.startswith("workbench"):
            continue
        for binding in Binding.make_bindings(klass.__dict__.get("BINDINGS", [])):
            if binding.key in seen or binding.system:
                continue
            seen.add(binding.key)
            found.append(binding)
    return found


def describe(app: App[Any], bindings: Iterable[Binding]) -> tuple[tuple[str, str], ...]:
    """Each binding as (its keys as the footer shows them, its tooltip or description)."""
    rows: dict[str, list[str]] = {}
    for binding in bindings:
        what = binding.tooltip or binding.description or binding.action.replace("_", " ")
        rows.setdefault(what, []).append(app.get_key_display(binding))
    return tuple((" / ".join(keys), what) for what, keys in rows.items())


class HelpScreen(ModalScreen[None]):
    """Every key, by where it works."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    #help {
        width: 90%; max-width: 100; height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    #help-title { text-style: bold; color: $primary; }
    #help-intro { color: $text-muted; margin-bottom: 1; }
    .help-group { margin-top: 1; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,question_mark,q", "dismiss(None)", "Close"),
    ]

    def __init__(self, groups: Sequence[KeyGroup], intro: str = "") -> None:
        super().__init__()
        self.groups = groups
        self.intro = intro

    def compose(self) -> ComposeResult:
        """A title, then one table per group."""
        with Vertical(id="help"):
            yield Static("Keys  ·  esc, F1 or ? closes", id="help-title")
            with VerticalScroll(id="help-body"):
                if self.intro:
                    yield Static(self.intro, id="help-intro", markup=False)
                for group in self.groups:
                    table = Table.grid(padding=(0, 2))
                    table.add_column(style="bold", no_wrap=True, min_width=14)
                    table.add_column()
                    for keys, what in group.keys:
                        table.add_row(keys, what)
                    yield Static(Text(group.title, style="bold underline"), classes="help-group")
                    yield Static(table, classes="help-keys")

    def on_mount(self) -> None:
        """Focus the body, so that the arrows scroll it."""
        self.query_one("#help-body").focus()
