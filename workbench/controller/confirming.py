"""Whether an action may run: the confirmation policy's verdict, and the person (or headless's
`--on-confirm`) asked when it says to. A refusal becomes the action's observation, with the
reason the agent is told; a "stop" answer ends the run."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from workbench.config.schema import Config
from workbench.controller.event_hub import EventHub
from workbench.controller.run_stop import RunStop
from workbench.events import (
    ActionEvent,
    AnyObservation,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    RejectedObservation,
)
from workbench.security.policy import Decision, check, escalation_decision, headless_decision
from workbench.security.refusal import refusal_text

ConfirmHook = Callable[[ActionEvent, ConfirmationRequestEvent], Awaitable[Decision]]
"""What a front end gives to answer a confirmation request (None: headless's policy)."""
Guard = Callable[..., Awaitable[Any]]


async def confirmed(
    hub: EventHub,
    event: ActionEvent,
    config: Config,
    workspace: str,
    confirm: ConfirmHook | None,
    guard: Guard,
    observe: Callable[[ActionEvent, AnyObservation], None],
) -> bool:
    """True when the action may run; False when it was refused (its observation says why)."""
    verdict = check(event.action, event.security_risk, config.security, workspace)
    decision = verdict.decision
    if decision is None and verdict.needs_confirmation:
        request = ConfirmationRequestEvent(
            id=hub._next_id(),
            cause=event.id,
            risk=verdict.risk,
            reason=verdict.reason or verdict.rule,
            always_ask=verdict.always_ask,
        )
        hub._emit(request)
        hub._set_state("awaiting_confirmation")
        decision = await guard(_ask(event, request, config, confirm), timed=False)
        hub._set_state("running")
    if decision is None:
        return True
    hub._emit(
        ConfirmationDecisionEvent(
            id=hub._next_id(),
            cause=event.id,
            approved=decision.approved,
            rule=decision.rule,
            reason=decision.reason,
        )
    )
    if decision.approved:
        return True
    observe(event, RejectedObservation(content=refusal_text(verdict, decision)))
    if decision.verdict == "stop":
        raise RunStop("rejected", decision.reason or decision.rule)
    return False


async def _ask(
    event: ActionEvent,
    request: ConfirmationRequestEvent,
    config: Config,
    confirm: ConfirmHook | None,
) -> Decision:
    if confirm is None:
        escalation = escalation_decision(event.action, config.security)
        if escalation is not None:
            return escalation
        return headless_decision(config.security.headless_on_confirm)
    return await confirm(event, request)
