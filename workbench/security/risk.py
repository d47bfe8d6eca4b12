"""Risk levels, an assessment with its reasons, and the findings an analysis collects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from workbench.events import RiskLevel

LEVELS: tuple[RiskLevel, ...] = ("LOW", "MEDIUM", "HIGH")


def higher(a: RiskLevel, b: RiskLevel | None) -> RiskLevel:
    """The higher of two risk levels (None counts as LOW)."""
    if b is None:
        return a
    return a if LEVELS.index(a) >= LEVELS.index(b) else b


def at_least(level: RiskLevel, threshold: RiskLevel) -> bool:
    """True when `level` is `threshold` or higher."""
    return LEVELS.index(level) >= LEVELS.index(threshold)


@dataclass(frozen=True)
class Assessment:
    """A risk level and the reasons that led to it (empty for plain LOW)."""

    level: RiskLevel
    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """The reasons as one sentence."""
        return "; ".join(self.reasons)


@dataclass
class Findings:
    """What an analysis found so far: the highest level and every reason, in order."""

    level: RiskLevel = "LOW"
    reasons: list[str] = field(default_factory=list)

    def add(self, level: RiskLevel, reason: str) -> None:
        """Record one finding."""
        self.level = higher(self.level, level)
        if reason not in self.reasons:
            self.reasons.append(reason)

    def assessment(self) -> Assessment:
        """The findings as an `Assessment`."""
        return Assessment(self.level, tuple(self.reasons))


class Judge(Protocol):
    """Analyses code in another language met inside the code being analysed."""

    def shell(self, text: str, findings: Findings, depth: int) -> None:
        """Judge a shell line."""

    def python(self, code: str, findings: Findings, depth: int) -> None:
        """Judge Python code."""

    def script(self, language: str, code: str, findings: Findings, depth: int) -> None:
        """Judge code for another interpreter (perl, ruby, node, php ...)."""
