"""A player's position in a recording, UI-free: how many of its events are shown, moved event
by event while playing, step by step, or straight to a step; and the pause between two events
at a given speed. The TUI's player (`workbench/tui/replay.py`) drives one."""

from __future__ import annotations

from workbench.events import Event
from workbench.replay.recording import in_steps, step_numbers

MAX_GAP_S = 2.0
"""The longest pause between two events at speed 1 (a long LLM call is not waited out)."""


def pause_between(earlier: float, later: float, speed: float | None) -> float:
    """Seconds to wait between events recorded at `earlier` and `later` (None: no waiting)."""
    if not speed or speed <= 0:
        return 0.0
    return max(0.0, min(later - earlier, MAX_GAP_S)) / speed


class Timeline:
    """The events of steps `first`..`last` and how many of them are shown (`position`).

    The actions of one reply of the model come before their results, so the events of a
    step need not be contiguous: the end of step N is the position just after the last event
    of any step up to N (the later actions of its reply are shown there, waiting)."""

    def __init__(self, events: list[Event], first: int = 1, last: int | None = None) -> None:
        pairs = [
            (event, step)
            for event, step in zip(events, step_numbers(events), strict=True)
            if in_steps(step, first, last)
        ]
        self.events = [event for event, _ in pairs]
        self.steps = [max(step, 1) for _, step in pairs]
        self.position = 0
        self.first_step = min(self.steps, default=0)
        self.last_step = max(self.steps, default=0)
        self._ends = [0] * (self.last_step + 1)
        """Index s: the end of step s (0 for a step before the first)."""
        for index, step in enumerate(self.steps):
            self._ends[step] = index + 1
        for step in range(1, len(self._ends)):
            self._ends[step] = max(self._ends[step], self._ends[step - 1])

    @property
    def at_end(self) -> bool:
        """True when every event is shown."""
        return self.position >= len(self.events)

    @property
    def step(self) -> int:
        """The last step shown whole (0 before any), or the one being shown when none is."""
        whole = max((s for s, end in enumerate(self._ends) if 0 < end <= self.position), default=0)
        if whole == 0 and self.position:
            return self.steps[self.position - 1]
        return whole

    def end_of(self, step: int) -> int:
        """The position just after the last event of `step` and of every step before it."""
        return self._ends[max(0, min(step, self.last_step))] if self._ends else 0

    def next_event(self) -> tuple[Event, float] | None:
        """The next event and the recorded seconds since the one before it; None at the end."""
        if self.at_end:
            return None
        event = self.events[self.position]
        previous = self.events[self.position - 1].timestamp if self.position else event.timestamp
        return event, event.timestamp - previous

    def forward(self) -> list[Event]:
        """Show the rest of the next step (the current one if it is not whole yet)."""
        if self.at_end:
            return []
        target = next(end for end in self._ends if end > self.position)
        shown = self.events[self.position : target]
        self.position = target
        return shown

    def back(self) -> int:
        """Go back to the end of the previous step; returns the new position."""
        self.position = max((end for end in self._ends if end < self.position), default=0)
        return self.position

    def jump(self, step: int) -> int:
        """Show everything up to the end of `step` (clamped to the recording); the position."""
        self.position = self.end_of(step)
        return self.position
