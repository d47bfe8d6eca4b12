"""Read-only bind mounts made by the sandbox server during a session (local runtime, bubblewrap).

The server runs in the outer bwrap's mount namespace; each agent process runs in a nested one
made later (`confine.py`). A mount the server adds afterwards reaches those namespaces only if
the workspace's mount is *shared* when they are made: their copy is then a slave of it, and
every mount added under the workspace in the server's namespace propagates into them, even
into processes started long before. So `share(workspace)` runs before the first agent process,
and `bind_read_only(fd)` locks one path for every agent process, present and future.

A remount to read-only does not propagate, a new mount does, with its flags: so the path is
first bound read-only at a private staging point, then that read-only mount is bound over the
path. Paths are named by an `O_PATH` file descriptor (`/proc/self/fd/N`), never by a path a
symlink swapped in meanwhile could redirect. The agent has no capabilities: it cannot unmount.
"""

from __future__ import annotations

import ctypes
import os
import stat
import tempfile
from pathlib import Path

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_SHARED = 1 << 20
MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_stage: Path | None = None
_mirrors: list[tuple[str, str]] = []
"""(folder, mirror): other mounts of a folder that agent processes see in its place (the
agent's idmapped view of the workspace, `agent_uid.py`). A lock under the folder is made under
each mirror too: a bind under the folder itself would stay hidden beneath the mirror."""


def _mount(source: str | None, target: str, flags: int) -> None:
    src = source.encode() if source is not None else None
    if _libc.mount(src, target.encode(), None, flags, None) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"mount {source} on {target}: {os.strerror(error)}")


def share(workspace: Path) -> str | None:
    """Make the workspace's mount shared (recursively); None when done, else why not."""
    try:
        _mount(None, str(workspace), MS_SHARED | MS_REC)
    except OSError as exc:
        return str(exc)
    return None


def mirror(folder: str, place: str) -> None:
    """Agent processes see the mount at `place` where `folder` is: make it shared (so later
    locks under it reach them, as `share` does for the folder) and lock under it too."""
    _mount(None, place, MS_SHARED | MS_REC)
    _mirrors.append((folder, place))


def _mirrored(path: str) -> list[str]:
    """The paths under the mirrors that stand for `path` (a real path, no symlink in it)."""
    found = []
    for folder, place in _mirrors:
        if path == folder or path.startswith(folder.rstrip("/") + "/"):
            found.append(place + path[len(folder) :])
    return found


def _staging() -> Path:
    global _stage
    if _stage is None:
        _stage = Path(tempfile.mkdtemp(prefix="sandbox-stage-"))
        os.chmod(_stage, 0o700)
    return _stage


def bind_read_only(fd: int) -> None:
    """Bind the file or folder open as `fd` (O_PATH) read-only over itself, for every agent
    process; OSError when it cannot be done."""
    info = os.fstat(fd)
    stage = _staging() / ("dir" if stat.S_ISDIR(info.st_mode) else "file")
    if not stage.exists():
        if stat.S_ISDIR(info.st_mode):
            stage.mkdir(mode=0o700)
        else:
            stage.touch(mode=0o600)
    here = f"/proc/self/fd/{fd}"
    _mount(here, str(stage), MS_BIND)
    try:
        _mount(None, str(stage), MS_PRIVATE)
        _mount(None, str(stage), MS_REMOUNT | MS_BIND | MS_RDONLY)
        for there in _mirrored(os.readlink(here)):
            # Named without following a link at its end (the agent writes under the mirror).
            mirror_fd = os.open(there, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                _mount(str(stage), f"/proc/self/fd/{mirror_fd}", MS_BIND)
            finally:
                os.close(mirror_fd)
        _mount(str(stage), here, MS_BIND)
    finally:
        _libc.umount2(str(stage).encode(), MNT_DETACH)


def unbind(path: str) -> None:
    """Remove the read-only bind at `path` (ours), for every agent process; OSError if not."""
    for there in _mirrored(os.path.realpath(path)):
        _libc.umount2(there.encode(), MNT_DETACH)
    if _libc.umount2(path.encode(), MNT_DETACH) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"umount {path}: {os.strerror(error)}")
