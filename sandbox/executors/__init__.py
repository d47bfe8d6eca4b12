"""Executors: one module per family of actions, registered by name in `base`.

- `bash`: the persistent shell (pexpect pty), streams output while a command runs.
- `files`: the `str_replace_editor` contract.
- `jupyter`: an IPython kernel through jupyter_client.
- `browser`: BrowserGym driving Debian's Chromium (optional: missing Chromium is reported).
- `checkpoints`: the workspace's checkpoints (`sandbox/checkpoints.py`; needs git).
- `mcp`: MCP servers started inside the sandbox, and calls to their tools (needs `mcp`).
Importing a module registers it; heavy imports happen when the executor is first built.
"""

from __future__ import annotations

import importlib

BUILTIN = ("bash", "files", "jupyter", "browser", "checkpoints", "mcp")


def load_builtin_executors() -> None:
    """Import the built-in executor modules so that they register themselves."""
    for name in BUILTIN:
        try:
            importlib.import_module(f"sandbox.executors.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"sandbox.executors.{name}":
                raise
