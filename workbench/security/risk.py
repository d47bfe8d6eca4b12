"""Risk levels, an assessment with its reasons, and the findings an analysis collects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from workbench.events import RiskLevel

LEVELS: tuple[RiskLevel, ...] = ("LOW", "MEDIUM", "HIGH")

Category = Literal[
    "outside",
    "protected",
    "credentials",
    "privilege",
    "persistence",
    "publishing",
    "network",
    "remote_code",
    "hidden_code",
    "signal",
    "host",
    "delete",
    "install",
    "git_discard",
    "incomplete",
    "escalation",
    "unclassified",
]
"""What kind of danger a finding is: each reason the analyzer gives carries one."""
ALWAYS_ASK: frozenset[Category] = frozenset(
    {
        "outside",
        "protected",
        "credentials",
        "privilege",
        "persistence",
        "publishing",
        "remote_code",
        "hidden_code",
        "escalation",
    }
)
"""Kinds of finding that no rule with a wildcard may approve and "always allow" never offers a
rule for: deleting or writing outside the workspace or a protected path, credentials,
privilege, persistence, publishing, and code that cannot be read before it runs (downloaded,
piped in, built at run time: it could do any of these), and running outside the sandbox
(escalation). A HIGH finding nobody classified counts as one of them."""


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
    categories: tuple[Category, ...] = ()
    """The kind of each reason, in the same order (missing ones are "unclassified")."""
    levels: tuple[RiskLevel, ...] = ()
    """The level of each reason, in the same order (missing ones are the assessment's)."""

    @property
    def reason(self) -> str:
        """The reasons as one sentence."""
        return "; ".join(self.reasons)

    def kinds(self) -> list[tuple[RiskLevel, str, Category]]:
        """Each reason with its level and kind."""
        return [
            (
                self.levels[i] if i < len(self.levels) else self.level,
                reason,
                self.categories[i] if i < len(self.categories) else "unclassified",
            )
            for i, reason in enumerate(self.reasons)
        ]

    def always_ask(self) -> tuple[str, ...]:
        """The reasons that must be asked about every time (`ALWAYS_ASK`; a HIGH reason
        nobody classified counts too); empty when a rule may approve actions like this."""
        return tuple(
            reason
            for level, reason, kind in self.kinds()
            if kind in ALWAYS_ASK or (kind == "unclassified" and level == "HIGH")
        )


@dataclass
class Findings:
    """What an analysis found so far: the highest level and every reason, in order."""

    level: RiskLevel = "LOW"
    reasons: list[str] = field(default_factory=list)
    categories: list[Category] = field(default_factory=list)
    levels: list[RiskLevel] = field(default_factory=list)

    def add(self, level: RiskLevel, reason: str, category: Category = "unclassified") -> None:
        """Record one finding and its kind."""
        self.level = higher(self.level, level)
        if reason not in self.reasons:
            self.reasons.append(reason)
            self.categories.append(category)
            self.levels.append(level)

    def assessment(self) -> Assessment:
        """The findings as an `Assessment`."""
        return Assessment(
            self.level, tuple(self.reasons), tuple(self.categories), tuple(self.levels)
        )


class Judge(Protocol):
    """Analyses code in another language met inside the code being analysed."""

    def shell(self, text: str, findings: Findings, depth: int) -> None:
        """Judge a shell line."""

    def python(self, code: str, findings: Findings, depth: int) -> None:
        """Judge Python code."""

    def script(self, language: str, code: str, findings: Findings, depth: int) -> None:
        """Judge code for another interpreter (perl, ruby, node, php ...)."""
