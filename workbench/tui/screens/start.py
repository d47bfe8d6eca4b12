"""Questions asked as a session starts, before anything runs: `StartConfirmScreen` (a home folder
named as the workspace; a resumed session whose workspace is not this folder) and
`TrustProjectScreen` (a project's `.workbench/config.toml` not trusted with its content: its
rules shown verbatim, escaped, with Trust / Not now). Text from files is never read as markup."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from workbench.config.project_trust import ProjectTrust, shown

_CSS = """
StartConfirmScreen, TrustProjectScreen { align: center middle; }
.start-box {
    width: 90; max-width: 95%; height: auto; max-height: 90%;
    border: round $warning; background: $surface; padding: 0 1;
}
.start-scroll { height: auto; max-height: 60vh; }
.start-buttons { height: auto; margin-top: 1; }
.start-buttons Button { margin-right: 2; }
"""


class StartConfirmScreen(ModalScreen[bool]):
    """A question before the session starts: y (or the first button) goes on, n or esc quits."""

    DEFAULT_CSS = _CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "dismiss(True)", "Yes"),
        Binding("n,escape", "dismiss(False)", "No, quit"),
    ]

    def __init__(self, title: str, body: str, yes: str = "Yes, go on") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes = yes

    def compose(self) -> ComposeResult:
        """The question, its explanation and two buttons."""
        with Vertical(classes="start-box", id="start-confirm"):
            yield Static(Text(self.title_text, style="bold"), id="start-title")
            with VerticalScroll(classes="start-scroll"):
                yield Static(Text(self.body), id="start-body")
            with Horizontal(classes="start-buttons"):
                yield Button(f"{self.yes} (y)", id="start-yes", variant="warning")
                yield Button("No, quit (n)", id="start-no", variant="primary")

    def on_mount(self) -> None:
        """The safe answer has the focus: enter does not go on by mistake."""
        self.query_one("#start-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """A button answers."""
        self.dismiss(event.button.id == "start-yes")


def trust_text(state: ProjectTrust) -> Text:
    """The untrusted file's rules, each quoted and escaped, and what trusting means."""
    text = Text()
    text.append(f"{shown(str(state.path))}\n", style="bold")
    text.append(
        "is new, or changed since you trusted it. Its allow rules let these actions run "
        "without asking; they wait until you trust this exact content. Its deny and ask rules "
        "apply already.\n\n"
    )
    for kind in ("allow", "ask", "deny"):
        for rule in state.rules.get(kind, []):
            text.append(f"  {kind:5} ", style="bold")
            text.append(f"{shown(rule)}\n")
    if not any(state.rules.values()):
        text.append("  (no rules)\n")
    text.append("\nTrust it only if you wrote it or reviewed it: an agent may have written it.")
    return text


class TrustProjectScreen(ModalScreen[bool]):
    """Trust this project's config as it is? t trusts, n or esc: not now."""

    DEFAULT_CSS = _CSS

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "dismiss(True)", "Trust"),
        Binding("n,escape", "dismiss(False)", "Not now"),
    ]

    def __init__(self, state: ProjectTrust) -> None:
        super().__init__()
        self.state = state

    def compose(self) -> ComposeResult:
        """The file, its rules verbatim, and Trust / Not now."""
        with Vertical(classes="start-box", id="trust-project"):
            yield Static(Text("Trust this project's rules?", style="bold"), id="trust-title")
            with VerticalScroll(classes="start-scroll"):  # a long list scrolls; buttons stay
                yield Static(trust_text(self.state), id="trust-rules")
            with Horizontal(classes="start-buttons"):
                yield Button("Trust (t)", id="trust-yes", variant="warning")
                yield Button("Not now (n)", id="trust-no", variant="primary")

    def on_mount(self) -> None:
        """Not now has the focus: enter never trusts by mistake."""
        self.query_one("#trust-no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """A button answers."""
        self.dismiss(event.button.id == "trust-yes")
