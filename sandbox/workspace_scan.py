"""One walk of the workspace for what the protected paths do not name: set-id files, what anyone
may write, and nested repositories (a `.git` below the top folder). Run by the app when no
agent process runs (see `runtimes/host_guard.py`); never follows a symlink, stays on the
workspace's file system, and never opens a file's content.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Scan:
    """What one walk found, as paths relative to the workspace."""

    setid: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Set-id regular files -> (device, inode)."""
    gitdirs: list[str] = field(default_factory=list)
    """Nested `.git` folders (`sub/.git`), not the top one, and bare repositories (a folder
    with `HEAD`, `objects/` and `refs/`: git run inside it reads its `config`)."""
    shared: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Files and folders anyone may write (`o+w`; the workspace itself as "."; nothing inside
    the top `.git` but itself) -> (device, inode)."""
    gitfiles: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    """Nested `.git` files and symlinks (they send git elsewhere) -> their lstat signature."""


def is_setid(info: os.stat_result) -> bool:
    """A regular file that runs as its owner or group (set-gid without group execute is a lock
    mark, not a privilege)."""
    if not stat.S_ISREG(info.st_mode):
        return False
    return bool(info.st_mode & stat.S_ISUID) or (
        bool(info.st_mode & stat.S_ISGID) and bool(info.st_mode & stat.S_IXGRP)
    )


def scan(root: Path) -> Scan:
    """Walk `root` once (the top `.git` and nested git dirs are not entered)."""
    found = Scan()
    try:
        top = os.lstat(root)
    except OSError:
        return found
    device = top.st_dev
    if top.st_mode & stat.S_IWOTH:
        found.shared["."] = (top.st_dev, top.st_ino)
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        rel_here = here.relative_to(root)
        if rel_here != Path(".") and "HEAD" in files and {"objects", "refs"} <= set(dirs):
            found.gitdirs.append(str(rel_here))  # a bare repository: git run in it reads it
            dirs[:] = []
            continue
        kept = []
        for name in dirs:
            try:
                info = os.lstat(here / name)
            except OSError:
                continue
            if info.st_mode & stat.S_IWOTH and stat.S_ISDIR(info.st_mode):
                found.shared[str(rel_here / name)] = (info.st_dev, info.st_ino)
            if name == ".git":
                if rel_here != Path("."):
                    found.gitdirs.append(str(rel_here / name))
            elif info.st_dev == device:
                kept.append(name)
        dirs[:] = kept
        for name in files:
            path = here / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            rel = str(path.relative_to(root))
            if stat.S_ISREG(info.st_mode) and info.st_mode & stat.S_IWOTH:
                found.shared[rel] = (info.st_dev, info.st_ino)
            if name == ".git" and rel_here != Path("."):
                found.gitfiles[rel] = (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns)
            elif is_setid(info):
                found.setid[rel] = (info.st_dev, info.st_ino)
    return found
