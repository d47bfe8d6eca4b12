"""What checkpoints leave to the app: its own folder `.workbench/` at the workspace's root.

The app writes there itself (the project's rules, written by "always allow" and the rules
screen); the agent cannot (`sandbox/profile.py` protects it). So it is no step's change: it is
never recorded, and a restore never changes or deletes it, whatever a checkpoint taken before
this rule (a store made by an earlier version) holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

APP_FOLDER = ".workbench"
"""The app's own folder in the workspace, left out of every checkpoint and restore."""
APP_EXCLUDE = f"/{APP_FOLDER}/"
"""Its line in the store's exclude file (gitignore syntax: only at the workspace's root)."""

Git = Callable[..., bytes]


def is_app_path(name: str) -> bool:
    """True for the app's folder and anything under it (paths relative to the workspace)."""
    return name == APP_FOLDER or name.startswith(APP_FOLDER + "/")


def agent_paths(names: Iterable[str]) -> tuple[str, ...]:
    """`names` without the app's own paths."""
    return tuple(name for name in names if not is_app_path(name))


def agent_tree(git: Git, commit: str) -> str:
    """The tree of `commit` without the app's folder (the commit itself when it has none);
    `git` runs a git command in the store and returns its output."""
    entries = [e for e in git("ls-tree", "-z", commit).split(b"\0") if e]
    kept = [e for e in entries if e.split(b"\t", 1)[-1] != APP_FOLDER.encode()]
    if len(kept) == len(entries):
        return commit
    return git("mktree", "-z", input=b"".join(e + b"\0" for e in kept)).decode().strip()
