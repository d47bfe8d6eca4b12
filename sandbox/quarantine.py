"""Moving what the agent left under protected paths out of the workspace (`protect.py`).

Everything is reached through a folder's file descriptor (`/proc/self/fd/N/name`) and never
through a symlink; only regular files are copied (a FIFO could block the copy, a device or a
socket means nothing once copied), at most 16 MiB each.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

MAX_BYTES = 16 << 20


def copy_regular(source: str, target: str) -> None:
    """Copy `source` if it is a regular file; skip anything else. For `shutil.copytree`."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return
    with open(fd, "rb") as data:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            Path(target).write_bytes(data.read(MAX_BYTES))


def evict(dir_fd: int, name: str, target: Path) -> str:
    """Move `name` (in the folder `dir_fd`) to `target`, whatever it is; what happened."""
    here = f"/proc/self/fd/{dir_fd}/{name}"
    target.parent.mkdir(parents=True, exist_ok=True)
    info = os.lstat(name, dir_fd=dir_fd)
    if stat.S_ISDIR(info.st_mode):
        shutil.copytree(here, target, symlinks=True, copy_function=copy_regular)
        shutil.rmtree(here)
    elif stat.S_ISREG(info.st_mode):
        copy_regular(here, str(target))
        os.unlink(name, dir_fd=dir_fd)
    else:
        if stat.S_ISLNK(info.st_mode):
            link = os.readlink(name, dir_fd=dir_fd)
            target.with_name(target.name + ".symlink").write_text(link)
        os.unlink(name, dir_fd=dir_fd)
        return f"removed (a {_kind(info.st_mode)})"
    return f"moved out of the workspace to {target}"


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    return "FIFO" if stat.S_ISFIFO(mode) else "special file"
