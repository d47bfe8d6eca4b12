"""What the app drives: the `Backend` protocol (the controller, the runtime and the LLM client
behind one small surface). `bridge.ControllerBackend` is the real one; tests use fakes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from workbench.tui.app import WorkbenchApp


class Backend(Protocol):
    """What the app drives: the controller, the runtime and the LLM behind one small surface."""

    def attach(self, app: WorkbenchApp) -> None:
        """Report to `app` from now on (called as it mounts, before `start` or any task)."""

    async def start(self) -> None:
        """Load the LLM client and start the sandbox in the background, reporting progress."""

    async def submit(self, text: str) -> None:
        """Start a task with `text`, or queue it as a message if one is running."""

    async def answer(self, cause: int, answer: str) -> None:
        """Answer the confirmation request about action `cause`."""

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

    async def new_session(self) -> None:
        """Forget the current task; the next message starts a new session."""

    async def close(self) -> None:
        """Stop everything and leave no process behind."""
