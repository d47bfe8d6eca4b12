"""Session budgets: tokens, cost and wall time (0 = unlimited), checked by the controller."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from workbench.config.schema import BudgetConfig


@dataclass
class Budget:
    """Limits for one session and the clock it started on."""

    max_tokens: int = 0
    max_cost_usd: float = 0.0
    max_wall_s: float = 0.0
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def from_config(cls, config: BudgetConfig) -> Budget:
        """A budget with the configured limits, its clock starting now."""
        return cls(config.max_tokens, config.max_cost_usd, config.max_wall_s)

    def elapsed(self) -> float:
        """Seconds since the session started."""
        return time.monotonic() - self.started

    def remaining_wall(self) -> float | None:
        """Seconds of wall time left (never negative), or None without a limit."""
        if self.max_wall_s <= 0:
            return None
        return max(self.max_wall_s - self.elapsed(), 0.0)

    def exceeded(self, tokens: int, cost: float) -> str | None:
        """Which limit is used up, as a sentence, or None while all are within bounds."""
        if self.max_tokens > 0 and tokens >= self.max_tokens:
            return f"token budget used up ({tokens} of {self.max_tokens} tokens)"
        if self.max_cost_usd > 0 and cost >= self.max_cost_usd:
            return f"cost budget used up (${cost:.4f} of ${self.max_cost_usd:.4f})"
        remaining = self.remaining_wall()
        if remaining is not None and remaining <= 0:
            return f"wall-time budget used up ({self.elapsed():.1f} s of {self.max_wall_s:g} s)"
        return None
