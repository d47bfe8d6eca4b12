"""Where a configuration puts things: the workspace, and the folder of session logs."""

from __future__ import annotations

import os
from pathlib import Path

from workbench import paths
from workbench.config.schema import Config


def workspace_of(config: Config) -> Path:
    """The workspace directory: `sandbox.workspace`, or the current directory."""
    return Path(config.sandbox.workspace or os.getcwd()).expanduser().resolve()


def sessions_dir_of(config: Config) -> Path:
    """Where this config puts session logs (`session.dir`, else the user data dir's)."""
    return Path(config.session.dir).expanduser() if config.session.dir else paths.sessions_dir()
