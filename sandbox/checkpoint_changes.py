"""What a checkpoint is and what differs between two: the values the store hands out."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Changes:
    """What differs between two states of the workspace (paths relative to it)."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing differs."""
        return not (self.added or self.changed or self.deleted)

    def lines(self, limit: int) -> list[str]:
        """One line per path ("+ new", "~ changed", "- gone"), at most `limit` and a count."""
        rows = [("+", self.added), ("~", self.changed), ("-", self.deleted)]
        lines = [f"{sign} {name}" for sign, names in rows for name in names]
        if len(lines) > limit:
            lines = [*lines[:limit], f"… and {len(lines) - limit} more"]
        return lines


@dataclass(frozen=True)
class Checkpoint:
    """One checkpoint: its commit, what changed since the previous one, what it left out."""

    commit: str
    changes: Changes
    skipped: tuple[str, ...] = ()
    """Files not covered: over the size limit."""
    seconds: float = 0.0


def under(name: str, paths: set[str]) -> bool:
    """True when a folder above `name` is one of `paths`."""
    parts = name.split("/")
    return any("/".join(parts[:i]) in paths for i in range(1, len(parts)))
