"""The local runtime's process bookkeeping: the server's process tree from /proc, signalling
its group, and waiting (briefly, asynchronously) for processes to exit or vanish."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time

from sandbox.runtimes.leftovers import kill, session_processes


def descendants(pid: int) -> set[int]:
    """Every process below `pid` in the process tree (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def close_quietly(stream: object) -> None:
    close = getattr(stream, "close", None)
    if close is not None:
        with contextlib.suppress(OSError):
            close()


async def wait_exit(proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    delay = 0.002
    while proc.poll() is None and time.monotonic() < deadline:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)


async def wait_gone(session_id: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [pid for pid in session_processes(session_id) if not is_zombie(pid)]
        if not left:
            return
        kill(left)
        await asyncio.sleep(0.02)


async def wait_pids_gone(pids: set[int], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        left = [pid for pid in pids if not is_zombie(pid)]
        if not left:
            return
        kill(left)
        await asyncio.sleep(0.01)


def start_time(pid: int) -> bytes | None:
    """The process's start time (clock ticks after boot), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True
