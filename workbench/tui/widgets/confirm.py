"""The confirmation panel: the action waiting for an answer, its risk and why; y approves,
n rejects, r rejects with a reason typed for the agent (`RejectReasonScreen`), a approves and
always allows actions like it (or for this session only): the app then shows the rules it would
save (`AllowRuleScreen`), and the panel stays until they are saved or the screen is closed. It is
offered at every risk level except for an action no rule may approve by pattern (the request's
`always_ask`: outside the workspace, credentials, privilege, persistence, publishing ...); there
a says why instead.

It takes the focus when it appears, unless someone is typing in the input box: their next
letters must not answer it (an "a" would save an allow rule). It then says how to reach it, and
takes the focus once the message is sent. Typing that reaches it anyway is sent on to the input
box: a letter that is no answer, and any letter within `ARM_S` of the panel taking the focus by
itself (a person typing "okay" as it appeared once approved a HIGH-risk `rm -rf` with its "y").
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Static

from workbench.tui.messages import ConfirmAnswer, ConfirmationAnswered, StrayKey

if TYPE_CHECKING:
    from textual import events
    from textual.app import ComposeResult

    from workbench.events import ActionEvent, ConfirmationRequestEvent

ARM_S = 0.6
"""After the panel takes the focus by itself, letters this soon are typing, not answers."""
ANSWER_KEYS = frozenset({"y", "n", "r", "a"})


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
        self._armed_at = 0.0
        self._typing_away = False

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

        from workbench.tui.cells import cell_for_event  # the events' cells: after the first paint

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
        self.query_one("#confirm-keys", Static).update(self._hint(reachable=take_focus))
        self.add_class("-shown")
        self.refresh_bindings()
        if take_focus:
            self.take_focus()

    def take_focus(self) -> None:
        """Take the focus without being asked to: letters typed in the next `ARM_S` are the
        end of someone's typing, not answers."""
        self._armed_at = time.monotonic() + ARM_S
        self.focus()

    def on_focus(self) -> None:
        """Reached: the keys answer now."""
        self._typing_away = False
        self.query_one("#confirm-keys", Static).update(self._hint(reachable=True))

    def on_key(self, event: events.Key) -> None:
        """Typing that lands here goes on into the input box (see the module's docstring)."""
        if not event.is_printable or event.character is None:
            return
        early = time.monotonic() < self._armed_at
        if event.key in ANSWER_KEYS and not early and not self._typing_away:
            if event.key == "a" and self.request is not None and not self.offers_always():
                event.stop()  # no binding acts: the app says why no rule is offered
                event.prevent_default()
                self.post_message(ConfirmationAnswered(self.request.cause, "always"))
            return  # an answer: the binding acts
        self._typing_away = True  # the rest of the burst follows it, answer keys too
        event.stop()
        event.prevent_default()
        self.query_one("#confirm-keys", Static).update(self._hint(reachable=False))
        self.post_message(StrayKey(event.character, event.time))

    def offers_always(self) -> bool:
        """Whether "always allow" is offered for the request shown (no always-ask finding)."""
        return self.request is not None and not self.request.always_ask

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """No "always allow" in the footer where no rule may approve it."""
        return self.offers_always() or not (action == "answer" and parameters == ("always",))

    def _hint(self, *, reachable: bool) -> Text:
        """The keys, without "always allow" where no rule may approve it."""
        return _keys_hint(reachable=reachable, always=self.offers_always())

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
        from workbench.tui.cells import cell_for_event
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


def _keys_hint(*, reachable: bool, always: bool = True) -> Text:
    gap = "   " if reachable else "  "
    keys = Text.assemble(
        ("y", "bold"),
        f" approve{gap}",
        ("n", "bold"),
        f" reject{gap}",
        ("r", "bold"),
        " reject, say why",
    )
    if always:  # an always-ask action is approved one at a time: no rule is offered
        keys.append_text(Text.assemble(gap, ("a", "bold"), " always allow"))
    if reachable:
        return keys
    return Text.assemble(
        "typing? ", ("shift+tab", "bold"), " or ", ("enter", "bold"), " first, then ", keys
    )
