"""Waiting in pilot tests for something the app does in the background (a sandbox starting, a
reply arriving): `waiter` makes a test file's `_until(pilot, check, what, limit)`."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol


class Until(Protocol):
    """Pause the pilot until `check()` holds; an AssertionError naming `what` after `limit` s."""

    def __call__(
        self,
        pilot: Any,
        check: Callable[[], object],
        what: str,
        limit: float | None = None,
        *,
        state: Callable[[], str] | None = None,
    ) -> Awaitable[None]: ...


def waiter(
    default_limit: float,
    *,
    step: float = 0.05,
    explain: Callable[[Any], str] | None = None,
) -> Until:
    """An `_until` that waits `default_limit` seconds unless told otherwise, checking every
    `step` seconds; on timeout, the call's `state()` and `explain(pilot)` (if given) follow
    the message."""

    async def until(
        pilot: Any,
        check: Callable[[], object],
        what: str,
        limit: float | None = None,
        *,
        state: Callable[[], str] | None = None,
    ) -> None:
        deadline = time.monotonic() + (default_limit if limit is None else limit)
        while not check():
            if time.monotonic() > deadline:
                more = [state()] if state is not None else []
                more += [explain(pilot)] if explain is not None else []
                raise AssertionError("; ".join([f"timed out waiting for {what}", *more]))
            await pilot.pause(step)

    return until


async def holds(pilot: Any, check: Callable[[], object], seconds: float, what: str) -> None:
    """Something must NOT happen: `check()` stays true for `seconds` while the app runs
    (checked every 0.05 s). Only an absence needs time to pass; a presence uses `waiter`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not check():
            raise AssertionError(f"{what} stopped holding")
        await pilot.pause(0.05)
    assert check(), f"{what} stopped holding"


def is_showing(app: Any, screen_type: type) -> bool:
    """Whether `app`'s screen is a `screen_type` that is mounted: its widgets composed and its
    `on_mount` done. A pushed screen is `app.screen` a moment before that."""
    screen = app.screen
    return isinstance(screen, screen_type) and bool(screen.is_mounted)
