"""The TUI backend's questions to the person: the confirmation of an action (answered on the
panel, "always allow" saving rules) and the network question about a host (`net_ask`).

`ControllerBackend` (`bridge.py`) owns one `Confirmations` and hands its `confirm` and
`net_ask` to each controller it opens.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.config.schema import Config
    from workbench.events import ActionEvent, ConfirmationRequestEvent
    from workbench.security.net_gate import NetAnswer, NetQuestion
    from workbench.security.policy import Decision
    from workbench.tui.backend import AllowOffer, AppPort

Answer = tuple[str, tuple[str, ...], Path | None, str]
"""The person's answer: approve/reject/always/session, rules to add, their file, why."""


class Confirmations:
    """The actions waiting for the person's answer, and what answering does."""

    def __init__(
        self,
        config: Config,
        config_path: Path | None,
        app: Callable[[], AppPort | None],
        workspace: Callable[[], str],
    ) -> None:
        self.config = config
        self.config_path = config_path
        self._app = app
        self._workspace = workspace
        """The workspace as the policy sees it (the sandbox's path)."""
        self._pending: dict[int, asyncio.Future[Answer]] = {}
        self._waiting: dict[int, ActionEvent] = {}
        """The actions whose confirmation is pending, by their id."""

    def _notify(self, text: str, severity: str = "information") -> None:
        app = self._app()
        if app is not None:
            app.notify(text, severity=severity, markup=False)

    async def confirm(self, action: ActionEvent, request: ConfirmationRequestEvent) -> Decision:
        """Wait for the person's answer about `action` (the controller's `confirm`)."""
        from workbench.security.policy import Decision

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Answer] = loop.create_future()
        self._pending[request.cause] = future
        self._waiting[request.cause] = action
        try:
            answer, rules, target, reason = await future
        finally:
            self._pending.pop(request.cause, None)
            self._waiting.pop(request.cause, None)
        if answer == "reject":
            said = f"; the person said: {reason}" if reason else ""
            return Decision("reject", "user", f"rejected in the TUI{said}")
        if answer in ("always", "session") and rules:
            self._add_allow_rules(rules, target, save=answer == "always")
            names = ", ".join(f"allow:{rule}" for rule in rules)
            said = "always allowed" if answer == "always" else "allowed for this session"
            return Decision("approve", names, f"{said} in the TUI")
        return Decision("approve", "user", "approved in the TUI")

    def answer(self, cause: int, answer: Answer) -> None:
        """The person answered the confirmation about action `cause`."""
        future = self._pending.get(cause)
        if future is not None and not future.done():
            future.set_result(answer)

    def reject_all(self) -> None:
        """Every pending confirmation is answered no (the agent is stopping)."""
        for future in self._pending.values():
            if not future.done():
                future.set_result(("reject", (), None, ""))

    async def net_ask(self, question: NetQuestion) -> NetAnswer:
        """Ask the person about a host not on the allowlist (the connection waits); "always"
        saves `net:HOST` where "always allow" saves its rules (the person's config file)."""
        from workbench.security.net_rules import host_rule
        from workbench.tui.messages import NetworkAsked

        app = self._app()
        if app is None:
            return "reject"
        future: asyncio.Future[NetAnswer] = asyncio.get_running_loop().create_future()

        def answered(answer: str) -> None:
            if not future.done():
                known = answer in ("once", "session", "always")
                future.set_result(answer if known else "reject")  # type: ignore[arg-type]

        app.post_message(NetworkAsked(question, answered))
        try:
            answer = await future
        except asyncio.CancelledError:  # withdrawn: the run ended before the person answered
            from workbench.tui.messages import NetworkAskWithdrawn

            app.post_message(NetworkAskWithdrawn(question))
            raise
        if answer == "always":
            self._add_allow_rules([host_rule(question.host)], None)
        return answer

    def allow_offer(self, cause: int) -> AllowOffer | None:
        """The rules "always allow" proposes for the waiting action, and where they can go."""
        from workbench.config.load import project_config_file
        from workbench.config.places import workspace_of
        from workbench.paths import default_config_file
        from workbench.security.allow_rules import propose
        from workbench.security.policy import subject_of
        from workbench.tui.backend import AllowOffer

        waiting = self._waiting.get(cause)
        if waiting is None:
            return None
        proposal = propose(waiting.action, self.config.security, self._workspace())
        subject = subject_of(waiting.action)
        user_file = self.config_path or self.config.source_file or default_config_file()
        targets = (
            ("this project", project_config_file(workspace_of(self.config))),
            ("you, in every project", user_file),
            ("this session only (saved nowhere)", None),
        )
        text = subject.text if subject is not None else ""
        return AllowOffer(text, proposal.rules, proposal.refused, targets)

    def allow_rule_errors(self, cause: int, rules: Sequence[str]) -> list[str]:
        """What is wrong with rules edited for the waiting action `cause`."""
        from workbench.security.allow_rules import rule_errors

        waiting = self._waiting.get(cause)
        if waiting is None:
            return ["the action is no longer waiting"]
        if not rules:
            return ["give at least one rule, or press escape to go back"]
        return rule_errors(list(rules), waiting.action, self.config.security, self._workspace())

    def _add_allow_rules(
        self, rules: Sequence[str], target: Path | None, *, save: bool = True
    ) -> None:
        """Apply `rules` from now on and (`save`) save them to `target` (the user's file by
        default)."""
        from workbench.config.edit import add_to_list
        from workbench.config.load import ConfigError
        from workbench.paths import default_config_file

        current = self.config.security.allow
        self.config.security.allow = [*current, *(rule for rule in rules if rule not in current)]
        if not save:
            listed = ", ".join(map(repr, rules))
            self._notify(f"Allowed {listed} for this session (saved nowhere)")
            return
        path = target or self.config_path or self.config.source_file or default_config_file()
        try:
            with self._person_edit(path):
                for rule in rules:
                    add_to_list(path, "security.allow", rule)
        except (ConfigError, OSError) as exc:
            failed = f"Allowed for this session only; saving to {path} failed: {exc}"
            self._notify(failed, "warning")
        else:
            listed = ", ".join(map(repr, rules))
            self._notify(f"Saved allow rule{'s' if len(rules) > 1 else ''} {listed} to {path}")

    def _person_edit(self, path: Path) -> contextlib.AbstractContextManager[None]:
        """Around the person's own edit of `path`: the project's config stays trusted if it
        was (their rule must not ask them for trust); any other file needs nothing."""
        from workbench.config.load import project_config_file
        from workbench.config.places import workspace_of
        from workbench.config.project_trust import keep_trust

        if Path(path).resolve() == project_config_file(workspace_of(self.config)).resolve():
            state = self.config.project_trust  # the records this config was checked against
            return keep_trust(path, state.store if state is not None else None)
        return contextlib.nullcontext()
