"""Watch: a recording printed again as a live headless run printed it, with no LLM and no
sandbox. With `--json` the `start`, `event` and `summary` lines are those of the recorded run
(the summary's figures are the recording's; only `duration_s` is its span in time), so a
replay and its recording compare equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from workbench.events import LLMCallEvent
from workbench.exit_codes import exit_code
from workbench.headless.output import Printer
from workbench.replay.recording import Recording, in_steps, recorded_outcome
from workbench.replay.timeline import pause_between


def start_info(recording: Recording) -> dict[str, Any]:
    """The `start` line of the recorded run."""
    return {
        "session_id": recording.session_id,
        "model": recording.model,
        "workspace": recording.workspace,
        "log": str(recording.path.absolute()),
    }


def recorded_summary(recording: Recording) -> dict[str, Any]:
    """The `summary` line of the recorded run, from its events."""
    status, reason = recorded_outcome(recording.events)
    calls = [event for event in recording.events if isinstance(event, LLMCallEvent)]
    prompt = sum(call.prompt_tokens for call in calls)
    completion = sum(call.completion_tokens for call in calls)
    times = [event.timestamp for event in recording.events]
    return {
        "status": status,
        "exit_code": exit_code(status),
        "reason": reason,
        "steps": len(calls) if calls else max(recording.steps, default=0),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tokens": prompt + completion,
        "cost": sum(call.cost for call in calls),
        "session_id": recording.session_id,
        "log": str(recording.path.absolute()),
        "duration_s": round(max(times) - min(times), 3) if times else 0.0,
    }


def watch(
    recording: Recording,
    printer: Printer,
    first: int = 1,
    last: int | None = None,
    speed: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Print the events of steps `first`..`last` (at `speed`, None: at once); returns the
    summary line it printed last."""
    printer.start(start_info(recording))
    for note in recording.notes:
        printer.notice(note)
    previous: float | None = None
    for event, step in zip(recording.events, recording.steps, strict=True):
        if not in_steps(step, first, last):
            printer.skip([event])  # counted: the steps shown keep their numbers
            continue
        if previous is not None and speed:
            sleep(pause_between(previous, event.timestamp, speed))
        previous = event.timestamp
        printer.event(event)
    summary = recorded_summary(recording)
    printer.summary(summary)
    return summary
