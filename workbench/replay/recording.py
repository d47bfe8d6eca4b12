"""What a replay plays: a saved session (by id, unique id prefix or path) or an OpenHands
trajectory, read into one list of our events, and the steps those events fall in.

A *step* is one action of the agent, numbered as everywhere else (`workbench/session/steps.py`: the
`[N]` headless prints, the numbers `workbench checkpoints|diff|rewind` take). Events before the
first action (the task) go with step 1.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from workbench.events import ActionEvent, Event, FinishAction, StateChangedEvent
from workbench.exit_codes import EXIT_CODES, Status
from workbench.replay.openhands import (
    OPENHANDS_WORKSPACE,
    model_of,
    read_trajectory_items,
    trajectory_items,
)
from workbench.session import steps
from workbench.session.log import SessionHeader, SessionLogError, read


class ReplayError(Exception):
    """The thing to replay cannot be found or read; the message says what to do."""


@dataclass
class Recording:
    """A recorded session, whatever its format, as our events."""

    path: Path
    format: Literal["workbench", "openhands"]
    session_id: str
    model: str
    workspace: str
    """The workspace path the recorded actions name (a re-run maps it to its own)."""
    events: list[Event]
    header: SessionHeader | None = None
    notes: list[str] = field(default_factory=list)
    """What could not be read and was skipped (bad lines, unknown kinds)."""
    effects: dict[int, str] = field(default_factory=dict)
    """An imported edit's file content after it, by action id (a re-run compares by effect)."""

    @property
    def files_dir(self) -> Path | None:
        """The folder of the session's kept images (None: a trajectory keeps none)."""
        return self.path.with_name(f"{self.session_id}.files") if self.header else None

    @property
    def steps(self) -> list[int]:
        """The step of each event (see the module docstring)."""
        return step_numbers(self.events)


def step_numbers(events: list[Event]) -> list[int]:
    """The step each event falls in (`workbench.session.steps.step_numbers`)."""
    return steps.step_numbers(events)


def in_steps(step: int, first: int, last: int | None) -> bool:
    """Whether an event of `step` is played for `--from first --to last` (the task, step 0,
    goes with step 1)."""
    step = max(step, 1)
    return step >= first and (last is None or step <= last)


def resolve(target: str, sessions_dir: Path) -> Path:
    """The file `target` names: an existing path, else a saved session's id or unique prefix."""
    path = Path(target).expanduser()
    if path.is_file():
        return path
    if "/" in target or target.endswith((".json", ".jsonl")):
        raise ReplayError(f"{target}: no such file")
    exact = sessions_dir / f"{target}.jsonl"
    if exact.is_file():
        return exact
    matches = sorted(sessions_dir.glob(f"{glob_escape(target)}*.jsonl")) if target else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ReplayError(
            f"no saved session matches {target!r} in {sessions_dir}; `workbench sessions` "
            "lists them, or give the path of a session .jsonl or an OpenHands trajectory .json"
        )
    names = ", ".join(m.stem for m in matches[:5]) + (" ..." if len(matches) > 5 else "")
    raise ReplayError(f"{target!r} matches {len(matches)} sessions ({names}); give more of the id")


def glob_escape(text: str) -> str:
    """`text` with glob wildcards made literal."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def load_recording(path: Path) -> Recording:
    """Read a session log or an OpenHands trajectory (told apart by their first byte)."""
    try:
        with path.open("rb") as stream:
            first = stream.read(64).lstrip()[:1]
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror}") from None
    if first == b"[":
        return read_trajectory(path)
    if first == b"{":
        with path.open("rb") as stream:
            head = stream.readline()
        try:
            kind = json.loads(head).get("kind")
        except (ValueError, AttributeError):
            kind = None
        if kind != "header":  # a whole JSON object: maybe a trajectory wrapped in a dict
            return read_trajectory(path)
    try:
        loaded = read(path)
    except SessionLogError as exc:
        raise ReplayError(str(exc)) from None
    notes = [f"line {number} skipped: {why}" for number, why in loaded.bad_lines]
    if loaded.truncated:
        notes.append("the last line was cut off (the session was killed); played up to it")
    header = loaded.header
    return Recording(
        path=path,
        format="workbench",
        session_id=header.session_id,
        model=header.model,
        workspace=header.workspace,
        events=loaded.events,
        header=header,
        notes=notes,
    )


def read_trajectory(path: Path) -> Recording:
    """An OpenHands trajectory file as a recording of our events."""
    try:
        items = trajectory_items(json.loads(path.read_bytes()))
    except (OSError, ValueError) as exc:
        raise ReplayError(f"{path} is not an OpenHands trajectory: {exc}") from None
    events, notes, effects = read_trajectory_items(items)
    return Recording(
        path=path,
        format="openhands",
        session_id=path.stem,
        model=model_of(items),
        workspace=OPENHANDS_WORKSPACE,
        events=events,
        notes=notes,
        effects=effects,
    )


def recorded_outcome(events: list[Event]) -> tuple[Status, str]:
    """The status and reason of the recorded run, from its last final state event."""
    for event in reversed(events):
        if isinstance(event, StateChangedEvent) and event.state in ("finished", "error", "stopped"):
            status, _, reason = event.reason.partition(": ")
            if status in EXIT_CODES:
                return status, reason
            return ("success" if event.state == "finished" else "interrupted"), event.reason
    finish = next(
        (
            e.action
            for e in reversed(events)
            if isinstance(e, ActionEvent) and e.action.kind == "finish"
        ),
        None,
    )
    if isinstance(finish, FinishAction):  # a trajectory without our final state event
        return finish.outcome, ""
    return "interrupted", "the recording ends before the run did"
