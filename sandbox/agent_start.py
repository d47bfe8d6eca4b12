"""Start one agent process as its own uid: `python -I -S agent_start.py SPEC -- ARGV...`.

Run as root by the nested bwrap of the local runtime (`sandbox/confine.py`), in that bwrap's
private mount namespace: join the session's cgroups (write "0" to each `cgroup.procs`), give
the folders the agent writes idmapped mounts (`sandbox/idmap.py`), show its passwd and group
entry, set `RLIMIT_NPROC` when no cgroup limits its processes, then set every uid and gid to the
agent's (which clears all capabilities), set no-new-privileges and exec ARGV. `-I -S`: nothing
from the environment, the workspace or site-packages runs while the process is still root.
SPEC is `confine.AgentUser.to_json()`.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import warnings  # noqa: F401  (os.execvp imports it, and after the drop it may be unreadable)
from pathlib import Path

_PR_SET_NO_NEW_PRIVS = 38


def fail(what: str) -> None:
    """Stop with a message the shell or the kernel's log shows."""
    sys.exit(f"sandbox: cannot start the agent's process as its own uid: {what}")


def start(spec: dict[str, object], argv: list[str]) -> None:
    """Do it all, then exec `argv` (never returns)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sandbox import idmap

    for procs in spec["join"]:  # type: ignore[attr-defined]
        try:
            Path(procs).write_text("0")
        except OSError as exc:
            fail(f"joining the session's cgroup ({procs}): {exc}")
    uid, gid = int(spec["uid"]), int(spec["gid"])  # type: ignore[call-overload]
    try:
        folders = [(str(p), int(u), int(g)) for p, u, g in spec["idmap"]]  # type: ignore[attr-defined]
        idmap.idmap_folders(folders, (uid, gid))
        if folders:  # the working folder still points into the mount beneath: look it up again
            os.chdir(os.getcwd())
        for source, target in ((spec["passwd"], "/etc/passwd"), (spec["group"], "/etc/group")):
            if source:
                idmap.bind_read_only(str(source), target)
    except OSError as exc:
        fail(str(exc))
    if spec["nproc"]:
        import resource

        nproc = int(spec["nproc"])  # type: ignore[call-overload]
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
        fail("the uid did not change")
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        fail("no_new_privs could not be set")
    os.environ.update(USER=str(spec["name"]), LOGNAME=str(spec["name"]))
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        fail("usage: agent_start.py SPEC -- ARGV...")
    start(json.loads(sys.argv[1]), sys.argv[3:])
