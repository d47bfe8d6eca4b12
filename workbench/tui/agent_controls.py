"""The person's controls over the agent: pause or resume, stop, condense, esc (twice: stop),
and quitting, which asks first while the agent works."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from workbench.tui.widgets.status import StatusBar

if TYPE_CHECKING:
    from workbench.tui.host import Host

ESCAPE_TWICE_S = 0.8
"""Esc pressed again within this many seconds interrupts the agent."""
BUSY_STATES = frozenset({"running", "awaiting_confirmation", "paused"})
"""The agent's states in which it is in the middle of a task."""


def agent_busy(app: Host) -> bool:
    """Whether an agent is in the middle of a task (running, asking, paused); never while
    only a recording is shown (a replay, or no backend)."""
    if app.backend is None:
        return False
    return bool(app.query_one(StatusBar).data.state in BUSY_STATES)


def escape(app: Host) -> None:
    """Close what is open (toasts, a maximized pane) and go back to the input box; pressed
    twice quickly while the agent works, interrupt it."""
    now = time.monotonic()
    again = now - app.last_escape < ESCAPE_TWICE_S
    app.last_escape = now
    app.clear_notifications()
    if again and app.agent_busy():
        app.last_escape = -1e9
        app.action_stop()
        return
    app.action_focus_prompt()
    if app.agent_busy():
        app.notify("Press esc again to interrupt the agent.", timeout=ESCAPE_TWICE_S + 0.7)


async def request_quit(app: Host) -> None:
    """Quit; while the agent works, ask first (ctrl+q again, or y, quits)."""
    from workbench.tui.screens.quit import QuitScreen

    if isinstance(app.screen, QuitScreen) or not app.agent_busy():
        await app.action_quit()
        return

    def answered(quit_now: bool | None) -> None:
        if quit_now:
            app.call_later(app.action_quit)

    state = app.query_one(StatusBar).data.state.replace("_", " ")
    app.push_screen(QuitScreen(state), answered)


def toggle_pause(app: Host) -> None:
    """Pause or resume the agent."""
    from workbench.events import ENDED_STATES

    if app.backend is None:
        return
    if app.paused:
        app.backend.resume()
    else:
        app.backend.pause()
    app.paused = not app.paused
    status = app.query_one(StatusBar)
    working = status.data.state in ("running", "awaiting_confirmation")
    # Shown at once: the agent stops only once its current step (a long command) ends.
    status.set(pending="pausing…" if app.paused and working else "")
    if app.paused and working:
        app.notify("Pausing after the current step", timeout=2)
    elif status.data.state not in ENDED_STATES:
        app.notify("Paused" if app.paused else "Resumed", timeout=2)


def stop(app: Host) -> None:
    """Stop the agent."""
    if app.backend is not None:
        app.backend.stop()
        app.notify("Stopping the agent", timeout=2)


def condense_now(app: Host) -> None:
    """Condense the older history before the agent's next LLM call."""
    if app.backend is not None and app.backend.condense_now():
        app.notify("The history is condensed before the next LLM call", timeout=3)
    else:
        app.notify("No session to condense yet", timeout=3)
