"""The confirmation panel: the action waiting for an answer, its risk and why; y approves,
n rejects, r rejects with a reason typed for the agent (`RejectReasonScreen`), a approves and
always allows actions like it: the app then shows the rules it would save (`AllowRuleScreen`),
and the panel stays until they are saved or the screen is closed.

It takes the focus when it appears, unless someone is typing in the input box: their next
letters must not answer it (an "a" would save an allow rule). It then says how to reach it, and
takes the focus once the message is sent.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from workbench.events import ActionEvent, ConfirmationRequestEvent
from workbench.tui.cells import cell_for_event
from workbench.tui.messages import ConfirmAnswer, ConfirmationAnswered


class ConfirmPanel(Vertical, can_focus=True):
    """Shown while an action waits for a person's answer."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('approve')", "Approve"),
        Binding("n", "answer('reject')", "Reject"),
        Binding("r", "reject_with_reason", "Say why", tooltip="Reject, and tell the agent why"),
        Binding(
            "a", "answer('always')", "Always", tooltip="Approve, and always allow actions like it"
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.request: ConfirmationRequestEvent | None = None
        self.action: ActionEvent | None = None
        self.pygments = "monokai"

    def compose(self) -> ComposeResult:
        """Title, the action, the key hints."""
        yield Static(id="confirm-title")
        yield Static(id="confirm-action")
        yield Static(_keys_hint(reachable=True), id="confirm-keys")

    def ask(
        self,
        action: ActionEvent | None,
        request: ConfirmationRequestEvent,
        *,
        take_focus: bool = True,
    ) -> None:
        """Show `request` (about `action`); take the focus unless told not to."""
        self.request = request
        self.action = action
        tool = action.tool_name if action is not None else "action"
        title = Text.assemble(
            ("Confirm ", "bold"),
            (tool, "bold"),
            "  risk ",
            (request.risk, "bold reverse"),
            f"  {request.reason}",
        )
        self.query_one("#confirm-title", Static).update(title)
        from rich.syntax import Syntax  # Pygments loads when a confirmation first shows

        body: Syntax | Text = Text("(the action was not recorded)")
        if action is not None:
            cell = cell_for_event(action)
            if cell is not None:
                code = cell.body if cell.body_format == "code" else (cell.body or cell.title)
                lexer = cell.lexer if cell.body_format == "code" else "text"
                if cell.body_format != "code" and cell.title and cell.title not in code:
                    code = f"{cell.title}\n{code}"
                body = Syntax(
                    code.strip("\n"),
                    lexer,
                    theme=self.pygments,
                    word_wrap=True,
                    background_color="default",
                )
        self.query_one("#confirm-action", Static).update(body)
        self.query_one("#confirm-keys", Static).update(_keys_hint(reachable=take_focus))
        self.add_class("-shown")
        if take_focus:
            self.focus()

    def on_focus(self) -> None:
        """Reached: the keys answer now."""
        self.query_one("#confirm-keys", Static).update(_keys_hint(reachable=True))

    def hide(self) -> None:
        """Nothing is waiting any more."""
        self.request = None
        self.remove_class("-shown")

    def action_answer(self, answer: ConfirmAnswer) -> None:
        """Answer the request shown."""
        if self.request is None:
            return
        cause = self.request.cause
        if answer != "always":  # "always" first shows the rules; the app hides the panel
            self.hide()
        self.post_message(ConfirmationAnswered(cause, answer))

    def action_reject_with_reason(self) -> None:
        """Ask why, then reject with that reason (escape there: back here, nothing answered)."""
        from workbench.tui.screens.reject import RejectReasonScreen

        request = self.request
        if request is None:
            return
        cause = request.cause
        subject = ""
        if self.action is not None:
            cell = cell_for_event(self.action)
            subject = cell.title if cell is not None else ""

        def answered(reason: str | None) -> None:
            if self.request is None or self.request.cause != cause:
                return  # answered meanwhile (or stopped)
            if reason is None:
                self.focus()
                return
            self.hide()
            self.post_message(ConfirmationAnswered(cause, "reject", reason))

        self.app.push_screen(RejectReasonScreen(subject), answered)


def _keys_hint(*, reachable: bool) -> Text:
    gap = "   " if reachable else "  "
    keys = Text.assemble(
        ("y", "bold"),
        f" approve{gap}",
        ("n", "bold"),
        f" reject{gap}",
        ("r", "bold"),
        f" reject, say why{gap}",
        ("a", "bold"),
        " always allow",
    )
    if reachable:
        return keys
    return Text.assemble(
        "typing? ", ("shift+tab", "bold"), " or ", ("enter", "bold"), " first, then ", keys
    )
