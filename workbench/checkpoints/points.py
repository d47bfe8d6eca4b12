"""A session's checkpoints: its steps, where its store is, and the plans to rewind and undo.

Each `CheckpointEvent` in a session's log names a commit in the workspace's checkpoint store
(`sandbox/checkpoints.py`; where it lives: `store.checkpoint_store_of`). Rewinding to step N
makes the workspace what it was after step N; it first checkpoints the present state and
records it, so an undo puts the present back; an undo is recorded the same way, and repeated
undos walk back through them (`rewind_undo.py`). Nothing outside the workspace is touched, and
what checkpoints do not cover (ignored folders, files over the size limit) is never changed or
deleted. The commands are `workbench/cli/checkpoints.py`, `rewind.py` and `diff.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.checkpoints import Changes, CheckpointStore
from workbench.checkpoints.rewind_undo import RewindRecord, next_to_undo, parse_records
from workbench.checkpoints.store import checkpoint_store_of, record_rewind, rewind_records
from workbench.config.schema import CheckpointsConfig
from workbench.events import ActionEvent, CheckpointEvent, ErrorEvent
from workbench.session.steps import last_step, out_of_range, step_numbers

if TYPE_CHECKING:
    from workbench.session.log import LoadedSession


class CheckpointCommandError(Exception):
    """Bad input for a checkpoints command: the message says what and how to fix it."""


@dataclass(frozen=True)
class Step:
    """One checkpoint of a session: its step, the action behind it, what it changed."""

    step: int
    commit: str
    action: str
    event: CheckpointEvent


@dataclass(frozen=True)
class SessionCheckpoints:
    """A session's checkpoints, its workspace and the store that holds them."""

    session_id: str
    workspace: Path
    store: Path
    steps: list[Step]
    last: int = 0
    """The session's last step (`workbench/session/steps.py`): steps after the last checkpoint
    changed no files."""
    gaps: tuple[tuple[int, int, str], ...] = ()
    """Steps `first`..`last` taken while checkpoints were off (after a failed one: `why`)."""

    def at(self, step: int) -> Step:
        """The checkpoint of the workspace as it was after `step` (the latest at or before:
        the steps between changed no files)."""
        first = self.steps[0].step if self.steps else 0
        if not self.steps:
            raise CheckpointCommandError(
                f"session {self.session_id} has no checkpoints (checkpoints were off, or git "
                "is missing in the sandbox); nothing to rewind to or compare."
            )
        if step < first or step > self.last:
            raise CheckpointCommandError(
                out_of_range(step, first, self.last, self.session_id)
                + f" Fix: pick one (`workbench checkpoints {self.session_id}` lists those "
                "that changed files)."
            )
        for start, end, why in self.gaps:
            if start <= step <= end:
                raise CheckpointCommandError(
                    f"step {step} has no checkpoint: checkpoints stopped after step {start - 1} "
                    f"({why}), so the files of steps {start} to {end} are not known; nothing "
                    "was changed."
                )
        return [s for s in self.steps if s.step <= step][-1]


def load_checkpoints(log: Path) -> SessionCheckpoints:
    """The checkpoints recorded in the session log at `log`."""
    from workbench.session.log import read

    return checkpoints_of(read(log))


def checkpoints_of(loaded: LoadedSession) -> SessionCheckpoints:
    """The checkpoints recorded in a session log already read."""
    from workbench.tools.registry import REGISTRY

    workspace = Path(loaded.header.workspace)
    actions = {e.id: e for e in loaded.events if isinstance(e, ActionEvent)}
    numbers = step_numbers(loaded.events)
    steps: list[Step] = []
    gaps: list[tuple[int, int, str]] = []
    stopped: tuple[int, str] | None = None  # checkpoints failed: from which step, and why
    for event, number in zip(loaded.events, numbers, strict=True):
        if isinstance(event, ErrorEvent) and event.error_kind == "checkpoint" and not stopped:
            stopped = (steps[-1].step + 1 if steps else 0, event.message)
        if isinstance(event, CheckpointEvent) and stopped is not None:
            if number > stopped[0]:  # a later run took them again
                gaps.append((stopped[0], number - 1, stopped[1]))
            stopped = None
        if isinstance(event, CheckpointEvent):
            action = actions.get(event.cause) if event.cause is not None else None
            what = (
                REGISTRY.for_action(action.action).describe(action.action)
                if action is not None
                else "(before the first action)"
                if number == 0
                else "(the workspace when the session went on)"
            )
            steps.append(Step(number, event.commit, what, event))
    last = last_step(loaded.events)
    if stopped is not None and stopped[0] <= last:
        gaps.append((stopped[0], last, stopped[1]))
    return SessionCheckpoints(
        loaded.header.session_id,
        workspace,
        checkpoint_store_of(workspace),
        steps,
        last,
        tuple(gaps),
    )


