"""Set-user-id and set-group-id bits the agent leaves on workspace files are cleared on the host.

The agent's uid owns what it makes in an idmapped workspace, and `chmod 4755` by a file's owner
is allowed: on the host that file then belongs to the person (root, when the app runs as root)
with the set-uid bit, so any other user who can reach the workspace runs it as the person. No
mount option prevents the bit being set (`nosuid` only ignores it on that mount), so the app
clears it when no agent process runs (`host_guard.HostGuard.check`: before the server starts and
when the session ends). A file that had the bit when the session began keeps it: the person's
own files are theirs to decide. The walk never follows a symlink and never opens a file's
content (a FIFO cannot block it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_SETID = stat.S_ISUID | stat.S_ISGID


def _is_setid(info: os.stat_result) -> bool:
    """A regular file that runs as its owner or group (set-gid without group execute is a lock
    mark, not a privilege)."""
    if not stat.S_ISREG(info.st_mode):
        return False
    return bool(info.st_mode & stat.S_ISUID) or (
        bool(info.st_mode & stat.S_ISGID) and bool(info.st_mode & stat.S_IXGRP)
    )


def setid_files(root: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (device, inode) of every set-id regular file under `root`, on its file
    system only, symlinks not followed."""
    found: dict[str, tuple[int, int]] = {}
    try:
        device = os.lstat(root).st_dev
    except OSError:
        return found
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        kept = []
        for name in dirs:
            try:
                if os.lstat(here / name).st_dev == device:
                    kept.append(name)
            except OSError:
                continue
        dirs[:] = kept
        for name in files:
            path = here / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if _is_setid(info):
                found[str(path.relative_to(root))] = (info.st_dev, info.st_ino)
    return found


def clear_new_setid(root: Path, baseline: dict[str, tuple[int, int]]) -> list[str]:
    """Clear the set-id bits of the set-id files under `root` that `baseline` does not hold (the
    same path and inode); the relative paths cleared."""
    cleared: list[str] = []
    for rel, key in setid_files(root).items():
        if baseline.get(rel) == key:
            continue
        try:
            fd = os.open(root / rel, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if _is_setid(info):
                os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) & ~_SETID)
                cleared.append(rel)
        except OSError:
            continue
        finally:
            os.close(fd)
    return cleared
