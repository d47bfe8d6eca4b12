"""The checkpoint store's own files, handled without ever following a symlink.

The store holds copies of the workspace, and the host reads and writes it (`workbench rewind`,
`diff`, resume): a symlink planted in it (`refs/heads/.rewind.tmp`, `rewinds`) once made the
host overwrite a file of its choosing. So before a store is used, `check_store` walks it and
refuses any symlink or special file in it, takes back what another uid owns (as root) and makes
it private (folders 0700, files not readable by others); and the files workbench writes there
itself are opened with `O_NOFOLLOW` and created with `O_EXCL`, every folder on the way checked.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


class CheckpointError(Exception):
    """A checkpoint or restore that could not be done; the message says why and what to do."""


def _tampered(root: Path, where: str, what: str) -> CheckpointError:
    return CheckpointError(
        f"the checkpoint store {root} was tampered with: {where} is {what}. Nothing was read "
        "or changed through it. Fix: look at what it points to, then delete that store "
        f"(`rm -rf {root}`; its checkpoints are lost) or remove the entry."
    )


def check_store(root: Path) -> None:
    """Refuse a store holding a symlink or a special file anywhere; make it private (0700
    folders, files not readable by others) and, as root, ours again."""
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise _tampered(root, str(root), "not a folder")
    _own(root, str(root), info, root)
    pending = [root]
    while pending:
        folder = pending.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                where = os.path.relpath(entry.path, root)
                found = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(found.st_mode):
                    raise _tampered(root, where, f"a symlink to {os.readlink(entry.path)!r}")
                if stat.S_ISDIR(found.st_mode):
                    pending.append(Path(entry.path))
                elif not stat.S_ISREG(found.st_mode):
                    raise _tampered(root, where, "not a regular file")
                _own(Path(entry.path), where, found, root)


def _own(path: Path, where: str, info: os.stat_result, root: Path) -> None:
    """Make `path` (just seen by lstat, not a symlink) ours and private."""
    me = os.geteuid()
    if info.st_uid != me:
        if me != 0:
            raise _tampered(root, where, f"owned by uid {info.st_uid}, not by you")
        os.chown(path, 0, 0, follow_symlinks=False)
    private = stat.S_IMODE(info.st_mode) & ~0o077
    if stat.S_IMODE(info.st_mode) != private:
        os.chmod(path, private)


def _no_links(root: Path, folder: Path) -> None:
    """Refuse when `folder` or a folder between `root` and it is a symlink or not a folder."""
    parts = folder.relative_to(root).parts
    for depth in range(len(parts) + 1):
        path = root.joinpath(*parts[:depth])
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            raise _tampered(root, str(path.relative_to(root)) or ".", "not a folder")


def make_folder(root: Path, folder: Path) -> None:
    """Create `folder` under `root` (0700, parents too), refusing a symlink on the way."""
    _no_links(root, folder)
    parts = folder.relative_to(root).parts
    for depth in range(len(parts) + 1):
        path = root.joinpath(*parts[:depth])
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
    _no_links(root, folder)


def _open_regular(root: Path, path: Path, flags: int) -> int:
    """An fd of the regular file `path` in the store (made 0600 with O_CREAT), never through a
    symlink and never blocking on a FIFO; a symlink or a special file there is refused."""
    _no_links(root, path.parent)
    flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path):
            raise _tampered(root, str(path.relative_to(root)), "a symlink") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _tampered(root, str(path.relative_to(root)), "not a regular file")
    return fd


def read_file(root: Path, path: Path) -> bytes | None:
    """The bytes of the regular file `path` in the store (None if there is none); a symlink
    or a special file there is refused."""
    try:
        fd = _open_regular(root, path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_file(root: Path, path: Path, data: bytes) -> None:
    """Replace `path` in the store with `data` (0600): written to a new file beside it, which
    a symlink planted under the temporary's name cannot redirect, then renamed over it."""
    _no_links(root, path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temporary)  # a symlink planted there goes, its target untouched
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)
    os.replace(temporary, path)  # replaces a symlink itself, never its target


def append_line(root: Path, path: Path, line: str) -> None:
    """Append `line` to the regular file `path` in the store (made 0600), never through a
    symlink."""
    fd = _open_regular(root, path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def glob_escape(name: str) -> str:
    """`name` as a gitignore pattern matching only itself."""
    return "".join("\\" + c if c in "*?[]\\!# " else c for c in name)


def glob_unescape(text: str) -> str:
    """The name a `glob_escape` pattern matches."""
    out = []
    escaped = False
    for char in text:
        if char == "\\" and not escaped:
            escaped = True
            continue
        out.append(char)
        escaped = False
    return "".join(out)
