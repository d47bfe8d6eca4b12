"""Which recorded rewind (or undo) `workbench rewind SESSION --undo` undoes next.

Every rewind of a session's files, and every undo, first checkpoints the present and records
it (`checkpoints.store.record_rewind`): `before` is the state it replaced, `target` the state it
made. Undoing a record puts its `before` back, and is recorded in turn, so what an undo
replaced (files the person made after a rewind, say) is one undo away too.

Repeated undos walk back through the history, the way an editor's undo does: while the files
are still what the last undo made, the next undo takes the record before the one it undid;
past the oldest, it undoes those undos in turn (back to where the person started), then walks
back again. Once the files changed after an undo, the next undo undoes that undo first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RewindRecord:
    """One recorded rewind or undo: the state it replaced and the state it made."""

    index: int
    kind: str
    """"rewind" (also a resume's or a branch's restore of the files) or "undo"."""
    before: str
    target: str
    to_step: int | None = None
    undoes: int | None = None
    """For an undo: the index of the record it undid."""
    at: float = 0.0

    def describe(self) -> str:
        """The record in a few words, for the person ("the rewind to step 3 at 14:02:11")."""
        when = time.strftime("%H:%M:%S", time.localtime(self.at)) if self.at else "?"
        if self.kind == "undo":
            return f"the undo at {when}"
        step = "" if self.to_step is None else f" to step {self.to_step}"
        return f"the rewind{step} at {when}"


def parse_records(lines: Sequence[str]) -> list[RewindRecord]:
    """The records of a session's rewind file, oldest first (lines that do not parse are
    skipped: each line is written whole, so only a hand-edited file has one)."""
    found: list[RewindRecord] = []
    for line in lines:
        try:
            data = json.loads(line)
            before, target = str(data["before"]), str(data["target"])
        except (ValueError, KeyError, TypeError):
            continue
        undoes = data.get("undoes")
        step = data.get("to_step")
        found.append(
            RewindRecord(
                index=len(found),
                kind="undo" if data.get("kind") == "undo" else "rewind",
                before=before,
                target=target,
                to_step=step if isinstance(step, int) else None,
                undoes=undoes if isinstance(undoes, int) else None,
                at=float(data.get("at") or 0.0),
            )
        )
    return found


def next_to_undo(
    records: Sequence[RewindRecord], unchanged_since: Callable[[RewindRecord], bool]
) -> RewindRecord | None:
    """The record the next undo undoes (None: nothing was ever rewound). `unchanged_since(r)`
    says whether the files are still what record `r` made."""
    if not records:
        return None
    last = records[-1]
    if last.kind == "undo" and last.undoes is not None and unchanged_since(last):
        earlier = last.undoes - 1
        if 0 <= earlier < len(records):
            return records[earlier]
    return last
