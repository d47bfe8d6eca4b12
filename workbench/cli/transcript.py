"""A saved session's transcript, as `workbench sessions show` prints it: each event a person
follows (the task, the agent's actions and their results, its replies, errors, states) in the
words a live headless run printed them, with the step each falls in (`[N]`, as `replay`
numbers them). A resumed or branched session's copied history is marked as such.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from workbench.events import Event
from workbench.headless.output import HumanPrinter
from workbench.replay.recording import step_numbers


@dataclass(frozen=True)
class Entry:
    """One event of the transcript: its id, step, kind, who it came from, and its text."""

    event: int
    step: int
    kind: str
    source: str
    text: str
    inherited: bool
    """True for the parent's history copied into a continued session."""


def transcript(events: list[Event], files: Path | None, parent_event: int = 0) -> list[Entry]:
    """The entries of `events` a person follows (`files`: the session's kept images)."""
    buffer = io.StringIO()
    printer = HumanPrinter(out=buffer, err=buffer)
    printer.files = files
    entries: list[Entry] = []
    for event, step in zip(events, step_numbers(events), strict=True):
        buffer.seek(0)
        buffer.truncate()
        printer.event(event)  # every event: the printer counts the steps itself
        text = buffer.getvalue().rstrip("\n")
        if text and printer.wants(event):
            inherited = event.id <= parent_event
            entries.append(Entry(event.id, step, event.kind, event.source, text, inherited))
    return entries


def transcript_text(entries: list[Entry], parent: str = "") -> list[str]:
    """The transcript's lines; where a continued session's own part begins is said."""
    lines: list[str] = []
    marked = False
    for entry in entries:
        if parent and not entry.inherited and not marked:
            lines.append(f"-- this session starts here (above: the history of {parent})")
            marked = True
        lines.append(entry.text)
    return lines
