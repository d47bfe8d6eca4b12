"""Rewinding a session's files to one of its events: the TUI's "rewind to here".

The point is the last checkpoint recorded at or before the event. `preview` says what a rewind
would change without changing anything; `rewind_to_event` does it, checkpointing the present
first and recording it, so `workbench rewind SESSION --undo` puts the present back. Both block
(git runs): call them from a thread.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sandbox.checkpoints import Changes
from workbench.checkpoints.points import (
    CheckpointCommandError,
    SessionCheckpoints,
    Step,
    checkpoints_of,
    open_store,
    plan_rewind,
    rewind,
)
from workbench.config.schema import CheckpointsConfig
from workbench.session.steps import step_reached


@dataclass(frozen=True)
class RewindPreview:
    """What rewinding session `session_id` to its step `step` would change in `workspace`."""

    session_id: str
    workspace: Path
    step: int
    changes: Changes


def _target(log: Path, event_id: int) -> tuple[SessionCheckpoints, Step]:
    """The session's checkpoints, and the one a branch at event `event_id` goes on from: the
    last among the events it keeps (`resume.cut_at`: an action keeps its result and its
    checkpoint), as the step reached there (`steps.step_reached`: the number `workbench
    rewind --to` takes). The log is read once."""
    from workbench.checkpoints.restore import last_checkpoint
    from workbench.session.log import read
    from workbench.session.resume import history_of

    loaded = read(log)
    found = checkpoints_of(loaded)
    kept = history_of(loaded, event_id).events
    point = last_checkpoint(kept)
    steps = [step for step in found.steps if point is not None and step.event.id == point.id]
    if not steps:
        raise CheckpointCommandError(
            f"session {found.session_id} has no checkpoint at or before this point "
            "(checkpoints were off, or git is missing in the sandbox); nothing was changed."
        )
    return found, replace(steps[-1], step=step_reached(loaded.events, len(kept)))


def preview(log: Path, event_id: int, config: CheckpointsConfig) -> RewindPreview:
    """What `rewind_to_event` would change now; the workspace is left as it is."""
    found, target = _target(log, event_id)
    plan = plan_rewind(found, open_store(found, config), target)
    return RewindPreview(found.session_id, found.workspace, target.step, plan.changes)


def rewind_to_event(log: Path, event_id: int, config: CheckpointsConfig) -> RewindPreview:
    """Make the workspace what it was at the event with id `event_id`; what changed."""
    found, target = _target(log, event_id)
    store = open_store(found, config)
    plan = plan_rewind(found, store, target)
    changes = rewind(found, store, plan) if not plan.changes.empty else plan.changes
    return RewindPreview(found.session_id, found.workspace, target.step, changes)


def step_diff(workspace: Path, before: str | None, after: str) -> str:
    """The unified diff between two checkpoints of `workspace` (None: the empty tree)."""
    from sandbox.checkpoints import CheckpointStore
    from workbench.checkpoints.store import checkpoint_store_of

    store = checkpoint_store_of(workspace)
    if not (store / "HEAD").is_file():
        raise CheckpointCommandError(f"no checkpoint store for {workspace} at {store}")
    return CheckpointStore(store, workspace, key="diff").diff(before, after)
