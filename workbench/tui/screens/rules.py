"""The rules screen (ctrl+r): the confirmation policy and every allow, ask and deny rule in
effect, each with where it comes from (default policy, the person's config file and line, the
project's `.workbench/config.toml` and line, the environment, or this session). d removes the
rule under the cursor, after a y to confirm: from what the running agent applies and from the
file it came from, that file's comments kept."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from workbench.security.rule_sources import (
    RuleInEffect,
    remove_rule,
    rules_in_effect,
    untrusted_rules,
)

if TYPE_CHECKING:
    from workbench.config.schema import Config

_KIND_STYLE = {
    "deny": "bold red",
    "ask": "bold yellow",
    "allow": "bold green",
    "policy": "bold",
    "untrusted": "yellow",
}
HINT = "d remove the rule under the cursor · esc close"
TRUST_KEY_HINT = "t review and trust the project's rules · "


def shorten_home(text: str) -> str:
    """`text` with the home folder's path written ~."""
    home = str(Path.home())
    return text.replace(home + "/", "~/") if home != "/" else text


class RulesScreen(ModalScreen[None]):
    """The rules in effect and their sources; d then y removes one."""

    DEFAULT_CSS = """
    RulesScreen { align: center middle; }
    #rules {
        width: 94%; max-width: 150; height: auto; max-height: 90%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    #rules-title { text-style: bold; color: $primary; }
    #rules-table { height: auto; max-height: 30; }
    #rules-hint { color: $text-muted; dock: bottom; }
    #rules-hint.-asking { color: $warning; text-style: bold; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("d,delete", "remove", "Remove"),
        Binding("t", "trust", "Trust project", show=False),
        Binding("y", "confirm", "Yes", show=False),
        Binding("n", "cancel", "No", show=False),
    ]

    def __init__(self, config: Config, config_path: Path | None = None) -> None:
        super().__init__()
        self.config = config
        self.config_path = config_path
        self.rows: list[RuleInEffect] = []
        self.pending: RuleInEffect | None = None
        """The rule d asked to remove, waiting for y."""

    def compose(self) -> ComposeResult:
        """The title, the table, the hint line."""
        with Vertical(id="rules"):
            yield Static(
                "Confirmation rules in effect  ·  deny beats ask beats allow", id="rules-title"
            )
            yield DataTable(id="rules-table", cursor_type="row", zebra_stripes=True)
            yield Static(HINT, id="rules-hint", markup=False)

    def on_mount(self) -> None:
        """Fill the table and focus it."""
        table = self.query_one(DataTable)
        table.add_columns("kind", "rule, and where it comes from")
        self.refill()
        table.focus()

    def refill(self) -> None:
        """Read the rules again (after a removal)."""
        table = self.query_one(DataTable)
        table.clear()
        self.rows = rules_in_effect(self.config, config_path=self.config_path)
        self.rows += untrusted_rules(self.config)
        for row in self.rows:
            where = shorten_home(row.where)
            if row.kind == "untrusted":
                where = f"not applied (t trusts) · {where}"
            rule = Text(row.rule, overflow="ellipsis", no_wrap=True)
            rule.append("\n" + where, style="italic dim")
            table.add_row(Text(row.kind, style=_KIND_STYLE.get(row.kind, "")), rule, height=2)
        if len(self.rows) == 1:
            self._hint("No allow, ask or deny rules: the policy alone decides. " + HINT)
        elif any(row.kind == "untrusted" for row in self.rows):
            self._hint(TRUST_KEY_HINT + HINT)

    def _hint(self, text: str, asking: bool = False) -> None:
        hint = self.query_one("#rules-hint", Static)
        hint.update(text)
        hint.set_class(asking, "-asking")

    def selected(self) -> RuleInEffect | None:
        """The row under the cursor."""
        index = self.query_one(DataTable).cursor_row
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def action_remove(self) -> None:
        """Ask before removing the rule under the cursor (or say why it cannot be)."""
        row = self.selected()
        if row is None:
            return
        if row.kind == "policy":
            self._hint("The policy is changed in Settings (ctrl+s), not removed. " + HINT)
            return
        if row.kind == "untrusted":
            self._hint(
                f"Not applied (the project file is not trusted): change it in {row.path}. "
                + TRUST_KEY_HINT
                + HINT
            )
            return
        if not row.removable:
            self._hint(f"Set by {row.where}: change it there. " + HINT)
            return
        self.pending = row
        where = f"from {row.where}" if row.path else "for this session"
        self._hint(f"Remove {row.kind} rule {row.rule!r} {where}? y remove · n keep", True)

    def action_confirm(self) -> None:
        """y: remove the rule asked about."""
        from workbench.config.load import ConfigError

        row, self.pending = self.pending, None
        if row is None:
            return
        try:
            done = remove_rule(self.config, row)
        except ConfigError as exc:
            self._hint(f"Not removed: {exc}")
            return
        self.refill()
        self._hint(done + "  " + HINT)

    def action_cancel(self) -> None:
        """n: keep the rule."""
        if self.pending is not None:
            self.pending = None
            self._hint(HINT)

    def action_trust(self) -> None:
        """t: the project's untrusted allow rules, on the trust screen (as at start)."""
        from workbench.tui.start_flow import offer_trust

        state = self.config.project_trust
        if state is None or not state.withheld:
            self._hint("The project's rules need no trust here. " + HINT)
            return
        self.dismiss(None)
        offer_trust(self.app, self.config)

    def action_close(self) -> None:
        """Escape: cancel a pending removal, else close."""
        if self.pending is not None:
            self.action_cancel()
            return
        self.dismiss(None)
