"""What git's stat check cannot see: a file written again in the same second it was staged.

git compares a file with its index entry by stat, and (as built here, without `USE_NSEC`) the
change time by the second only. Its "racy git" rule reads a file again when its mtime is not
older than the index, but an edit that puts the old mtime back (`touch -r`, `cp -p`, `rsync
-t`, an editor keeping it) and keeps the size, made in the same second as the stat git
recorded, leaves every compared field as it was: `git add -A` misses it, and so did every
checkpoint. So the store keeps the full stat (to the nanosecond) of each file it staged whose
change time falls in the second of staging, and at the next checkpoint looks at those few
again: one that changed is staged anew. Before staging, a file written in the current clock
tick is waited for (a few ms at most) so a later write shows a new change time. Once a check
is made after the end of that second, git's own comparison suffices and the file is dropped.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

Signature = tuple[int, int, int, int, int, int]
"""(inode, size, mode, mtime ns, ctime ns, device) of one file."""
_SECOND = 1_000_000_000
_CLOCK = getattr(
    time, "CLOCK_REALTIME_COARSE", 5 if sys.platform.startswith("linux") else time.CLOCK_REALTIME
)
"""Linux's CLOCK_REALTIME_COARSE (5; named in `time` from Python 3.13): what files are
stamped with."""
_TICK_WAIT_S = 0.05
"""At most this long to wait for the clock tick of a file's last write to end."""


def _coarse_ns() -> int:
    """The clock the kernel stamps files with (one tick behind the precise clock at most)."""
    return time.clock_gettime_ns(_CLOCK)


def signature(path: Path) -> Signature | None:
    """`path`'s stat as compared here (None when it is gone)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (
        info.st_ino,
        info.st_size,
        info.st_mode,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_dev,
    )


class RecentWrites:
    """The staged files that a same-second write could hide from git, and their stat."""

    def __init__(self) -> None:
        self._known: dict[str, Signature] = {}

    def capture(self, workspace: Path, names: Iterable[str]) -> dict[str, Signature]:
        """The stat of each file about to be staged, taken before git reads it; waits out the
        clock tick of a write made in it, so a later write changes the change time."""
        taken = {n: s for n in names if (s := signature(workspace / n)) is not None}
        newest = max((s[4] for s in taken.values()), default=0)
        deadline = time.monotonic() + _TICK_WAIT_S
        while newest >= _coarse_ns() and time.monotonic() < deadline:
            time.sleep(0.001)
        return taken

    def remember(self, taken: dict[str, Signature]) -> None:
        """Keep those of `taken` (just staged) changed in this second or the one before."""
        since = (_coarse_ns() // _SECOND - 1) * _SECOND
        self._known.update((n, s) for n, s in taken.items() if s[4] >= since)

    def changed(self, workspace: Path, seen: Iterable[str]) -> list[str]:
        """The remembered files (not in `seen`) whose stat differs now; those checked after
        the end of their change's second are forgotten (git's comparison sees what follows)."""
        now = _coarse_ns()
        skip = set(seen)
        hidden: list[str] = []
        for name, old in list(self._known.items()):
            if name in skip:
                del self._known[name]
                continue
            current = signature(workspace / name)
            if current != old:
                hidden.append(name)
                del self._known[name]
            elif now >= (old[4] // _SECOND + 1) * _SECOND:
                del self._known[name]
        return sorted(hidden)

    def forget(self) -> None:
        """Drop everything (after a restore rewrote the workspace and the index)."""
        self._known.clear()
