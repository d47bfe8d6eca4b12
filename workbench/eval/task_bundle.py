"""A task folder packed into bytes on the driver and unpacked on a Ray node; a config file too.

`pack_task` makes a gzipped tar of the folder (regular files, folders and symlinks inside it,
in a stable order, without owners or times, so the same content gives the same bytes) and its
SHA-256. `unpack_task` extracts it once per content into `<temp>/workbench-ray-tasks/<digest>/`
(written under a temporary name, then renamed: trials unpacking the same task at once on one
node do not see each other's half-written copy) by `_extract`, which takes regular files,
folders and symlinks that stay inside the folder, and refuses anything else (absolute paths,
`..`, links that leave the folder, hard links, devices, a path through a symlink) with a
`tarfile.TarError`. It is our own rather than tarfile's "data" filter, which Python 3.11 has
only from 3.11.4 (Debian 12 ships 3.11.2).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

MAX_BYTES = 200 * 1024 * 1024
"""A task folder larger than this packed is refused: put such datasets on a shared filesystem."""
CACHE = "workbench-ray-tasks"
CONFIGS = "workbench-ray-configs"


def pack_task(folder: Path) -> tuple[str, bytes]:
    """(sha256 hex, gzipped tar bytes) of `folder`'s content."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
        for path in sorted(folder.rglob("*")):
            info = tar.gettarinfo(str(path), arcname=str(path.relative_to(folder)))
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            if info.isfile():
                with path.open("rb") as stream:
                    tar.addfile(info, stream)
            elif info.isdir() or info.issym():
                tar.addfile(info)
    data = buffer.getvalue()
    if len(data) > MAX_BYTES:
        raise ValueError(
            f"the task folder {folder} is {len(data) // 2**20} MB packed, over the "
            f"{MAX_BYTES // 2**20} MB a trial ships: put the dataset on a filesystem every node "
            "mounts at the same path and run with task shipping off"
        )
    return hashlib.sha256(data).hexdigest(), data


def unpack_task(digest: str, data: bytes, name: str) -> Path:
    """The task folder `name` with this content on this machine, unpacked if not there yet."""
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError("the task's bytes do not match their digest")
    root = Path(tempfile.gettempdir()) / CACHE / digest
    folder = root / name
    if folder.is_dir():
        return folder
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            _extract(tar, staging / name)
        try:
            os.rename(staging / name, folder)
        except OSError:  # another trial unpacked it first
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


class UnsafeMember(tarfile.TarError):
    """A member of a shipped task that would land outside its folder, or is no plain file."""


def _member_path(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\0" in name:
        raise UnsafeMember(f"{name!r} would leave the task's folder")
    return path


def _extract(tar: tarfile.TarFile, dest: Path) -> None:
    """Extract `tar` into `dest`: files, folders, and symlinks last (so nothing is written
    through one); each path checked before anything is written."""
    members = [(member, _member_path(member.name)) for member in tar.getmembers()]
    links: list[tuple[PurePosixPath, str]] = []
    linked: set[PurePosixPath] = set()
    for member, path in members:
        if member.issym():
            points_to = PurePosixPath(member.linkname)
            inside = PurePosixPath(*path.parts[:-1], *points_to.parts)
            if points_to.is_absolute() or _escapes(inside):
                raise UnsafeMember(f"the link {member.name!r} points out of the task's folder")
            links.append((path, member.linkname))
            linked.add(path)
        elif not (member.isfile() or member.isdir()):
            raise UnsafeMember(f"{member.name!r} is neither a file, a folder nor a link")
    dest.mkdir(parents=True)
    for member, path in members:
        if any(PurePosixPath(*path.parts[:i]) in linked for i in range(1, len(path.parts))):
            raise UnsafeMember(f"{member.name!r} goes through a link")
        target = dest.joinpath(*path.parts)
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isfile():
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None  # a regular file always has a stream
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as out:
                shutil.copyfileobj(source, out)
            os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
    for path, linkname in links:
        target = dest.joinpath(*path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(linkname, target)


def _escapes(path: PurePosixPath) -> bool:
    """Whether a relative path, `..` resolved lexically, climbs above its start."""
    depth = 0
    for part in path.parts:
        depth += -1 if part == ".." else 0 if part == "." else 1
        if depth < 0:
            return True
    return False


def write_config(data: bytes, suffix: str) -> Path:
    """A config file with this content on this machine, readable by its owner only."""
    root = Path(tempfile.gettempdir()) / CONFIGS
    root.mkdir(mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    path = root / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
    if not path.is_file():
        fd, staging = tempfile.mkstemp(dir=root, prefix=".config-")  # mode 0600
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(staging, path)
    return path
