"""Waiting on a condition with a deadline: the one way tests synchronise with what they start.

A fixed sleep before an assertion is a guess at how fast the machine is; these poll the
condition instead and fail with what was awaited once the (generous: CI runs loaded) deadline
passes. Both return the condition's first true value.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_S = 0.02


def wait_until(
    condition: Callable[[], T], within_s: float = 30.0, what: str = "", *, poll_s: float = POLL_S
) -> T:
    """Poll `condition` (every `poll_s`) until it returns something true; fail after `within_s`."""
    deadline = time.monotonic() + within_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or 'condition'} not met within {within_s} s")
        time.sleep(poll_s)
    return value


async def until(
    condition: Callable[[], T], within_s: float = 30.0, what: str = "", *, poll_s: float = POLL_S
) -> T:
    """`wait_until` for a test on the event loop: the loop keeps running while it waits."""
    deadline = time.monotonic() + within_s
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or 'condition'} not met within {within_s} s")
        await asyncio.sleep(poll_s)
    return value
