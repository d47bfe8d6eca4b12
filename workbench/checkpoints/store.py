"""Where a workspace's checkpoints are kept, and the record of rewinds that `--undo` reads.

The data dir and its `checkpoints` folder are private (0700): a store holds copies of every
workspace file, a `0600` secret among them. The rewind records are read and written without
following a symlink (`sandbox/store_files.py`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from pathlib import Path

from sandbox.store_files import CheckpointError, append_line, make_folder, read_file
from workbench import paths

REWINDS = "rewinds"
"""The store's folder of rewind records, one JSON-lines file per session (for --undo)."""


def private_folder(folder: Path) -> Path:
    """`folder`, made if missing, and 0700 when it is ours (its parents are made as usual)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
        folder.chmod(stat.S_IMODE(info.st_mode) & 0o700)
    return folder


def checkpoint_store_of(workspace: Path) -> Path:
    """Where the checkpoints of `workspace` are kept (one store per workspace, in the data dir;
    each session's log names its commits). The data dir and its `checkpoints` folder are made
    private (0700) on the way."""
    digest = hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()
    private_folder(paths.data_dir())
    folder = private_folder(paths.data_dir() / "checkpoints")
    return folder / f"{workspace.name[:40] or 'root'}-{digest[:16]}.git"


def _records(store: Path, session_id: str) -> Path:
    if not session_id or "/" in session_id or session_id.startswith(".") or "\0" in session_id:
        raise CheckpointError(f"{session_id!r} is not a session id: no rewind record is kept")
    return store / REWINDS / f"{session_id}.jsonl"


def rewind_records(store: Path, session_id: str) -> list[str]:
    """The rewinds of session `session_id` recorded in `store`, oldest first (JSON lines)."""
    found = read_file(store, _records(store, session_id))
    return (found or b"").decode("utf-8", "replace").splitlines()


def record_rewind(
    store: Path,
    session_id: str,
    step: int | None,
    target: str,
    before: str,
    kind: str = "rewind",
    undoes: int | None = None,
) -> None:
    """Note a rewind (or, `kind="undo"`, an undo of record `undoes`) of session `session_id` in
    `store`: `before` is the state it replaced, `target` the one it made. Nothing is ever
    dropped: `--undo` walks back through these records (`rewind_undo.py`)."""
    record: dict[str, object] = {"at": time.time(), "to_step": step, "target": target}
    record["before"] = before
    if kind != "rewind":
        record |= {"kind": kind, "undoes": undoes}
    make_folder(store, store / REWINDS)
    append_line(store, _records(store, session_id), json.dumps(record) + "\n")
