"""Keep a process's memory, environment and fds away from other processes of the same uid."""

from __future__ import annotations

import contextlib
import sys

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


def make_undumpable() -> None:
    """PR_SET_DUMPABLE 0: processes of this uid without CAP_SYS_PTRACE cannot read our memory,
    environment or fds through /proc, nor ptrace us (root with capabilities still can)."""
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


def is_dumpable() -> bool:
    """Whether this process is dumpable (always True off Linux)."""
    if sys.platform != "linux":
        return True
    import ctypes

    return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))
