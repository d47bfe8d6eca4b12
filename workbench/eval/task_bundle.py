"""A task folder packed into bytes on the driver and unpacked on a Ray node; a config file too.

`pack_task` makes a gzipped tar of the folder (regular files, folders and symlinks inside it,
in a stable order, without owners or times, so the same content gives the same bytes) and its
SHA-256. `unpack_task` extracts it once per content into `<temp>/workbench-ray-tasks/<digest>/`
(written under a temporary name, then renamed: trials unpacking the same task at once on one
node do not see each other's half-written copy) with tarfile's "data" filter, which refuses
absolute paths, `..`, links that leave the folder and device files.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

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
    if not hasattr(tarfile, "data_filter"):
        raise ValueError("unpacking a shipped task needs Python 3.11.4 or newer (tar filters)")
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
            tar.extractall(staging / name, filter="data")
        try:
            os.rename(staging / name, folder)
        except OSError:  # another trial unpacked it first
            if not folder.is_dir():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


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
