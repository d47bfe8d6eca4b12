"""The app's side of the sandbox's network proxy (`sandbox/net_proxy.py`): who may be reached.

Under `sandbox.network = "allowlist"` the proxy asks `NetGate.decide` about each host before it
connects. The rules decide first (`security/net_rules.py`: deny, then `network_allow` and the
`net:` rules of `security.allow`); a host allowed "for this session" passes too; any other host
waits while the person is asked (`ask`: the TUI's "allow once / for this session / always /
reject", the last saving `net:HOST` as "always allow" does) or, headless, what
`security.headless_on_confirm` says (approve, reject, or reject and stop the run). Each host
reached or refused is a `NetworkEvent` in the session log, naming the action in flight; the
agent's observation of that action gets a note naming each refused host and why
(`annotate`), so it can ask the person or take another way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from sandbox.net_proxy import NetVerdict
from workbench.config.schema import Config
from workbench.events import ActionEvent, AnyObservation, Event, NetworkEvent
from workbench.exit_codes import Status
from workbench.security.net_rules import host_rule, rule_for

NetAnswer = Literal["once", "session", "always", "reject"]

ENDED = ("finished", "stopped", "error")
"""Controller states that end a run."""


@dataclass(frozen=True)
class NetQuestion:
    """A host not on the allowlist, and the action whose command asked for it."""

    host: str
    port: int
    action: ActionEvent | None
    command: str = ""
    """The action's text as the rules see it (the shell line, the code ...)."""


NetAsk = Callable[[NetQuestion], Awaitable[NetAnswer]]


class Controller(Protocol):
    """What the gate uses of `workbench.controller.loop.Controller`."""

    config: Config
    acting: ActionEvent | None
    net_gate: Any

    def _next_id(self) -> int: ...
    def _emit(self, event: Event) -> None: ...
    def subscribe(self, callback: Callable[[Any], None]) -> Any: ...
    def stop(self, reason: str = ..., status: Status = ...) -> None:
        """End the run."""


@dataclass
class NetGate:
    """Decides for the proxy, logs what it decided, and tells the agent what was refused."""

    controller: Controller
    ask: NetAsk | None = None
    session_hosts: set[str] = field(default_factory=set)
    """Hosts the person allowed for this session."""
    refused: dict[int, dict[str, str]] = field(default_factory=dict)
    """Action id -> host -> why, until the action's observation carries it."""
    _asking: dict[str, asyncio.Future[NetAnswer]] = field(default_factory=dict)

    async def decide(self, host: str, port: int) -> NetVerdict:
        """The proxy's question: may `host` be reached now?"""
        action = self.controller.acting
        ruling = rule_for(self.controller.config, host)
        if ruling.allowed is not None:
            if ruling.allowed:
                return self._log(action, host, port, NetVerdict(True, ruling.rule))
            why = f"host {host} is refused by the rule deny {ruling.rule}"
            return self._log(action, host, port, NetVerdict(False, why), rule=ruling.rule)
        if host in self.session_hosts:
            return self._log(action, host, port, NetVerdict(True, "allowed for this session"))
        answer, by = await self._answer(host, port, action)
        if answer == "reject":
            why = f"host {host} is not on the network allowlist and {by}"
            return self._log(action, host, port, NetVerdict(False, why), rule=by, asked=True)
        if answer in ("session", "always"):
            self.session_hosts.add(host)
        return self._log(action, host, port, NetVerdict(True, by), rule=by, asked=True)

    async def _answer(
        self, host: str, port: int, action: ActionEvent | None
    ) -> tuple[NetAnswer, str]:
        """The person's answer (one question per host at a time), or headless's."""
        if self.ask is None:
            verdict = self.controller.config.security.headless_on_confirm
            if verdict == "approve":
                return "once", "approved without asking (--on-confirm approve)"
            if verdict == "stop":
                self.controller.stop(
                    f"the sandbox asked to reach {host}, not on the network allowlist, and "
                    "headless has nobody to ask (--on-confirm stop)",
                    status="rejected",
                )
            return "reject", f"nobody could be asked (headless, --on-confirm {verdict})"
        pending = self._asking.get(host)
        if pending is None:
            pending = asyncio.ensure_future(self.ask(_question(host, port, action)))
            self._asking[host] = pending
            pending.add_done_callback(lambda _: self._asking.pop(host, None))
        try:
            answer = await asyncio.shield(pending)
        except asyncio.CancelledError:
            if not pending.cancelled():
                raise  # this connection is going away, not the question
            return "reject", "the run ended before the person answered"
        by = {
            "once": "allowed once by the person",
            "session": "allowed for this session by the person",
            "always": f"always allowed by the person ({host_rule(host)})",
            "reject": "the person refused it",
        }[answer]
        return answer, by

    def _log(
        self,
        action: ActionEvent | None,
        host: str,
        port: int,
        verdict: NetVerdict,
        rule: str = "",
        asked: bool = False,
    ) -> NetVerdict:
        cause = action.id if action is not None else None
        if not verdict.allowed and cause is not None:
            self.refused.setdefault(cause, {})[host] = verdict.reason
        event = NetworkEvent(
            id=self.controller._next_id(),
            cause=cause,
            host=host,
            port=port,
            allowed=verdict.allowed,
            rule=rule or (verdict.reason if verdict.allowed else ""),
            reason="" if verdict.allowed else verdict.reason,
            asked=asked,
        )
        self.controller._emit(event)
        return verdict

    def on_event(self, event: Event) -> None:
        """A run that ends withdraws the questions still open: nobody waits for their answer
        (the connection is refused, and the TUI closes the question)."""
        if event.kind == "state" and getattr(event, "state", "") in ENDED:
            for pending in list(self._asking.values()):
                pending.cancel()

    def annotate(self, action: ActionEvent, observation: AnyObservation) -> AnyObservation:
        """`observation` with a note naming the hosts the proxy refused during `action`."""
        refused = self.refused.pop(action.id, None)
        if not refused:
            return observation
        hosts = "; ".join(f"{host} ({why})" for host, why in refused.items())
        note = (
            f"The sandbox's network proxy refused: {hosts}. Only hosts on the network "
            "allowlist are reached; do not retry the same host: ask the person to allow it, "
            "or take another way (a host that is allowed, files already in the workspace)."
        )
        fields = type(observation).model_fields
        if "note" in fields:
            old = getattr(observation, "note", None)
            return observation.model_copy(update={"note": f"{old} {note}" if old else note})
        if "content" in fields:
            content = getattr(observation, "content", "")
            return observation.model_copy(update={"content": f"{content}\n[{note}]"})
        return observation


def _question(host: str, port: int, action: ActionEvent | None) -> NetQuestion:
    from workbench.security.policy import subject_of

    subject = subject_of(action.action) if action is not None else None
    return NetQuestion(host, port, action, subject.text if subject is not None else "")


def attach(controller: Controller, runtime: object, ask: NetAsk | None) -> NetGate | None:
    """Make the runtime's proxy (if it has one: network = "allowlist") ask a new gate."""
    proxy = getattr(runtime, "net_proxy", None)
    if proxy is None:
        return None
    gate = NetGate(controller, ask)
    proxy.decide = gate.decide
    controller.net_gate = gate
    controller.subscribe(gate.on_event)
    return gate
