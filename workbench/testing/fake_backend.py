"""A `Backend` for TUI tests that records what the app asks of it and runs nothing.

It satisfies `workbench.tui.backend.Backend` (checked by mypy where tests pass it to
`create_app`); `artifacts` serves images by name, `events` are posted to the app at `start`.
"""

from __future__ import annotations

from typing import Any

from workbench.events import Event


class FakeBackend:
    """Records tasks, answers, shell input and control calls; serves `artifacts`."""

    def __init__(
        self, artifacts: dict[str, bytes] | None = None, events: list[Event] | None = None
    ) -> None:
        self.app: Any = None
        self.artifacts = dict(artifacts or {})
        self.events = list(events or [])
        self.sent: list[str] = []
        self.answers: list[str] = []
        self.shell: list[str] = []
        self.calls: list[str] = []
        """`start`, `pause`, `resume`, `stop`, `new_session`, `close`, in the order called."""

    def attach(self, app: Any) -> None:
        """Keep the app, to post `events` to it at `start`."""
        self.app = app

    async def start(self) -> None:
        """Post the prepared events, as a controller would."""
        self.calls.append("start")
        if self.app is not None and self.events:
            from workbench.tui.messages import EventArrived

            for event in self.events:
                self.app.post_message(EventArrived(event))

    async def submit(self, text: str) -> None:
        """Keep the task or message."""
        self.sent.append(text)

    async def answer(self, cause: int, answer: str) -> None:
        """Keep the answer."""
        self.answers.append(answer)

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

    async def new_session(self) -> None:
        """Record it."""
        self.calls.append("new_session")

    async def close(self) -> None:
        """Record it."""
        self.calls.append("close")
