"""Idmapped mounts: show a folder with its owner's files belonging to another uid (Linux >= 5.12).

Python 3.11 has no binding for the new mount API, so the calls go through `syscall` (x86_64 and
aarch64 share these numbers). `open_tree(OPEN_TREE_CLONE | AT_RECURSIVE)` clones a folder's
mount tree, `mount_setattr(MOUNT_ATTR_IDMAP)` gives the clone the uid map of a user namespace
(made by a short-lived child that unshares one; we write its maps), `move_mount` attaches it.
With the map "owner -> agent", a file the owner has on disk shows as the agent's, and a file
the agent creates is written as the owner's. Needs CAP_SYS_ADMIN, and a file system that
supports it (ext4, xfs, btrfs, tmpfs since 6.3, overlayfs ...). Standard library only: the
agent's uid set-up (`agent_uid.py`) and the Docker runtime (`runtimes/docker_idmap.py`) use it.
"""

from __future__ import annotations

import ctypes
import os

_OPEN_TREE, _MOVE_MOUNT, _MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _O_CLOEXEC, _AT_RECURSIVE, _AT_EMPTY_PATH = 1, 0o2000000, 0x8000, 0x1000
_MOUNT_ATTR_IDMAP, _MOVE_MOUNT_F_EMPTY_PATH, _AT_FDCWD = 0x100000, 4, -100
_CLONE_NEWUSER = 0x10000000
_MNT_DETACH = 2

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("set", "clr", "propagation", "userns")]


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def userns(owner: tuple[int, int], agent: tuple[int, int]) -> int:
    """An fd of a new user namespace mapping `owner` (uid, gid) to `agent` (one id each)."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child only unshares and waits: no Python objects of the parent used
        os.close(ready_r)
        os.close(go_w)
        ok = _libc.unshare(_CLONE_NEWUSER) == 0
        os.write(ready_w, b"1" if ok else b"0")
        os.read(go_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(go_r)
    try:
        if os.read(ready_r, 1) != b"1":
            raise OSError("unshare(CLONE_NEWUSER) failed in the helper process")
        maps = (
            ("uid_map", _swap(owner[0], agent[0])),
            ("setgroups", "deny"),
            ("gid_map", _swap(owner[1], agent[1])),
        )
        for name, text in maps:
            with open(f"/proc/{pid}/{name}", "w") as handle:
                handle.write(text)
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(go_w, b"1")
        os.close(go_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def _swap(owner: int, agent: int) -> str:
    """A map line showing `owner`'s files as `agent`'s, and the other way round: so root, in
    the nested bwrap before it drops to the agent, can still make its mount points there (an
    id the map lacks cannot create anything: EOVERFLOW). Nothing on disk belongs to the agent's
    own uid but what root made that way."""
    if owner == agent:
        return f"{owner} {agent} 1"
    return f"{owner} {agent} 1\n{agent} {owner} 1"


def clone(path: str, userns_fd: int) -> int:
    """A detached, idmapped clone of the mount tree at `path` (an fd for `attach`)."""
    fd = _check(
        _libc.syscall(_OPEN_TREE, _AT_FDCWD, path.encode(), _OPEN_TREE_CLONE | _O_CLOEXEC
                      | _AT_RECURSIVE),
        f"open_tree {path}",
    )  # fmt: skip
    attr = _MountAttr(_MOUNT_ATTR_IDMAP, 0, 0, userns_fd)
    try:
        _check(
            _libc.syscall(_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH | _AT_RECURSIVE,
                          ctypes.byref(attr), ctypes.sizeof(attr)),
            f"idmapping {path} (does its file system support idmapped mounts?)",
        )  # fmt: skip
    except OSError:
        os.close(fd)
        raise
    return fd


def attach(tree: int, target: str) -> None:
    """Mount the clone `tree` at `target` (over what is there) and close its fd."""
    try:
        _check(
            _libc.syscall(_MOVE_MOUNT, tree, b"", _AT_FDCWD, target.encode(),
                          _MOVE_MOUNT_F_EMPTY_PATH),
            f"move_mount {target}",
        )  # fmt: skip
    finally:
        os.close(tree)


def idmap_clones(
    folders: list[tuple[str, int, int]], agent: tuple[int, int]
) -> list[tuple[int, str]]:
    """For each (path, owner uid, owner gid), an idmapped clone of its mount tree (owner ->
    agent) and the path, for `attach`. Every clone is taken before any is attached, so a folder
    inside another is cloned as it is, not through an idmapped parent (which cannot be idmapped
    again)."""
    spaces: dict[tuple[int, int], int] = {}
    trees: list[tuple[int, str]] = []
    try:
        for path, uid, gid in folders:
            if (uid, gid) not in spaces:
                spaces[uid, gid] = userns((uid, gid), agent)
            trees.append((clone(path, spaces[uid, gid]), path))
    except OSError:
        for tree, _ in trees:
            os.close(tree)
        raise
    finally:
        for fd in spaces.values():
            os.close(fd)
    return trees


def detach(target: str) -> None:
    """Unmount `target` lazily (`umount2(MNT_DETACH)`)."""
    _check(_libc.umount2(target.encode(), _MNT_DETACH), f"umount {target}")
