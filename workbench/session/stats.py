"""A session's figures for a list of sessions: steps, cost and duration, read in one pass over
the log that parses only the lines that carry them (the LLM calls, and the last event)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SessionStats:
    """Steps (LLM replies), their cost, and the time from the header to the last event."""

    steps: int = 0
    cost: float = 0.0
    duration_s: float = 0.0


def session_stats(path: Path, created: float) -> SessionStats:
    """The figures of the log at `path` (header time `created`); a line that is not JSON is
    skipped, an unreadable file gives zeros."""
    steps, cost, latest = 0, 0.0, b""
    try:
        with path.open("rb") as stream:
            stream.readline()  # the header
            for line in stream:
                if b'"llm_call"' in line:
                    event = _event(line)
                    if event.get("kind") == "llm_call":
                        steps += 1
                        cost += _number(event.get("cost"))
                if line.endswith(b"\n"):
                    latest = line
    except OSError:
        return SessionStats()
    last = _number(_event(latest).get("timestamp")) if latest else 0.0
    return SessionStats(steps, cost, max(0.0, last - created) if last else 0.0)


def _event(line: bytes) -> dict[str, object]:
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
