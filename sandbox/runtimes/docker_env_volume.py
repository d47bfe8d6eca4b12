"""The Docker volume that holds a workspace's agent Python env (`sandbox/agent_env.py`).

One named volume per workspace (the app names it, `workbench/session/python_env_store.py`), labelled
with the workspace's host path, so that what a session installed is there for the next one.
A volume whose workspace folder is gone is of no use to anyone: each Docker runtime's start
removes those (one the engine still has in use is left for later).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

LABEL = "workbench.python-env"
"""Every env volume carries this label, its value the workspace's host path."""


def ensure_volume(client: Any, name: str, workspace: str) -> None:
    """Create volume `name` for `workspace` unless it exists (Docker keeps an existing one)."""
    client.volumes.create(name=name, labels={LABEL: workspace})


def remove_orphans(client: Any) -> list[str]:
    """Remove env volumes whose workspace folder no longer exists here; their names."""
    import docker.errors

    removed = []
    for volume in client.volumes.list(filters={"label": LABEL}):
        workspace = (volume.attrs.get("Labels") or {}).get(LABEL, "")
        if workspace and os.path.isabs(workspace) and not os.path.exists(workspace):
            with contextlib.suppress(docker.errors.APIError):  # in use, or removed meanwhile
                volume.remove()
                removed.append(str(volume.name))
    return removed
