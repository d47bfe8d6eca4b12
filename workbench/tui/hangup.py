"""A closed terminal (SIGHUP) or a SIGTERM closes the sandbox before the app ends: by default
either kills the app at once, leaving the sandbox's folder and log behind."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.tui.host import Host

HANGUP_CLOSE_S = 10.0
"""After SIGHUP or SIGTERM, at most this long to close the sandbox before the app exits."""
HANGUP_EXIT_S = 2.0
"""After that, at most this long for Textual to end before the process exits anyway."""


def watch_hangup(app: Host) -> None:
    """Close the sandbox, then end the app, on SIGHUP or SIGTERM (from the app's loop)."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGHUP, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, _hung_up, app)
            app.signals.append(sig)


def release_signals(app: Host) -> None:
    """Give the signals back (tests run many apps in one process)."""
    loop = asyncio.get_running_loop()
    for sig in app.signals:
        loop.remove_signal_handler(sig)
    app.signals.clear()


def _hung_up(app: Host) -> None:
    if not app.closing:
        app.closing = True
        app.run_worker(_close_and_exit(app), group="hangup")


async def _close_and_exit(app: Host) -> None:
    from workbench.exit_codes import INTERRUPTED

    if app.backend is not None:
        with contextlib.suppress(Exception):  # whatever happens, the app must end
            await asyncio.wait_for(app.backend.close(), HANGUP_CLOSE_S)
    # With the terminal gone, Textual's input thread may never stop (reads fail at once,
    # forever): once the sandbox is closed, nothing is left to save, so end regardless.
    import os
    import threading

    watchdog = threading.Timer(HANGUP_EXIT_S, os._exit, [INTERRUPTED])
    watchdog.daemon = True
    watchdog.start()
    app.exit(INTERRUPTED)
