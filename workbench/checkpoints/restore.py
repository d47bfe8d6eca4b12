"""Put a workspace's files back to a point of a session, from its checkpoints.

A resumed or branched session goes on from the files as they were at its last carried-over
checkpoint, and `replay --continue-from N` from those of step N (`docs/checkpoints.md`). The
present state is checkpointed first and recorded as a rewind of the parent session, so
`workbench rewind PARENT --undo` puts back what was there; what checkpoints do not cover is
never touched. Nothing is done when the session has no checkpoint or the files already match.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandbox.checkpoints import CheckpointError, CheckpointStore
from workbench.checkpoints.store import checkpoint_store_of, record_rewind
from workbench.config.schema import CheckpointsConfig
from workbench.events import CheckpointEvent, Event


def last_checkpoint(events: Sequence[Event]) -> CheckpointEvent | None:
    """The latest checkpoint among `events`."""
    found = [event for event in events if isinstance(event, CheckpointEvent)]
    return found[-1] if found else None


def restore_files(
    events: Sequence[Event],
    session_id: str,
    source: Path,
    target: Path,
    config: CheckpointsConfig,
) -> str:
    """Make `target` what `source` (the session's workspace) was at the last checkpoint of
    `events`; a sentence saying what was done (empty: nothing to do)."""
    point = last_checkpoint(events)
    store_path = checkpoint_store_of(source)
    if point is None or not (store_path / "HEAD").is_file() or not config.enabled:
        return ""
    store = CheckpointStore(
        store_path,
        target,
        ignore=tuple(config.ignore),
        max_file_bytes=int(config.max_file_mb * 1024 * 1024),
        key="continue",
        reread=True,  # on the host: what git read is read again without following symlinks
    )
    try:
        present = store.checkpoint(f"before continuing session {session_id}")
        changes = store.changes(present.commit, point.commit)
        if changes.empty:
            return ""
        store.restore(point.commit)
    except CheckpointError as exc:
        return (
            f"The files could not be restored to step {point.step} ({exc}); they are as they were."
        )
    finally:
        store.forget()
    record_rewind(store_path, session_id, point.step, point.commit, present.commit)
    counts = f"+{len(changes.added)} ~{len(changes.changed)} -{len(changes.deleted)}"
    return (
        f"The workspace's files were restored to step {point.step} of session {session_id} "
        f"({counts}); `workbench rewind {session_id} --undo` puts back what was there."
    )
