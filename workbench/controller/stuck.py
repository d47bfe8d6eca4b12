"""Stuck detection: the agent repeating itself without getting anywhere.

Three patterns over the (action, result) steps so far: the same action with the same result
`threshold` times in a row; two steps alternating (A B A B A B); and the same error coming back
`threshold` times in a row, whatever the actions were. The controller warns the agent the first
time and stops the session if the pattern is still there at the next step.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One action and its result, reduced to comparable text."""

    action: str
    result: str
    error: str | None = None
    """The error text when the step failed, else None."""


class StuckDetector:
    """Remembers recent steps and says when they form a loop."""

    def __init__(self, threshold: int = 4) -> None:
        self.threshold = max(threshold, 2)
        self.alternations = max(self.threshold - 1, 3)
        """A B pairs in a row that count as an alternating loop."""
        self._steps: list[Step] = []
        self._keep = max(self.threshold, 2 * self.alternations)

    def record(self, step: Step) -> None:
        """Add one finished step."""
        self._steps.append(step)
        del self._steps[: -self._keep]

    def reset(self) -> None:
        """Forget the steps so far (a new task starts)."""
        self._steps.clear()

    def check(self) -> str | None:
        """A sentence describing the loop the agent is in, or None."""
        steps, n = self._steps, self.threshold
        if len(steps) >= n and len(set(steps[-n:])) == 1:
            return (
                f"the same action gave the same result {n} times in a row "
                f"({_short(steps[-1].action)})"
            )
        pairs = 2 * self.alternations
        if len(steps) >= pairs:
            tail = steps[-pairs:]
            a, b = tail[0], tail[1]
            if a != b and all(s == (a if i % 2 == 0 else b) for i, s in enumerate(tail)):
                return (
                    f"two actions alternated {self.alternations} times with the same results "
                    f"({_short(a.action)} / {_short(b.action)})"
                )
        errors = [s.error for s in steps[-n:]]
        if len(errors) >= n and errors[0] is not None and len(set(errors)) == 1:
            return f"the same error came back {n} times in a row ({_short(errors[0])})"
        return None


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
