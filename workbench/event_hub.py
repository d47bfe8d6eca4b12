"""The controller's event plumbing: number each event, log it, then hand it to subscribers.

Also forwards the runtime's live shell output to output subscribers while a run is going on.
Subscribers are called in the event loop's thread; one that raises is logged and skipped, so a
broken front end cannot break the session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sandbox.protocol import StreamEvent
from sandbox.runtimes.base import Runtime, SandboxError
from workbench.events import AgentState, Event, StateChangedEvent
from workbench.session_log import SessionLog

log = logging.getLogger(__name__)


class EventHub:
    """Events of one session, in order, written to its log before anyone else sees them."""

    def __init__(self, session: SessionLog, runtime: Runtime) -> None:
        self.session = session
        self.runtime = runtime
        self.events: list[Event] = []
        self.state: AgentState = "idle"
        self._subscribers: list[Callable[[Event], None]] = []
        self._output_subscribers: list[Callable[[StreamEvent], None]] = []
        self._pump: asyncio.Task[None] | None = None
        self._running = False

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call `callback` with every event (after it is logged); returns an unsubscribe."""
        subs = self._subscribers
        subs.append(callback)
        return lambda: subs.remove(callback) if callback in subs else None

    def subscribe_output(self, callback: Callable[[StreamEvent], None]) -> Callable[[], None]:
        """Call `callback` with the live shell output while runs go on; returns an unsubscribe."""
        subs = self._output_subscribers
        subs.append(callback)
        if self._running:
            self._start_pump()
        return lambda: subs.remove(callback) if callback in subs else None

    def _next_id(self) -> int:
        return len(self.events) + 1

    def _emit(self, event: Event) -> None:
        self.events.append(event)
        self.session.append(event)
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                log.exception("event subscriber failed")

    def _set_state(self, state: AgentState, reason: str = "") -> None:
        if state == self.state and not reason:
            return
        self.state = state
        self._emit(StateChangedEvent(id=self._next_id(), state=state, reason=reason))

    def _start_pump(self) -> None:
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._pump_output())

    def _stop_pump(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None

    async def _pump_output(self) -> None:
        try:
            async for chunk in self.runtime.stream():
                for callback in list(self._output_subscribers):
                    try:
                        callback(chunk)
                    except Exception:
                        log.exception("output subscriber failed")
        except SandboxError as exc:
            log.debug("output stream ended: %s", exc)
