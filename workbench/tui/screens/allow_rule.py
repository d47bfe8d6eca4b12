"""The "always allow" screen: the rules proposed for the waiting action, one per line and
editable, and where to save them (this project's config, the person's own, or this session
only); ctrl+s saves, escape goes back to the confirmation panel. A rule that does not match
says which part of the action it misses."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, RadioButton, RadioSet, Static, TextArea

from workbench.tui.backend import AllowOffer


@dataclass(frozen=True)
class AllowChoice:
    """The rules the person kept and the config file they go to."""

    rules: tuple[str, ...]
    target: Path | None
    """The config file, or None for this session only."""


class AllowRuleScreen(ModalScreen[AllowChoice | None]):
    """Edit the proposed allow rules and choose where they are saved."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Back"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(self, offer: AllowOffer, check: Callable[[Sequence[str]], list[str]]) -> None:
        super().__init__()
        self.offer = offer
        self.check = check

    def compose(self) -> ComposeResult:
        """The action, the rules, where to save them, the buttons."""
        action = self.offer.action.strip().splitlines() or [""]
        more = f"  (+{len(action) - 1} lines)" if len(action) > 1 else ""
        with Vertical(id="allow-rule"):
            yield Static("Always allow", id="allow-title")
            yield Static(f"{action[0]}{more}", id="allow-action", markup=False)
            yield Static(
                "Actions matching these rules will run without asking, now and in later "
                "sessions (or in this one only, if you choose so below). One rule per line; "
                "edit them as you like (* matches anything).",
                id="allow-help",
            )
            yield TextArea("\n".join(self.offer.rules), id="allow-rules", soft_wrap=True)
            yield Static("", id="allow-errors", markup=False)
            with RadioSet(id="allow-target"):
                for index, (meaning, path) in enumerate(self.offer.targets):
                    label = meaning if path is None else f"{meaning}: {path}"
                    yield RadioButton(label, value=index == 0)
            with Horizontal(id="allow-buttons"):
                yield Button("Save  ctrl+s", id="allow-save", variant="primary")
                yield Button("Back  esc", id="allow-back")

    def on_mount(self) -> None:
        """Start in the rules."""
        self.query_one("#allow-rules", TextArea).focus()

    def rules(self) -> tuple[str, ...]:
        """The rules as edited, one per non-blank line."""
        text = self.query_one("#allow-rules", TextArea).text
        return tuple(line.strip() for line in text.splitlines() if line.strip())

    def target(self) -> Path | None:
        """The config file chosen."""
        index = self.query_one("#allow-target", RadioSet).pressed_index
        return self.offer.targets[max(index, 0)][1]

    def action_save(self) -> None:
        """Save when the rules are sound; otherwise say what is wrong and stay."""
        rules = self.rules()
        errors = self.check(rules)
        if errors:
            self.query_one("#allow-errors", Static).update("\n".join(f"✗ {e}" for e in errors))
            return
        self.dismiss(AllowChoice(rules, self.target()))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Save or go back."""
        if event.button.id == "allow-save":
            self.action_save()
        else:
            self.dismiss(None)
