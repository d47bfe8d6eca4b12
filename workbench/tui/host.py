"""What the app's helper modules (routing, session actions, branching, tool layout, answers,
hang-up) use of the app: `app.WorkbenchApp` satisfies `Host`; named here, not imported, so
that the app, which imports those modules, is not imported back. `SavedView` is the saved
session the app shows (its `saved`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import signal

    from workbench.config.schema import Config
    from workbench.events import ActionEvent
    from workbench.tui.backend import Backend
    from workbench.tui.messages import ProgressChanged


@dataclass(frozen=True)
class SavedView:
    """A saved session on screen that no agent continues yet: read-only until a message is
    typed, which continues it (from event `upto` on, for a branch) as a new linked session."""

    path: Path
    session_id: str
    upto: int | None = None
    """None: the whole session (resume); else the id of the last event kept (branch)."""


class Host(Protocol):
    """The app as its helpers see it: its state, a few of its own methods, Textual's."""

    config: Config | None
    backend: Backend | None
    clock: Callable[[], float]
    config_path: Path | None
    actions: dict[int, ActionEvent]
    """Every action of the session shown, by id (the tool panes and the panel look them up)."""
    saved: SavedView | None
    paused: bool
    tools_size: int
    tools_hidden: bool
    tools_layout: tuple[bool, int, bool, bool] | None
    """The tool panes' layout last applied (narrow, size, folded, hidden)."""
    ended_logs: set[Path]
    held_news: list[ProgressChanged]
    signals: list[signal.Signals]
    closing: bool
    last_escape: float
    """`time.monotonic()` of the last esc, for esc esc."""
    PANES: ClassVar[tuple[str, ...]]

    # Textual's own (their signatures are Textual's; any call here is one Textual takes).
    @property
    def screen(self) -> Any:
        """The screen on top."""

    @property
    def screen_stack(self) -> Any:
        """The screens, bottom first."""

    @property
    def size(self) -> Any:
        """The terminal's size."""

    @property
    def focused(self) -> Any:
        """The widget with the focus."""

    def notify(self, *args: Any, **kwargs: Any) -> Any:
        """Show a toast."""

    def query_one(self, *args: Any, **kwargs: Any) -> Any:
        """A widget of the app's screen."""

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        """Show a screen over the app."""

    async def push_screen_wait(self, *args: Any, **kwargs: Any) -> Any:
        """Show a screen and wait for its answer."""

    def run_worker(self, *args: Any, **kwargs: Any) -> Any:
        """Run work in the background."""

    def exit(self, *args: Any, **kwargs: Any) -> Any:
        """End the app."""

    def call_later(self, *args: Any, **kwargs: Any) -> Any:
        """Run a callback once the messages queued now are handled."""

    def clear_notifications(self) -> Any:
        """Close every toast."""

    # The workbench app's.
    def background(self, work: Coroutine[Any, Any, None], group: str) -> None:
        """Run backend work; a failure becomes a notification."""

    def action_new_session(self) -> None:
        """End the session open now; the next message starts a new one."""

    def action_toggle_pause(self) -> None:
        """Pause or resume the agent."""

    def action_stop(self) -> None:
        """Stop the agent."""

    def action_focus_prompt(self) -> None:
        """Back to the input box."""

    def action_quit(self) -> Coroutine[Any, Any, None]:
        """Close the backend, then exit."""

    def agent_busy(self) -> bool:
        """Whether an agent is in the middle of a task."""

    def workspace_shown(self) -> str:
        """The workspace's path, with ~ for the home folder."""

    def load_events(self, events: Any) -> None:
        """Show a recorded session."""

    def diffs_from(self, workspace: Path) -> None:
        """The conversation reads its rows' diffs from the checkpoints of `workspace`."""

    def branch_at(self, event_id: int, source: Path | None = None) -> None:
        """Show the session up to `event_id`: the next message continues it from there."""

    def session_log_shown(self) -> Path | None:
        """The log of the session the conversation shows, if any."""

    def load_artifact(self, name: str) -> Coroutine[Any, Any, bytes]:
        """An image by name."""
