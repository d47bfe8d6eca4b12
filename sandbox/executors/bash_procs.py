"""Find and kill every process a shell started, so that closing a session leaves nothing behind.

Job control gives each pipeline its own process group, so killing the shell's group is not
enough: we kill everything in the shell's session (it is the session leader) and everything
below it in the process tree (which catches children that called `setsid`). Linux reads /proc;
elsewhere we fall back to the shell's process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

_PROC = Path("/proc")


def session_processes(leader: int) -> set[int]:
    """Live (non-zombie) pids in the session of `leader` or descended from it."""
    children: dict[int, list[int]] = {}
    found: set[int] = set()
    try:
        entries = list(os.scandir(_PROC))
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (_PROC / entry.name / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) < 4 or fields[0] in ("Z", "X"):
            continue
        pid, ppid, session = int(entry.name), int(fields[1]), int(fields[3])
        children.setdefault(ppid, []).append(pid)
        if session == leader:
            found.add(pid)
    todo = [leader, *found]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    found.discard(os.getpid())
    return found


def kill_session(leader: int) -> None:
    """SIGKILL the session leader `leader` and every process of its session and subtree."""
    if leader <= 1 or leader == os.getpid():
        return
    if not _PROC.is_dir():
        with contextlib.suppress(OSError):
            os.killpg(leader, signal.SIGKILL)
        return
    for _ in range(10):  # again, for processes forked while we were killing
        pids = session_processes(leader)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
