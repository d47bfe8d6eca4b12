"""What the app and its backend see of each other: the `Backend` protocol the app drives (the
controller, the runtime and the LLM client behind one small surface) and the `AppPort` through
which a backend reports back. `bridge.ControllerBackend` is the real backend;
`workbench.testing.fake_backend.FakeBackend` records what the app asks, for tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sandbox.protocol import CommandFinished, OutputChunk


@dataclass(frozen=True)
class AllowOffer:
    """What "always allow" offers for a waiting action: rules to edit and where to save them."""

    action: str
    """The action, as rules see it (a command line, a path, ...)."""
    rules: tuple[str, ...]
    """The proposed rules, one per line in the editor; empty when `refused`."""
    refused: str
    """Why no rule is offered (an always-ask action is approved one at a time); empty if offered."""
    targets: tuple[tuple[str, Path | None], ...]
    """Where a rule can be saved, as (what it means, config file); the first is the default;
    None is this session only (applied, saved nowhere)."""


class AppPort(Protocol):
    """What a backend may do with the app: post messages, notify, feed live shell output."""

    def post_message(self, message: Any) -> bool:
        """Queue a Textual message for the app (safe from any thread of its loop)."""

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Show a toast."""

    def feed_output(self, event: OutputChunk | CommandFinished) -> None:
        """Live shell output (any thread)."""


class Backend(Protocol):
    """What the app drives: the controller, the runtime and the LLM behind one small surface."""

    def attach(self, app: AppPort) -> None:
        """Report to `app` from now on (called as it mounts, before `start` or any task)."""

    async def start(self) -> None:
        """Load the LLM client and start the sandbox in the background, reporting progress."""

    async def submit(self, text: str) -> None:
        """Start a task with `text`, or queue it as a message if one is running or starting."""

    async def answer(
        self,
        cause: int,
        answer: str,
        rules: Sequence[str] = (),
        target: Path | None = None,
        reason: str = "",
    ) -> None:
        """Answer the confirmation request about action `cause`; with "always", `rules` are
        saved to the config file `target` and applied from this action on ("session": applied
        for this session only, saved nowhere); a rejection's `reason` (the person's words) goes
        to the agent."""

    def allow_offer(self, cause: int) -> AllowOffer | None:
        """The rules "always allow" proposes for the waiting action `cause` (None: none waits)."""

    def allow_rule_errors(self, cause: int, rules: Sequence[str]) -> list[str]:
        """What is wrong with `rules` as edited for action `cause` (empty: they are fine)."""

    def settings_changed(self) -> None:
        """The settings screen changed the config: apply what a running session copied from
        it (the step limit)."""

    async def shell_input(self, text: str) -> None:
        """Send text or a key (`C-c`) to the running shell command."""

    async def load_artifact(self, name: str) -> bytes:
        """A stored file (screenshot, image) by name."""

    def pause(self) -> None:
        """Pause the agent after its current step."""

    def resume(self) -> None:
        """Resume a paused agent."""

    def stop(self) -> None:
        """Stop the agent."""

    def condense_now(self) -> bool:
        """Condense the history before the next LLM call; False when no session is open."""
        ...

    async def new_session(self) -> None:
        """Forget the current task; the next message starts a new session."""

    async def continue_session(self, path: Path, text: str, upto: int | None = None) -> None:
        """Continue the saved session at `path` (only up to event `upto`: a branch) with the
        message `text`, as a new session linked to it, in a fresh sandbox."""

    def current_log(self) -> Path | None:
        """The log of the session open now (None before the first task)."""

    async def close(self) -> None:
        """Stop everything and leave no process behind."""
