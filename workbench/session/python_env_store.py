"""Where a workspace's agent Python env is kept (`sandbox/agent_env.py`): one per workspace.

Per workspace, not per session: what the agent installed for a project is there again when a
session on it is resumed or a new one starts, and a kernel restart keeps it. Outside the
workspace (nothing of it is committed or checkpointed) and outside the sandbox image: for the
local runtime a folder of the app's data dir (private, 0700: the host never runs or imports
what is in it; only sandboxes show it to the agent), for Docker a named volume.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from workbench import paths
from workbench.checkpoints.store import private_folder


def _digest(workspace: Path) -> str:
    return hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def python_env_of(workspace: Path) -> Path:
    """The host folder of `workspace`'s agent env (local runtime); its parents made private."""
    private_folder(paths.data_dir())
    folder = private_folder(paths.data_dir() / "python-envs")
    return folder / f"{workspace.name[:40] or 'root'}-{_digest(workspace)}"


def python_env_volume(workspace: Path) -> str:
    """The Docker volume name of `workspace`'s agent env (Docker runtime)."""
    return f"workbench-python-env-{_digest(workspace)}"
