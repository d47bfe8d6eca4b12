"""Where a re-run starts: its workspace made what the recorded session's workspace was when the
session started (its first checkpoint, step 0), so an `ls` or `cat` of a file the person had
there gives what it gave then.

Only an empty workspace is filled: a `--workspace` that holds files is used as it is (the
person prepared it). The checkpoint comes out of the recorded workspace's store through
`CheckpointStore` (its own branch, `rerun`, beside the sessions' ones): the store is read, the
recorded workspace is not touched. Where there is no checkpoint (checkpoints were off, the
store is gone, an OpenHands trajectory), the sentence returned says that the comparison starts
from an empty folder.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.checkpoints import CheckpointStore
from sandbox.store_files import CheckpointError
from workbench.checkpoints.store import checkpoint_store_of
from workbench.config.schema import CheckpointsConfig
from workbench.events import CheckpointEvent
from workbench.replay.recording import Recording

EMPTY = "from an empty folder"
REFERENCE_KEY = "rerun"
"""The store's branch (and index) a re-run's workspace is filled through."""


def _count(text: str, what: str) -> str:
    return f"{text} {what}" + ("" if text == "1" else "s")


def prepare_workspace(
    recording: Recording, workspace: Path, config: CheckpointsConfig, sessions: Path
) -> str:
    """Fill an empty `workspace` with the recorded session's checkpoint 0; returns how the
    re-run's workspace starts, as the end of "the workspace starts ...". Only a log in the
    person's own sessions folder (`sessions`) is trusted to name a store: a log from elsewhere
    could name the store of one of their projects."""
    if any(workspace.iterdir()):
        return f"as {workspace} is (not empty, so the recorded start was not put in it)"
    if recording.format != "workbench":
        return f"{EMPTY}: an OpenHands trajectory does not record the files it started with"
    if recording.path.resolve().parent != sessions.resolve():
        return (
            f"{EMPTY}: the log is not in your sessions folder ({sessions}), so the checkpoints "
            "it names are not read"
        )
    first = next((e for e in recording.events if isinstance(e, CheckpointEvent)), None)
    if first is None:
        return f"{EMPTY}: the session has no checkpoint of its start (checkpoints were off)"
    try:
        store_path = checkpoint_store_of(Path(recording.workspace))
    except OSError as exc:
        return f"{EMPTY}: the checkpoint store cannot be opened ({exc})"
    if not (store_path / "HEAD").is_file():
        return f"{EMPTY}: the checkpoint store of {recording.workspace} is gone ({store_path})"
    store = CheckpointStore(
        store_path,
        workspace,
        ignore=tuple(config.ignore),
        max_file_bytes=int(config.max_file_mb * 1024 * 1024),
        key=REFERENCE_KEY,
        reread=True,
    )
    try:
        store.checkpoint("re-run start")  # the empty folder: what the restore starts from
        changes = store.restore(first.commit)
    except CheckpointError as exc:
        return f"{EMPTY}: checkpoint {first.step} could not be restored ({exc})"
    files = _count(str(len(changes.added)), "file")
    left_out = (
        f"; {_count(str(len(first.skipped)), 'file')} over the size limit were not recorded"
        if first.skipped
        else ""
    )
    return (
        f"as session {recording.session_id}'s did: its checkpoint {first.step} ({files}; "
        f"ignored folders such as .venv are never recorded){left_out}"
    )
