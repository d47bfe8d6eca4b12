"""The `checkpoints` executor: `checkpoint` and `restore` actions on the workspace's store."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from sandbox.checkpoints import DEFAULT_IGNORES, Checkpoint, CheckpointError, CheckpointStore
from sandbox.executors import git_missing
from sandbox.executors.base import ExecutorContext, register
from sandbox.protocol import (
    Action,
    CheckpointAction,
    CheckpointObservation,
    ErrorObservation,
    Observation,
    RestoreAction,
)


class CheckpointExecutor:
    """Checkpoints and restores the workspace (one store per sandbox)."""

    name: ClassVar[str] = "checkpoints"
    action_kinds: ClassVar[tuple[str, ...]] = ("checkpoint", "restore")

    def __init__(self, store: CheckpointStore) -> None:
        self.store = store

    @classmethod
    def from_context(cls, context: ExecutorContext) -> CheckpointExecutor:
        """Built by the sandbox on the first checkpoint."""
        path = context.checkpoints or context.artifacts.parent / "checkpoints.git"
        return cls(on_store(path, context.workspace))

    def execute(self, action: Action) -> Observation:
        """Take a checkpoint, or restore one (after checkpointing the present)."""
        try:
            if isinstance(action, CheckpointAction):
                self.store.ignore = tuple(action.ignore) or DEFAULT_IGNORES
                self.store.max_file_bytes = action.max_file_bytes
                return _observed(self.store.checkpoint(action.label))
            if isinstance(action, RestoreAction):
                self.store.checkpoint("before a restore")  # the present is never lost
                changes = self.store.restore(action.commit)
                return CheckpointObservation(
                    commit=action.commit,
                    added=_names(changes.added),
                    changed=_names(changes.changed),
                    deleted=_names(changes.deleted),
                )
        except CheckpointError as exc:
            return ErrorObservation(content=str(exc))
        return ErrorObservation(content=f"the checkpoints executor does not do {action.kind}")

    def close(self) -> None:
        """Drop this sandbox's index and branch; the checkpoints stay in the store."""
        self.store.forget()


def on_store(path: Path, workspace: Path, reread: bool = False) -> CheckpointStore:
    """A new sandbox's view of the store at `path`: an index and branch of its own
    (`reread`: outside the agent's sandbox, see `CheckpointStore.reread`)."""
    return CheckpointStore(path, workspace, key=secrets.token_hex(6), reread=reread)


def _observed(checkpoint: Checkpoint) -> CheckpointObservation:
    changes = checkpoint.changes
    return CheckpointObservation(
        commit=checkpoint.commit,
        added=_names(changes.added),
        changed=_names(changes.changed),
        deleted=_names(changes.deleted),
        skipped=_names(checkpoint.skipped),
        seconds=checkpoint.seconds,
    )


def _names(paths: Sequence[str]) -> list[str]:
    """`paths` as text JSON can carry: a byte of a name that is not UTF-8 becomes U+FFFD (such
    a name once made the observation fail to send, and the step's checkpoint went unrecorded)."""
    return [p.encode("utf-8", "surrogateescape").decode("utf-8", "replace") for p in paths]


register(
    "checkpoints", CheckpointExecutor.action_kinds, CheckpointExecutor.from_context, git_missing
)
