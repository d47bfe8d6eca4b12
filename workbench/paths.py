"""Every filesystem location workbench uses, in one place.

The config dir holds `config.toml` and user themes; the data dir holds session logs. Both
follow platformdirs, and `WORKBENCH_CONFIG_DIR` / `WORKBENCH_DATA_DIR` override them (tests
point them at temporary dirs). Nothing here creates a directory: callers that write do.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

APP_NAME = "workbench"
CONFIG_DIR_ENV = "WORKBENCH_CONFIG_DIR"
DATA_DIR_ENV = "WORKBENCH_DATA_DIR"
CONFIG_FILE_NAME = "config.toml"


def _override(name: str, env: Mapping[str, str] | None) -> Path | None:
    value = (os.environ if env is None else env).get(name, "")
    return Path(value).expanduser() if value else None


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user config dir (`WORKBENCH_CONFIG_DIR` or platformdirs' for "workbench")."""
    return _override(CONFIG_DIR_ENV, env) or Path(platformdirs.user_config_dir(APP_NAME))


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The user data dir (`WORKBENCH_DATA_DIR` or platformdirs' for "workbench")."""
    return _override(DATA_DIR_ENV, env) or Path(platformdirs.user_data_dir(APP_NAME))


def sessions_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where session logs live unless `session.dir` says otherwise."""
    return data_dir(env) / "sessions"


def themes_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where user themes live (beside the config file)."""
    return config_dir(env) / "themes"


def default_config_file(env: Mapping[str, str] | None = None) -> Path:
    """The config file read when no `--config` is given (it need not exist)."""
    return config_dir(env) / CONFIG_FILE_NAME
