"""Set-user-id and set-group-id bits the agent leaves on workspace files are cleared on the host.

The agent's uid owns what it makes in an idmapped workspace, and `chmod 4755` by a file's owner
is allowed: on the host that file then belongs to the person (root, when the app runs as root)
with the set-uid bit, so any other user who can reach the workspace runs it as the person. No
mount option prevents the bit being set (`nosuid` only ignores it on that mount), so the app
clears it when no agent process runs (`host_guard.HostGuard.check`: before the server starts and
when the session ends). A file that had the bit when the session began keeps it: the person's
own files are theirs to decide. Found by `workspace_scan.scan`; no symlink is followed.

So with write access for everyone (`chmod 777 . .git`): on the host any local user could then
swap the person's `.git` for one with hooks of theirs; `o+w` the agent added is taken back.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sandbox.workspace_scan import is_setid

_SETID = stat.S_ISUID | stat.S_ISGID


def clear_new_setid(
    root: Path,
    found: dict[str, tuple[int, int]],
    baseline: dict[str, tuple[int, int]],
    bits: int = _SETID,
) -> list[str]:
    """Clear `bits` (the set-id bits; or `o+w`) of the paths `found` under `root` that
    `baseline` does not hold (the same path and inode); the relative paths cleared."""
    cleared: list[str] = []
    for rel, key in found.items():
        if baseline.get(rel) == key:
            continue
        try:
            fd = os.open(root / rel, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            wanted = is_setid(info) if bits == _SETID else bool(info.st_mode & bits)
            if wanted and (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(info.st_mode) & ~bits)
                cleared.append(rel)
        except OSError:
            continue
        finally:
            os.close(fd)
    return cleared
