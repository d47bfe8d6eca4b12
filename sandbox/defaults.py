"""Defaults the sandbox's protocol and the workbench's config share, in a module that loads
nothing: `protocol.py` builds its pydantic models as it is imported (some 80 ms), which the
config (and so the TUI's first paint) need not wait for."""

from __future__ import annotations

DEFAULT_SOFT_TIMEOUT_S = 10.0
"""A running command with no new output for this long returns with exit code -1."""

DEFAULT_IGNORES = (
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".cache/",
    "*.pyc",
)
"""What a checkpoint leaves out unless `[checkpoints] ignore` says otherwise: folders of
installed packages and caches, rebuilt rather than restored."""
