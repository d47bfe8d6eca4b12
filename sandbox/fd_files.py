"""File operations through folder descriptors, for code that works in folders the agent writes.

Each step refuses a symlink (`O_NOFOLLOW`), a read never blocks on a FIFO (`O_NONBLOCK`) and
takes only regular files, and a replacement is a fresh file renamed into place.
"""

from __future__ import annotations

import os
import stat

MAX_BYTES = 1 << 20


def exists(dir_fd: int, name: str) -> bool:
    """Whether `name` exists in the folder `dir_fd` (a dangling symlink too)."""
    try:
        os.lstat(name, dir_fd=dir_fd)
    except OSError:
        return False
    return True


def open_dir(dir_fd: int, rel: str) -> int:
    """Open the folder `rel` under `dir_fd`, refusing a symlink at every step."""
    fd = os.dup(dir_fd)
    for part in [p for p in rel.split("/") if p not in ("", ".")]:
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                          dir_fd=fd)  # fmt: skip
        finally:
            os.close(fd)
        fd = nxt
    return fd


def read_regular(dir_fd: int, name: str, limit: int = MAX_BYTES) -> bytes:
    """The first `limit` bytes of the regular file `name`; OSError for anything else."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(name, flags, dir_fd=dir_fd)
    with open(fd, "rb") as source:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(0, "not a regular file")
        return source.read(limit)


def replace(dir_fd: int, name: str, data: bytes) -> None:
    """Put `data` in place of `name` by a rename: a new file, whatever the agent holds open."""
    temporary = f".{name}.sandbox-guard-{os.urandom(6).hex()}"  # never one the agent planted
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o644, dir_fd=dir_fd)
    try:
        with open(fd, "wb") as out:
            out.write(data)
        os.rename(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except OSError:
        os.unlink(temporary, dir_fd=dir_fd)
        raise
