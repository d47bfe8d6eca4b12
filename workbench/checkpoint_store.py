"""Where a workspace's checkpoints are kept, and the record of rewinds that `--undo` reads."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from workbench import paths

REWINDS = "rewinds"
"""The store's folder of rewind records, one JSON-lines file per session (for --undo)."""


def checkpoint_store_of(workspace: Path) -> Path:
    """Where the checkpoints of `workspace` are kept (one store per workspace, in the data dir;
    each session's log names its commits)."""
    digest = hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()
    return paths.data_dir() / "checkpoints" / f"{workspace.name[:40] or 'root'}-{digest[:16]}.git"


def record_rewind(store: Path, session_id: str, step: int | None, target: str, before: str) -> None:
    """Note a rewind of session `session_id` in `store`, so `--undo` can put `before` back."""
    record = {"at": time.time(), "to_step": step, "target": target, "before": before}
    folder = store / REWINDS
    folder.mkdir(exist_ok=True)
    with (folder / f"{session_id}.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")
