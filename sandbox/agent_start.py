"""Start one agent process as its own uid: `python -I -S agent_start.py OPTIONS -- ARGV...`.

Run as root by the nested bwrap of the local runtime (`sandbox/confine.py`), in that bwrap's
private mount namespace: join the session's cgroups (write "0" to each `cgroup.procs`), give
the folders the agent writes idmapped mounts (`sandbox/idmap.py`), show its passwd and group
entry, set `RLIMIT_NPROC` when no cgroup limits its processes, then set every uid and gid to the
agent's (which clears all capabilities), set no-new-privileges and exec ARGV. `-I -S`: nothing
from the environment, the workspace or site-packages runs while the process is still root.
It runs before every shell, kernel and browser start, so it imports only `os`, `sys` and
`ctypes` (json, pathlib or re would double its ~20 ms). OPTIONS (`AgentUser.to_argv`):
`--uid U --gid G --name N [--idmap PATH UID GID]... [--join FILE]... [--passwd F] [--group F]
[--nproc N]`.
"""

from __future__ import annotations

import os
import sys

_PR_SET_NO_NEW_PRIVS = 38
_RLIMIT_NPROC = 6


def fail(what: str) -> None:
    """Stop with a message the shell or the kernel's log shows."""
    sys.exit(f"sandbox: cannot start the agent's process as its own uid: {what}")


def parse(args: list[str]) -> tuple[dict[str, str], list[tuple[str, int, int]], list[str]]:
    """(single options, --idmap triples, --join files) of OPTIONS."""
    single: dict[str, str] = {}
    idmap: list[tuple[str, int, int]] = []
    join: list[str] = []
    at = 0
    while at < len(args):
        name = args[at]
        if name == "--idmap":
            idmap.append((args[at + 1], int(args[at + 2]), int(args[at + 3])))
            at += 4
        elif name == "--join":
            join.append(args[at + 1])
            at += 2
        elif name in ("--uid", "--gid", "--name", "--passwd", "--group", "--nproc"):
            single[name[2:]] = args[at + 1]
            at += 2
        else:
            fail(f"unknown option {name!r}")
    return single, idmap, join


def start(args: list[str], argv: list[str]) -> None:
    """Do it all, then exec `argv` (never returns)."""
    single, folders, join = parse(args)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ctypes

    from sandbox import idmap

    for procs in join:
        try:
            with open(procs, "w") as handle:
                handle.write("0")
        except OSError as exc:
            fail(f"joining the session's cgroup ({procs}): {exc}")
    uid, gid = int(single["uid"]), int(single["gid"])
    try:
        idmap.idmap_folders(folders, (uid, gid))
        if folders:  # the working folder still points into the mount beneath: look it up again
            os.chdir(os.getcwd())
        for key, target in (("passwd", "/etc/passwd"), ("group", "/etc/group")):
            if single.get(key):
                idmap.bind_read_only(single[key], target)
    except OSError as exc:
        fail(str(exc))
    libc = ctypes.CDLL(None, use_errno=True)
    if single.get("nproc"):
        nproc = int(single["nproc"])
        limit = (ctypes.c_ulong * 2)(nproc, nproc)  # setrlimit without importing resource
        if libc.setrlimit(_RLIMIT_NPROC, limit) != 0:
            fail("RLIMIT_NPROC could not be set")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        fail("the uid did not change")
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("no_new_privs could not be set")
    os.environ.update(USER=single["name"], LOGNAME=single["name"])
    try:
        os.execv(_which(argv[0]), argv)
    except OSError as exc:
        sys.stderr.write(f"sandbox: cannot run {argv[0]}: {exc.strerror}\n")
        sys.stderr.flush()
        os._exit(127)


def _which(program: str) -> str:
    """`program`'s path on PATH (os.execvp would import `warnings`, slow and maybe unreadable)."""
    if "/" in program:
        return program
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        path = os.path.join(folder or ".", program)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return program  # execv then says it is not there


if __name__ == "__main__":
    if "--" not in sys.argv:
        fail("usage: agent_start.py OPTIONS -- ARGV...")
    split = sys.argv.index("--")
    start(sys.argv[1:split], sys.argv[split + 1 :])
