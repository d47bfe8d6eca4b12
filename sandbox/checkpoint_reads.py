"""What a checkpoint read, read again without following any symlink.

git stages a file by `lstat` and then `open`, which follows a symlink: an agent that swaps a
file for a symlink between the two (a tight loop does it) has git store what the link points
to. Where the checkpoint runs outside the agent's sandbox (the Docker runtime's checkpoints run
on the host), that is a host file, which a later rewind or resume would write into the
workspace. So there each staged file is read again beneath the workspace, every folder on the
way opened with `O_NOFOLLOW`, and what git stored is replaced when it is not that file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def read_beneath(root: Path, name: str) -> bytes | None:
    """The bytes of the regular file `name` (relative, `/`-separated) under `root`, reached
    without following a symlink anywhere on the way; None when it is not such a file now."""
    parts = name.split("/")
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR, dir_fd=fd)
            os.close(fd)
            fd = inner
        found = os.open(parts[-1], _FILE, dir_fd=fd)
    except OSError:
        os.close(fd)
        return None
    os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(found).st_mode):
            return None
        chunks = []
        while chunk := os.read(found, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.close(found)


def blob_id(data: bytes) -> str:
    """git's object id of a blob holding `data`."""
    header = b"blob %d\0" % len(data)
    return hashlib.sha1(header + data, usedforsecurity=False).hexdigest()


def misread(
    root: Path, index: bytes, wanted: set[str] | None
) -> tuple[list[tuple[str, str, bytes]], list[str]]:
    """Compare each regular file of `index` (`git ls-files -s -z`) named in `wanted` (None:
    all) with the file read again: (mode, name, bytes) of those git stored other bytes for,
    and the names that are no longer a regular file."""
    differ: list[tuple[str, str, bytes]] = []
    gone: list[str] = []
    for entry in index.decode(errors="surrogateescape").split("\0"):
        if not entry:
            continue
        info, name = entry.split("\t", 1)
        mode, sha = info.split(" ")[:2]
        if mode not in ("100644", "100755"):
            continue
        if wanted is not None and name not in wanted and not _in_folder(name, wanted):
            continue
        data = read_beneath(root, name)
        if data is None:
            gone.append(name)
        elif blob_id(data) != sha:
            differ.append((mode, name, data))
    return differ, gone


def _in_folder(name: str, wanted: set[str]) -> bool:
    parts = name.split("/")
    return any("/".join(parts[:i]) + "/" in wanted for i in range(1, len(parts)))
