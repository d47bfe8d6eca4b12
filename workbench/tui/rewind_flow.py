"""The TUI's "rewind to here": preview, ask, end the open session, rewind, branch.

The git work runs in a thread so the UI stays live; nothing changes until the person says yes
on `RewindScreen`, and the plan is made again then, so what the agent did meanwhile is covered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from sandbox.checkpoints import CheckpointError
from workbench.checkpoints.points import CheckpointCommandError
from workbench.checkpoints.rewind_here import preview, rewind_to_event
from workbench.config.schema import CheckpointsConfig
from workbench.session.log import SessionLogError
from workbench.tui.screens.rewind import RewindScreen

FAILURES = (CheckpointCommandError, CheckpointError, SessionLogError, OSError, ValueError)


class Asker(Protocol):
    """What the rewind uses of the app (Textual's own methods)."""

    def notify(self, *args: Any, **kwargs: Any) -> Any:
        """Show a toast."""

    async def push_screen_wait(self, *args: Any, **kwargs: Any) -> Any:
        """Show a screen and wait for its answer."""


async def rewind_here(
    app: Asker,
    event_id: int,
    source: Path | None,
    checkpoints: CheckpointsConfig,
    end_session: Callable[[], Awaitable[None]] | None,
    branch: Callable[[int, Path], None],
) -> None:
    """Rewind the files of the session logged at `source` to event `event_id` once the person
    agrees, then `branch` there; `end_session` (when the session is open now) runs first."""
    if source is None:
        app.notify("No session to rewind yet.", severity="warning", markup=False)
        return
    try:
        seen = await asyncio.to_thread(preview, source, event_id, checkpoints)
    except FAILURES as exc:
        app.notify(f"Cannot rewind here: {exc}", severity="error", timeout=10, markup=False)
        return
    if not await app.push_screen_wait(RewindScreen(seen, end_session is not None)):
        return
    if end_session is not None:
        await end_session()
    try:
        done = await asyncio.to_thread(rewind_to_event, source, event_id, checkpoints)
    except FAILURES as exc:
        app.notify(f"The rewind failed: {exc}", severity="error", timeout=10, markup=False)
        return
    branch(event_id, source)
    counts = f"+{len(done.changes.added)} ~{len(done.changes.changed)} -{len(done.changes.deleted)}"
    what = "already as they were" if done.changes.empty else f"rewound ({counts})"
    app.notify(
        f"Files {what} at step {done.step}. Type a message to go on from here; "
        f"`workbench rewind {done.session_id} --undo` puts them back.",
        timeout=10,
        markup=False,
    )