def find_session(sessions: Path, wanted: str) -> Path:
    """The log of session `wanted` (an id, a unique prefix of one, or a log's path)."""
    as_path = Path(wanted).expanduser()
    if as_path.suffix == ".jsonl" and as_path.is_file():
        return as_path
    logs = sorted(sessions.glob("*.jsonl")) if sessions.is_dir() else []
    exact = [log for log in logs if log.stem == wanted]
    found = exact or [log for log in logs if log.stem.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise CheckpointCommandError(
            f"no session {wanted!r} in {sessions}. Fix: `workbench sessions` lists them."
        )
    names = ", ".join(log.stem for log in found[:5])
    raise CheckpointCommandError(f"{wanted!r} matches several sessions ({names}): give more of it.")


def open_store(
    found: SessionCheckpoints, config: CheckpointsConfig | None = None, key: str = "rewind"
) -> CheckpointStore:
    """The workspace's store, checked: the workspace must be where the session left it.
    `config` gives the exclusions (default: the person's config file's)."""
    if not found.workspace.is_dir():
        raise CheckpointCommandError(
            f"the workspace {found.workspace} of session {found.session_id} does not exist "
            "(moved or deleted); nothing was changed. Fix: put it back where it was."
        )
    if not (found.store / "HEAD").is_file():
        raise CheckpointCommandError(
            f"session {found.session_id} has no checkpoint store at {found.store}; nothing "
            "was changed (checkpoints were off, or the data folder was cleared)."
        )
    if config is None:
        from workbench.config.load import load_config

        config = load_config().checkpoints
    return CheckpointStore(
        found.store,
        found.workspace,
        ignore=tuple(config.ignore),
        max_file_bytes=int(config.max_file_mb * 1024 * 1024),
        key=key,
        reread=True,  # on the host: what git read is read again without following symlinks
    )


# --------------------------------------------------------------------------- rewinding


@dataclass(frozen=True)
class RewindPlan:
    """What a rewind will do: the commit to reach, the present's checkpoint, the changes."""

    target: str
    step: int | None
    present: str
    changes: Changes
    undoes: RewindRecord | None = None
    """For an undo: the recorded rewind or undo it undoes."""


def plan_rewind(found: SessionCheckpoints, store: CheckpointStore, target: Step) -> RewindPlan:
    """Checkpoint the present, and say what rewinding to `target` changes."""
    present = store.checkpoint(f"before rewinding {found.session_id} to step {target.step}")
    return RewindPlan(
        target.commit, target.step, present.commit, store.changes(present.commit, target.commit)
    )


def rewind(found: SessionCheckpoints, store: CheckpointStore, plan: RewindPlan) -> Changes:
    """Carry out `plan` and record it, so `--undo` can put the present back."""
    changes = store.restore(plan.target)
    record_rewind(found.store, found.session_id, plan.step, plan.target, plan.present)
    return changes


def undo_plan(found: SessionCheckpoints, store: CheckpointStore) -> RewindPlan:
    """The plan that undoes the next recorded rewind or undo of this session (`rewind_undo.py`:
    repeated undos walk back through them), after checkpointing the present."""
    store.head()  # checks the store before its records are read
    records = parse_records(rewind_records(found.store, found.session_id))
    if not records:
        raise CheckpointCommandError(
            f"session {found.session_id} has no rewind to undo; nothing was changed."
        )
    present = store.checkpoint(f"before undoing a rewind of {found.session_id}")
    record = next_to_undo(records, lambda r: store.changes(present.commit, r.target).empty)
    if record is None:  # not reached: there are records
        raise CheckpointCommandError(f"session {found.session_id} has no rewind to undo")
    changes = store.changes(present.commit, record.before)
    return RewindPlan(record.before, None, present.commit, changes, record)


def undo(found: SessionCheckpoints, store: CheckpointStore, plan: RewindPlan) -> Changes:
    """Carry out an undo plan and record it: the present it replaces is one undo away."""
    changes = store.restore(plan.target) if not plan.changes.empty else plan.changes
    undone = plan.undoes.index if plan.undoes is not None else None
    record_rewind(found.store, found.session_id, None, plan.target, plan.present, "undo", undone)
    return changes


# --------------------------------------------------------------------------- the commands
