"""The local runtime's agent uid when the app runs as root: which uid, which folders it writes.

With bubblewrap and the app running as root, the agent's processes run as a separate
unprivileged uid (`sandbox.local.agent_uid`; by default the first of 61000-61999 that has no
passwd entry), never as root: `sandbox/agent_uid.py` drops to it inside the nested bwrap after
giving it idmapped mounts of the folders it must write, so what it creates there belongs to each
folder's owner on the host. This module picks the uid and describes those folders.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Sequence
from pathlib import Path

from sandbox.agent_uid import AgentUser

DEFAULT_UIDS = range(61000, 62000)
TMPFS = ("/tmp", "/run", "/dev/shm")
"""The bwrap tmpfs folders the agent writes (made by root: owner 0); its HOME is /tmp/home."""


def default_agent_uid() -> int:
    """The first uid of 61000-61999 without a passwd entry (61000 if all have one)."""
    for uid in DEFAULT_UIDS:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    return DEFAULT_UIDS.start


def runs_as_own_uid(isolation: str, agent_uid: int) -> bool:
    """Whether the agent gets a uid of its own: bwrap isolation, the app root, uid not 0."""
    return isolation == "bwrap" and os.geteuid() == 0 and agent_uid != 0


def agent_user(
    uid: int,
    workspace: Path,
    extra: Sequence[Path],
    folder: Path,
    join: Sequence[Path] = (),
    nproc: int = 0,
) -> AgentUser:
    """The agent as `uid` (its gid the same number): the tmpfs folders, the workspace and the
    `extra` folders it writes (those outside the others) idmapped from their owners to it, a
    passwd and group file with its entry written into `folder`, `join` the cgroups to join."""
    name = _free_name("workbench", uid)
    idmap: list[tuple[str, int, int]] = [(path, 0, 0) for path in TMPFS]
    for path in [workspace, *extra]:
        path = path.resolve()
        if not path.is_dir():
            continue
        info = path.stat()
        owner = (info.st_uid, info.st_gid)
        # A folder inside one already mapped from the same owner is mapped with it.
        if not any(path.is_relative_to(p) and (u, g) == owner for p, u, g in idmap):
            idmap.append((str(path), *owner))
    passwd, group = folder / "passwd", folder / "group"
    home = "/tmp/home"
    passwd.write_text(_with_line("/etc/passwd", f"{name}:x:{uid}:{uid}:workbench agent:{home}:"
                                 "/bin/bash", uid, 2))  # fmt: skip
    group.write_text(_with_line("/etc/group", f"{name}:x:{uid}:", uid, 2))
    for path in (passwd, group):
        path.chmod(0o644)
    return AgentUser(
        uid,
        uid,
        name,
        idmap,
        [str(p) for p in join],
        str(passwd),
        str(group),
        nproc,
    )


def _free_name(base: str, uid: int) -> str:
    """`base` unless another uid has that name, then `base<uid>`."""
    try:
        entry = pwd.getpwnam(base)
    except KeyError:
        return base
    return base if entry.pw_uid == uid else f"{base}{uid}"


def _with_line(path: str, line: str, number: int, field: int) -> str:
    """The file at `path` with `line` added unless an entry already has `number` in `field`."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for entry in text.splitlines():
        parts = entry.split(":")
        if len(parts) > field and parts[field] == str(number):
            return text
    return text + ("" if text.endswith("\n") or not text else "\n") + line + "\n"
