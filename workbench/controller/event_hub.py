"""The controller's event plumbing: number each event, log it, then hand it to subscribers.

Also forwards the runtime's live shell output to output subscribers while a run is going on,
and a little after it ends: output travels on its own connection and can trail the result the
run ended on, so the forwarding stops once the shell reports its command finished (or after
`DRAIN_MAX_S`), not at once.
Front ends can also follow a model call in flight (`subscribe_activity`: started, streamed
text, retried, over), which is shown and never logged. Subscribers are called in the event
loop's thread; one that raises is logged and skipped, so a
broken front end cannot break the session. A log that cannot be written ends the run (`_emit`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from sandbox.protocol import StreamEvent
from sandbox.runtimes.base import Runtime, SandboxError
from workbench.events import AgentState, ErrorEvent, Event, LLMActivity, StateChangedEvent
from workbench.session.log import SessionLog, SessionLogWriteError

log = logging.getLogger(__name__)

DRAIN_MIN_S = 0.05
"""Output is forwarded at least this long after a run ends (it may still be on its way)."""
DRAIN_MAX_S = 1.0
"""... and at most this long, waiting for the shell to report its command's end."""


class EventHub:
    """Events of one session, in order, written to its log before anyone else sees them."""

    def __init__(self, session: SessionLog, runtime: Runtime) -> None:
        self.session = session
        self.runtime = runtime
        self.events: list[Event] = []
        self.state: AgentState = "idle"
        self._subscribers: list[Callable[[Event], None]] = []
        self._output_subscribers: list[Callable[[StreamEvent], None]] = []
        self._activity_subscribers: list[Callable[[LLMActivity], None]] = []
        self._pump: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._settled = asyncio.Event()
        """Set when the last stream event was a command's end (no output can trail it)."""
        self._settled.set()
        self._running = False
        self._notices: list[tuple[str, str]] = []

    def notice(self, kind: str, message: str) -> None:
        """Say what went wrong beside the agent's work (an MCP server that stopped) as an
        `ErrorEvent` of `kind`: at once during a run, else when the next run starts."""
        if self._running:
            self._emit(ErrorEvent(id=self._next_id(), error_kind=kind, message=message))
        else:
            self._notices.append((kind, message))

    def _emit_notices(self) -> None:
        """Emit the notices that came while no run was going on."""
        notices, self._notices = self._notices, []
        for kind, message in notices:
            self._emit(ErrorEvent(id=self._next_id(), error_kind=kind, message=message))

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

    def subscribe_activity(self, callback: Callable[[LLMActivity], None]) -> Callable[[], None]:
        """Call `callback` as model calls start, stream, retry and end (nothing is logged)."""
        subs = self._activity_subscribers
        subs.append(callback)
        return lambda: subs.remove(callback) if callback in subs else None

    def _activity(self, activity: LLMActivity) -> None:
        for callback in list(self._activity_subscribers):
            try:
                callback(activity)
            except Exception:
                log.exception("activity subscriber failed")

    def _next_id(self) -> int:
        # The last id + 1, not the count: restored history may lack a line that did not parse.
        return self.events[-1].id + 1 if self.events else 1

    def _emit(self, event: Event) -> None:
        """Log `event`, then hand it to the subscribers.

        When the log cannot be written (a full disk), the subscribers still see the event (the
        person watching loses nothing) and the first failure is raised to end the run; later
        events are shown and not logged (the log's `failure` says why)."""
        self.events.append(event)
        failed: SessionLogWriteError | None = None
        if self.session.failure is None:
            try:
                self.session.append(event)
            except SessionLogWriteError as exc:
                failed = exc
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                log.exception("event subscriber failed")
        if failed is not None:
            raise failed

    def _set_state(self, state: AgentState, reason: str = "") -> None:
        if state == self.state and not reason:
            return
        self.state = state
        self._emit(StateChangedEvent(id=self._next_id(), state=state, reason=reason))

    def _start_pump(self) -> None:
        if self._stopping is not None:  # a new run while the last one's output drains: keep it
            self._stopping.cancel()
            self._stopping = None
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._pump_output())

    def _stop_pump(self) -> None:
        """Stop forwarding once the output of the run's last command has arrived."""
        if self._pump is not None and self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._drain(self._pump))

    async def _drain(self, pump: asyncio.Task[None]) -> None:
        try:
            await asyncio.sleep(DRAIN_MIN_S)
            await asyncio.wait_for(self._settled.wait(), DRAIN_MAX_S)
        except TimeoutError:
            pass  # a command still runs (or never reported its end): what came is shown
        pump.cancel()
        if self._pump is pump:
            self._pump = None
        self._stopping = None

    async def _pump_output(self) -> None:
        try:
            async for chunk in self.runtime.stream():
                if chunk.kind == "finished":
                    self._settled.set()
                elif chunk.source == "bash":  # a Jupyter cell's end is its observation
                    self._settled.clear()
                for callback in list(self._output_subscribers):
                    try:
                        callback(chunk)
                    except Exception:
                        log.exception("output subscriber failed")
        except SandboxError as exc:
            log.debug("output stream ended: %s", exc)
