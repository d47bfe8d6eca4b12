"""An action cut short is recorded as what it was: its output so far, its exit status, and why.

The person interrupts a command (Esc Esc), a limit ends the run (the wall-time budget), or the
sandbox dies mid-command: the action's own reply never comes, but what it printed came on the
live stream (the shell pane shows it). `LiveOutput` keeps that output for the action running
now; `cut_short` and `lost` turn it into the observation the session log records and the model
reads in its next request, instead of no observation at all ("not carried out").
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    CommandFinished,
    ErrorObservation,
    IPythonAction,
    StreamEvent,
)
from sandbox.truncate import DEFAULT_LIMIT, HeadTailBuffer
from workbench.display import strip_ansi
from workbench.events import AnyAction, AnyObservation

FINISH_WAIT_S = 3.0
"""How long a cut-short command is given to report its end (exit 130 after the C-c)."""
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n\r])")


class LiveOutput:
    """The streamed output of the action running now (head and tail of long output)."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._buffer = HeadTailBuffer(limit)
        self._finished: CommandFinished | None = None
        self._ended: asyncio.Event | None = None
        self._active = False
        self._source = ""
        self.started = 0.0

    def begin(self, action: AnyAction) -> None:
        """`action` starts: forget what came before."""
        # Output of the command before can trail on the stream: a new command's or cell's
        # events name it (the shell names the command as it split it: part of the text).
        self._source = ""
        if isinstance(action, CmdRunAction) and not action.is_input:
            self._source = action.command
        elif isinstance(action, IPythonAction):
            self._source = action.code
        self._buffer = HeadTailBuffer(self._limit)
        self._finished = None
        self._ended = asyncio.Event()
        self._active = True
        self.started = time.monotonic()

    def end(self) -> None:
        """The action is over: stop collecting."""
        self._active = False

    def feed(self, event: StreamEvent) -> None:
        """Take one stream event (an output subscriber of the controller)."""
        if not self._active or (self._source and event.command.strip() not in self._source):
            return
        if isinstance(event, CommandFinished):
            self._finished = event
            if self._ended is not None:
                self._ended.set()
        else:
            self._buffer.append(event.data)

    async def finished(self, within_s: float = FINISH_WAIT_S) -> CommandFinished | None:
        """The shell's report of the command's end, waited for at most `within_s`."""
        if self._finished is None and self._ended is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ended.wait(), within_s)
        return self._finished

    def text(self) -> str:
        """What the action printed so far, as the model reads command output (no colours,
        no text a carriage return wrote over)."""
        text = strip_ansi(self._buffer.take())
        if "\r" in text:
            text = _OVERWRITTEN.sub("", text.replace("\r\n", "\n")).replace("\r", "")
        return text

    def seconds(self) -> float:
        """How long the action has run."""
        return time.monotonic() - self.started


def _why_stopped(status: str, reason: str, seconds: float) -> str:
    after = f"after {seconds:.0f} s" if seconds >= 1 else "at once"
    if status == "interrupted":  # a signal from another process is no person's stop
        who = "" if "another process" in reason else " by the person"
        return f"Interrupted{who} {after} ({reason})"
    return f"Stopped {after}: the run reached a limit ({reason})"


async def cut_short(
    action: AnyAction, live: LiveOutput, status: str, reason: str
) -> CmdOutputObservation | ErrorObservation:
    """The observation of an action a stop cut short (after the interrupt was sent)."""
    seconds = live.seconds()
    why = _why_stopped(status, reason, seconds)
    if isinstance(action, CmdRunAction):
        end = await live.finished()
        text = live.text()
        if end is None:
            note = f"{why}; it had not ended when this was recorded and may still be running."
            code, cwd, running = -1, None, True
        else:
            note = f"{why}; what it printed until then is above."
            code, cwd, running = end.exit_code, end.cwd, False
        return CmdOutputObservation(
            command=action.command,
            content=text,
            exit_code=code,
            cwd=cwd,
            running=running,
            note=note,
        )
    text = live.text()
    content = f"{why}, before it finished: its result is unknown; check its effects."
    if text:
        content += f"\nIts output until then:\n{text}"
    return ErrorObservation(error_kind="internal", content=content)


def lost(live: LiveOutput, why: str) -> ErrorObservation:
    """The observation of an action whose sandbox died under it: `why`, then its output so
    far (the shell pane showed it)."""
    text = live.text()
    content = why if not text else f"{why}\nIts output until then:\n{text}"
    return ErrorObservation(error_kind="sandbox", content=content)


def with_output_so_far(observation: AnyObservation, live: LiveOutput) -> AnyObservation:
    """`observation`, with the output so far added when the sandbox died under the action and
    was restarted (the runtime's reply says only that the result is lost)."""
    if isinstance(observation, ErrorObservation) and observation.error_kind == "sandbox":
        return lost(live, observation.content)
    return observation
