"""The person's answers to the agent's questions: the confirmation panel's (with "always
allow" offering rules first) and the sandbox's about a host it wants to reach."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput

if TYPE_CHECKING:
    from workbench.tui.host import Host
    from workbench.tui.messages import ConfirmationAnswered, NetworkAsked, NetworkAskWithdrawn


def confirmation_answered(app: Host, message: ConfirmationAnswered) -> None:
    """Pass the answer to the controller; "always" first shows the rules it would save."""
    if message.answer == "always":
        offer_allow_rules(app, message.cause)
        return
    app.query_one(PromptInput).focus()
    if app.backend is not None:
        work = app.backend.answer(message.cause, message.answer, reason=message.reason)
        app.background(work, "answer")


def offer_allow_rules(app: Host, cause: int) -> None:
    """Show the rules "always allow" proposes; saved, they answer the panel's request."""
    from workbench.tui.screens.allow_rule import AllowChoice, AllowRuleScreen

    panel = app.query_one(ConfirmPanel)
    backend = app.backend
    offer = backend.allow_offer(cause) if backend is not None else None
    if backend is None or offer is None:
        if panel.request is not None and panel.request.always_ask:  # not waiting yet
            why = "; ".join(panel.request.always_ask)
            app.notify(f"No rule offered: asked every time ({why}).", markup=False)
        return
    if not offer.rules:
        app.notify(
            f"No rule offered: {offer.refused}. Press y to approve this action once.",
            severity="warning",
            timeout=8,
            markup=False,
        )
        return

    def chosen(choice: AllowChoice | None) -> None:
        if choice is None or panel.request is None or panel.request.cause != cause:
            if panel.request is not None:
                panel.focus()
            return
        panel.hide()
        app.query_one(PromptInput).focus()
        answer = "always" if choice.target is not None else "session"
        work = backend.answer(cause, answer, choice.rules, choice.target)
        app.background(work, "answer")

    screen = AllowRuleScreen(offer, lambda rules: backend.allow_rule_errors(cause, rules))
    app.push_screen(screen, chosen)


def network_asked(app: Host, message: NetworkAsked) -> None:
    """Ask the person about a host the sandbox wants (`screens/net_ask.py`)."""
    from workbench.tui.screens.net_ask import NetAskScreen

    def chosen(answer: str | None) -> None:
        message.answered(answer or "reject")

    app.push_screen(NetAskScreen(message.question), chosen)


def network_ask_withdrawn(app: Host, message: NetworkAskWithdrawn) -> None:
    """Close the question about a host once the run that asked has ended."""
    from workbench.tui.screens.net_ask import NetAskScreen

    for screen in app.screen_stack:
        if isinstance(screen, NetAskScreen) and screen.question is message.question:
            screen.dismiss(None)
            app.notify(
                f"The run ended before you answered about {message.question.host}: the "
                "connection was refused.",
                timeout=6,
            )
