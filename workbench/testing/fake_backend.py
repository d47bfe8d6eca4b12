"""A `Backend` for TUI tests that records what the app asks of it and runs nothing.

mypy checks that it satisfies `workbench.tui.backend.Backend`; `artifacts` serves images by
name, as the real backend serves screenshots from the session folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.tui.backend import AllowOffer, AppPort, Backend


class FakeBackend:
    """Records tasks, answers, shell input and control calls; serves `artifacts`."""

    def __init__(
        self,
        artifacts: dict[str, bytes] | None = None,
        offers: dict[int, AllowOffer] | None = None,
    ) -> None:
        self.app: AppPort | None = None
        self.offers = dict(offers or {})
        """What "always allow" offers, by the cause of the request."""
        self.saved_rules: list[tuple[tuple[str, ...], Path | None]] = []
        self.artifacts = dict(artifacts or {})
        self.sent: list[str] = []
        self.answers: list[str] = []
        self.reasons: list[str] = []
        """The reason given with each answer ("" for none)."""
        self.shell: list[str] = []
        self.calls: list[str] = []
        """`start`, `pause`, `resume`, `stop`, `new_session`, `settings_changed`, `close`, in
        the order called."""
        self.continued: list[tuple[Path, str, int | None]] = []
        """(log, message, upto) of each `continue_session`."""
        self.log: Path | None = None
        """What `current_log` answers."""

    def attach(self, app: AppPort) -> None:
        """Keep the app."""
        self.app = app

    async def start(self) -> None:
        """Record it."""
        self.calls.append("start")

    async def submit(self, text: str) -> None:
        """Keep the task or message."""
        self.sent.append(text)

    async def answer(
        self,
        cause: int,
        answer: str,
        rules: Sequence[str] = (),
        target: Path | None = None,
        reason: str = "",
    ) -> None:
        """Keep the answer (and the rules "always" saves, with their file; a reason)."""
        self.answers.append(answer)
        self.reasons.append(reason)
        if answer in ("always", "session"):
            self.saved_rules.append((tuple(rules), target))

    def allow_offer(self, cause: int) -> AllowOffer | None:
        """The offer given for `cause`, if any."""
        return self.offers.get(cause)

    def allow_rule_errors(self, cause: int, rules: Sequence[str]) -> list[str]:
        """An empty rule list is the one mistake it knows."""
        return [] if any(rule.strip() for rule in rules) else ["give at least one rule"]

    def settings_changed(self) -> None:
        """Record it."""
        self.calls.append("settings_changed")

    async def shell_input(self, text: str) -> None:
        """Keep what was typed into the shell."""
        self.shell.append(text)

    async def load_artifact(self, name: str) -> bytes:
        """An image from `artifacts`."""
        try:
            return self.artifacts[name]
        except KeyError:
            raise FileNotFoundError(name) from None

    def pause(self) -> None:
        """Record it."""
        self.calls.append("pause")

    def resume(self) -> None:
        """Record it."""
        self.calls.append("resume")

    def stop(self) -> None:
        """Record it."""
        self.calls.append("stop")

    def condense_now(self) -> bool:
        """Record it."""
        self.calls.append("condense_now")
        return True

    async def new_session(self) -> None:
        """Record it."""
        self.calls.append("new_session")

    async def continue_session(self, path: Path, text: str, upto: int | None = None) -> None:
        """Keep what would be continued."""
        self.continued.append((path, text, upto))

    def current_log(self) -> Path | None:
        """`log`."""
        return self.log

    async def close(self) -> None:
        """Record it."""
        self.calls.append("close")


if TYPE_CHECKING:
    _satisfies_the_protocol: Backend = FakeBackend()
