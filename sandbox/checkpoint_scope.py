"""What checkpoints leave to the app: its own folders, where they are inside the workspace.

The app writes `.workbench/` at the workspace's root itself (the project's rules, written by
"always allow" and the rules screen); the agent cannot (`sandbox/profile.py` protects it). And
when the workspace holds the app's data folder (a home folder as the workspace), that folder
holds the session logs, the trust records and the checkpoint store itself. None of it is a
step's change: it is never recorded, and a restore never changes or deletes it, whatever a
checkpoint taken before this rule (a store made by an earlier version) holds at the root.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

APP_FOLDER = ".workbench"
"""The app's own folder in the workspace, left out of every checkpoint and restore."""
STORES = "checkpoints"
"""The data folder's folder of checkpoint stores (`<data>/checkpoints/<name>.git`)."""

Git = Callable[..., bytes]


def app_folders(workspace: Path, store: Path) -> tuple[str, ...]:
    """The app's folders inside `workspace` (relative): `.workbench`, and the data folder that
    holds `store` (or the store's own folder, outside the usual layout) when it is inside."""
    found = [APP_FOLDER]
    root = os.path.realpath(workspace)
    home = Path(os.path.realpath(store)).parent
    if home.name == STORES:
        home = home.parent
    inside = os.path.relpath(home, root)
    if inside != "." and not inside.startswith(".."):
        found.append(inside.replace(os.sep, "/"))
    return tuple(found)


def is_app_path(name: str, folders: Sequence[str] = (APP_FOLDER,)) -> bool:
    """True for an app folder and anything under it (paths relative to the workspace)."""
    return any(name == f or name.startswith(f + "/") for f in folders)


def agent_paths(names: Iterable[str], folders: Sequence[str] = (APP_FOLDER,)) -> tuple[str, ...]:
    """`names` without the app's own paths."""
    return tuple(name for name in names if not is_app_path(name, folders))


def agent_tree(git: Git, commit: str) -> str:
    """The tree of `commit` without `.workbench` at its root (the commit itself when it has
    none); `git` runs a git command in the store and returns its output."""
    entries = [e for e in git("ls-tree", "-z", commit).split(b"\0") if e]
    kept = [e for e in entries if e.split(b"\t", 1)[-1] != APP_FOLDER.encode()]
    if len(kept) == len(entries):
        return commit
    return git("mktree", "-z", input=b"".join(e + b"\0" for e in kept)).decode().strip()
