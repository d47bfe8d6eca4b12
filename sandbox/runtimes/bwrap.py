"""Bubblewrap isolation for the local runtime: the workspace writable, the system read-only.

Binding `/` read-only and then the workspace at a path missing on the host fails ("Can't
mkdir"), so the system folders are bound one by one (merged-/usr symlinks kept as symlinks)
and the workspace where it is on the host. Folders not bound do not exist inside: the
person's home (`/root`, `/home`) is hidden except the workspace, and /tmp is a private tmpfs.
The network is shared: the runtime reaches the server on 127.0.0.1 (network off is applied to
the agent's processes only, by `sandbox/confine.py`). A root caller keeps its capabilities in
this outer bwrap, which the server needs to start the nested, capability-less one.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt")


@functools.cache
def bwrap_available() -> str | None:
    """None when bubblewrap works here (tried once, ~10 ms), otherwise why not."""
    if sys.platform != "linux":
        return "bubblewrap isolation needs Linux"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    # Nested, as the runtime uses it: a setuid bwrap (no unprivileged user namespaces) cannot
    # start the inner one, and "auto" must then fall back rather than fail to start.
    inner = [bwrap, "--bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc"]
    inner += ["--unshare-pid", "--cap-drop", "ALL", "true"]
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid"]
    probe += inner
    try:
        done = subprocess.run(probe, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not start: {exc}"
    if done.returncode != 0:
        error = done.stderr.decode(errors="replace").strip()
        return f"bubblewrap does not work here: {error or f'exit {done.returncode}'}"
    return None


def bwrap_command(
    workspace: Path,
    writable: Sequence[Path] = (),
    readable: Sequence[Path] = (),
    read_only: Sequence[Path] = (),
    tmpfs_size: int = 0,
    pinned: Sequence[Path] = (),
) -> list[str]:
    """The `bwrap ...` prefix that runs a command with only `workspace` (and `writable`) writable.

    `readable` adds folders the command needs to read (the Python installation, the package);
    `read_only` makes those of its files and folders inside the workspace that exist
    unchangeable (the profile's protected paths): a read-only bind of a file also refuses a
    rename over it (EBUSY), which is how git replaces `.git/config`. `pinned` folders stay
    writable but cannot be renamed or removed (the workspace's `.git`). `tmpfs_size` caps each
    of /tmp, /run and /dev/shm at that many bytes (0: half the RAM each, the kernel's default).
    """
    why = bwrap_available()
    if why is not None:
        raise RuntimeError(why)
    args = [
        shutil.which("bwrap") or "bwrap",
        "--die-with-parent",  # nothing survives the runtime's process
        "--unshare-pid",  # the server's processes die with it
        "--unshare-ipc",
        "--unshare-uts",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ]
    size = ["--size", str(tmpfs_size)] if tmpfs_size else []
    for folder in ("/tmp", "/run", "/dev/shm"):
        args += [*size, "--tmpfs", folder]
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for path in _outermost(readable):
        args += ["--ro-bind", str(path), str(path)]
    for path in _outermost([workspace, *writable]):
        args += ["--bind", str(path), str(path)]
    for path in pinned:
        # Bound over itself, writable: a mount point cannot be renamed or removed (EBUSY), so
        # the agent cannot move the person's `.git` away and put one of its own in its place.
        if path.is_dir() and os.path.realpath(path) == str(path):
            args += ["--bind", str(path), str(path)]
    protected = []
    for path in read_only:  # folders and files (protected paths, a home's dotfiles)
        # Not through a symlink: bwrap would bind wherever it points.
        real = (path.is_dir() or path.is_file()) and os.path.realpath(path) == str(path)
        if real:
            protected.append(path)
            args += ["--ro-bind", str(path), str(path)]
    for path in writable:  # what must stay writable inside them (a store under ~/.local)
        if path.exists() and any(path.resolve().is_relative_to(p) for p in protected):
            args += ["--bind", str(path.resolve()), str(path.resolve())]
    home = "/tmp/home"
    args += ["--dir", home, "--setenv", "HOME", home, "--chdir", str(workspace)]
    return args


def _outermost(paths: Sequence[Path]) -> list[Path]:
    """Existing folders of `paths`, resolved, without those inside another one."""
    resolved = sorted({p.resolve() for p in paths if p.exists()}, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for path in resolved:
        if not any(path.is_relative_to(outer) for outer in kept):
            kept.append(path)
    return kept
