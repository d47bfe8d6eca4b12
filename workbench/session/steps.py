"""The one step numbering of a session: what a step is and how its number comes from the log.

A *step* is one action of the agent: one tool call it made (an `ActionEvent` of the agent).
Step N is the Nth action in the session's log, counting from 1; step 0 is the workspace before
the first.
The number depends only on the events before it, so it never changes as a log grows, and a
resumed or branched session, whose log starts with a copy of its parent's events, goes on
from its parent's numbers. Several tool calls in one reply of the model are several steps.

Every place that shows or takes a step number uses this one: headless output (`[N] $ cmd`),
`workbench replay` (`--from`/`--to`/`--continue-from`, the player's `g`), `workbench
checkpoints|diff|rewind` (`--step`/`--to`), the TUI's rewind screen and the docs. The
checkpoint of step N is the workspace after it (`Checkpointer` counts actions the same way).

An event that answers an action (its result, a confirmation, the checkpoint taken after it:
`cause`) belongs to that action's step; a checkpoint taken before a run's first action belongs
to the step it records (the actions done then). Any other event (the task, the model's call
and messages, states) belongs to the step of the next action, or to the last step when no
action follows; a session without actions is all step 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from workbench.events import ActionEvent, CheckpointEvent, Event, ObservationEvent


def is_step(event: Event) -> bool:
    """Whether `event` starts a step of its own (an action of the agent; an imported
    trajectory's setup by its environment is none)."""
    return isinstance(event, ActionEvent) and event.source == "agent"


class StepCounter:
    """The step numbers of a session's events, read one at a time in log order."""

    def __init__(self, earlier: Iterable[Event] = ()) -> None:
        self.steps = 0
        """Actions seen so far: the number of the latest step."""
        self._of_action: dict[int, int] = {}
        for event in earlier:
            self.see(event)

    def see(self, event: Event) -> int | None:
        """Count `event`; its step when it is an action or answers one, else None."""
        if is_step(event):
            self.steps += 1
            self._of_action[event.id] = self.steps
            return self.steps
        cause = getattr(event, "cause", None)
        if isinstance(cause, int) and cause in self._of_action:
            return self._of_action[cause]
        if isinstance(event, CheckpointEvent):
            return event.step  # taken before a run's first action: the actions done then
        return None


def step_numbers(events: Sequence[Event]) -> list[int]:
    """The step each of `events` belongs to (see the module docstring)."""
    counter = StepCounter()
    tied = [counter.see(event) for event in events]
    total = counter.steps
    numbers: list[int] = []
    seen = 0
    for event, step in zip(events, tied, strict=True):
        seen += is_step(event)
        numbers.append(step if step is not None else min(seen + 1, total))
    return numbers


def last_step(events: Iterable[Event]) -> int:
    """The number of the session's last step (0: no action yet)."""
    return sum(1 for event in events if is_step(event))


def out_of_range(step: int, first: int, last: int, session_id: str) -> str:
    """The message for a step number outside `first`..`last`, naming the valid range."""
    if last < first:
        return f"session {session_id} has no step {step}: it has no steps to pick from"
    return (
        f"step {step} is out of range: session {session_id} has steps {first} to {last} "
        f"(0: before the first action). The numbers are those `workbench replay "
        f"{session_id} --headless` and `workbench checkpoints {session_id}` show."
    )


def step_reached(events: Sequence[Event], kept: int) -> int:
    """The step the session had reached after its first `kept` events: the last action among
    them whose result is too (or that has none in the log: it ended the run). An action the
    model asked for in the same reply as an earlier one waits for its result."""
    answered = {e.cause for e in events if isinstance(e, ObservationEvent)}
    done = {e.cause for e in events[:kept] if isinstance(e, ObservationEvent)}
    done |= {e.id for e in events[:kept] if is_step(e) and e.id not in answered}
    numbers = step_numbers(events)
    return max(
        (n for e, n in zip(events[:kept], numbers, strict=False) if is_step(e) and e.id in done),
        default=0,
    )
