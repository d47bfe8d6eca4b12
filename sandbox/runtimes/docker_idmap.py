"""A root-owned workspace for a non-root agent in Docker, through an idmapped mount on the host.

When the app runs as root and the workspace belongs to root, the Docker runtime no longer runs
the agent as root: it runs it as an unprivileged uid (the first of 61000-61999 without a passwd
entry) and hands the container not the workspace itself but an idmapped mount of it
(`sandbox/idmap.py`, map root -> that uid) made in a folder of its own on the host. Inside, the
workspace's files are the agent's; what it creates is written as root's on the host. Docker
binds the mount when the container starts, after which the host side is unmounted at once
(the container keeps its own), so nothing stays mounted on the host; a folder left by an app that
died between the two is unmounted and removed by the next start (never deleted recursively:
it may still show the workspace).

It needs the engine to share our mount namespace (a local dockerd), a file system that supports
idmapped mounts and root; otherwise `prepare` says why and the runtime keeps the old way (the
agent is the workspace owner, root here, with a warning).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from pathlib import Path

from sandbox import idmap
from sandbox.limits import pid_alive
from sandbox.runtimes.agent_user import default_agent_uid

PREFIX = "workbench-idmap-"
log = logging.getLogger("sandbox.docker")


def workspace_for_agent(workspace: Path, chosen: bool) -> tuple[Path, int]:
    """The folder to mount at /workspace and the agent's uid when chosen here (else 0).

    Unless the uid is `chosen` elsewhere (configured, or a kept-alive container, which must
    find its workspace again after this mount is gone), with the app root and the workspace
    root's, the agent gets an unprivileged uid and an idmapped mount of the workspace; where
    that cannot be made, the workspace as it is and the entry point's choice (its owner)."""
    if chosen or os.geteuid() != 0:
        return workspace, 0
    try:
        if workspace.stat().st_uid != 0:
            return workspace, 0
    except OSError:
        return workspace, 0
    shown, uid, why = prepare(workspace)
    if shown is None:
        log.info("the agent runs as the workspace's owner (root): %s", why)
        return workspace, 0
    return shown, uid


def prepare(workspace: Path) -> tuple[Path | None, int, str]:
    """An idmapped mount of the root-owned `workspace` for a non-root agent: (its path on the
    host, the agent's uid, "") or (None, 0, why not)."""
    why = _why_not()
    if why:
        return None, 0, why
    sweep()
    uid = default_agent_uid()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    try:
        space = idmap.userns((0, 0), (uid, uid))
        try:
            tree = idmap.clone(str(workspace), space)
        finally:
            os.close(space)
        idmap.attach(tree, str(folder))
    except OSError as exc:
        with contextlib.suppress(OSError):
            folder.rmdir()
        return None, 0, f"cannot make an idmapped mount of {workspace}: {exc}"
    return folder, uid, ""


def release(folder: Path) -> None:
    """Unmount the host side (the container keeps its own) and remove the empty folder."""
    with contextlib.suppress(OSError):
        idmap.detach(str(folder))
    with contextlib.suppress(OSError):
        folder.rmdir()


def sweep() -> None:
    """Unmount and remove the folders of apps that died before releasing theirs."""
    root = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in root.iterdir():
            owner = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if entry.name.startswith(PREFIX) and owner.isdigit() and not pid_alive(int(owner)):
                release(entry)


def _why_not() -> str:
    if os.geteuid() != 0:
        return "idmapped mounts need root"
    try:
        ours = os.readlink("/proc/self/ns/mnt")
    except OSError as exc:
        return f"cannot read our mount namespace: {exc}"
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if Path(f"/proc/{entry}/comm").read_bytes().strip() == b"dockerd":
                same = os.readlink(f"/proc/{entry}/ns/mnt") == ours
                return "" if same else "the Docker engine runs in another mount namespace"
        except OSError:
            continue
    return "the Docker engine does not run on this machine"
