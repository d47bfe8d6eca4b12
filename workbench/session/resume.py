"""A saved session read back into a conversation, for `--resume`, `--last` and branching.

`load_history(path, upto=None)` reads a log (up to its last complete line, as after a SIGKILL)
and returns a `History`: the events a new session starts from, the totals that carry over and
the parent's id. The new session's controller takes it with `Controller.restore`, which copies
the events into the new log (each log stays whole and readable on its own; its header's
`parent_id`/`parent_event` name where they came from), then adds `resume_note`: a message
telling the model that the shell's and the kernel's state did not survive.

    history = load_history(log_path)              # everything (resume)
    history = load_history(log_path, upto=42)     # up to event 42 (branch)
    messages = build_messages(system, history.events)   # the conversation, if that is all

The conversation applies the log's condensation events: a resumed session's messages start
from the condensed history (elided outputs stay elided, a summary stays in place).

UI-free and small on purpose: the replay commands build on it too.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from workbench.events import (
    ActionEvent,
    CheckpointEvent,
    CondensationEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
)
from workbench.session.log import LoadedSession, read

_SPENDING = (LLMCallEvent, CondensationEvent)  # a condensation's summary call costs too

CONTINUE_TEXT = "Continue the task from where you left off."
"""The message a resumed headless run sends when it was given none."""


@dataclass
class History:
    """The events a continued session starts from, and what carries over with them."""

    parent_id: str
    parent_path: Path
    workspace: str
    """The parent's workspace: a continued session works there again."""
    model: str
    events: list[Event] = field(default_factory=list)
    branched: bool = False
    """Cut at an event chosen by the person (branch), not at the log's end (resume)."""
    truncated: bool = False
    """The parent's log ended in a cut line (its process was killed); that line is left out."""
    skipped_lines: int = 0
    """Complete lines of the parent's log that did not parse and are left out."""
    files_restored: str = ""
    """What was done to bring the workspace's files back to this point (`restore_files`)."""

    @property
    def upto(self) -> int:
        """The id of the last event carried over (0 when there is none)."""
        return self.events[-1].id if self.events else 0

    @property
    def steps(self) -> int:
        """LLM calls made before (each reply is one step)."""
        return sum(isinstance(event, LLMCallEvent) for event in self.events)

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens spent before."""
        return sum(e.prompt_tokens for e in self.events if isinstance(e, _SPENDING))

    @property
    def completion_tokens(self) -> int:
        """Completion tokens spent before."""
        return sum(e.completion_tokens for e in self.events if isinstance(e, _SPENDING))

    @property
    def cost(self) -> float:
        """Dollars spent before."""
        return sum(e.cost for e in self.events if isinstance(e, _SPENDING))


def load_history(path: Path, upto: int | None = None) -> History:
    """The history of the session logged at `path`, all of it or up to event `upto`.

    Raises `SessionLogError` when the file is not a session log, `ValueError` when `upto`
    names no event of it."""
    return history_of(read(path), upto)


def history_of(loaded: LoadedSession, upto: int | None = None) -> History:
    """`load_history` for a log already read."""
    events = loaded.events
    if upto is not None:
        events = cut_at(events, upto)
    header = loaded.header
    return History(
        parent_id=header.session_id,
        parent_path=loaded.path,
        workspace=header.workspace,
        model=header.model,
        events=list(events),
        branched=upto is not None,
        truncated=loaded.truncated,
        skipped_lines=len(loaded.bad_lines),
    )


def cut_at(events: list[Event], upto: int) -> list[Event]:
    """The events up to the one with id `upto`; an action keeps its result with it, and the
    checkpoint of the files it left when no other action or message comes between.

    Raises ValueError when no event has that id."""
    index = next((i for i, event in enumerate(events) if event.id == upto), None)
    if index is None:
        raise ValueError(f"the session has no event {upto}")
    end = index + 1
    cut = events[index]
    action = upto if isinstance(cut, ActionEvent) else None
    if isinstance(cut, ObservationEvent):
        action = cut.cause
    if isinstance(cut, ActionEvent):
        for later in range(index + 1, len(events)):
            event = events[later]
            if isinstance(event, ObservationEvent) and event.cause == upto:
                end = later + 1
                break
    for later in range(end if action is not None else len(events), len(events)):
        event = events[later]
        if isinstance(event, CheckpointEvent) and event.cause == action:
            end = later + 1
            break
        if isinstance(event, ActionEvent | ObservationEvent | MessageEvent):
            break
    return events[:end]


def resume_note(history: History, workspace: str) -> str:
    """What the model is told when a session goes on in a new sandbox."""
    how = "branched from" if history.branched else "resumed from"
    return (
        f"(workbench: this session was {how} session {history.parent_id} and now runs in a "
        "new sandbox. The shell's state did not survive: its working directory, environment "
        "variables, shell variables and running processes are gone, and the Jupyter kernel "
        "restarted without its variables and imports. "
        + (
            f"The files in the workspace {workspace} were restored to what they were at that "
            "point. "
            if history.files_restored.startswith("The workspace's files were restored")
            else f"The files in the workspace {workspace} are as they are now, which may differ "
            "from what the earlier results show. "
        )
        + "Re-run any set-up you still need before relying on it.)"
    )


def copy_payloads(history: History, target: Path) -> int:
    """Bring the parent's stored images (`<id>.files/`) into `target`, hard-linked where the
    file system allows (they never change); returns how many files were copied."""
    source = history.parent_path.with_name(f"{history.parent_id}.files")
    if not source.is_dir():
        return 0
    target.mkdir(exist_ok=True)
    count = 0
    for item in source.iterdir():
        if not item.is_file() or (target / item.name).exists():
            continue
        try:
            os.link(item, target / item.name)
        except OSError:
            shutil.copy2(item, target / item.name)
        count += 1
    return count
