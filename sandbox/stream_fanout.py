"""Fan-out of the shell's stream events to `/stream` subscribers, each with a bounded buffer.

The shell's reader thread calls `Fanout.publish` for every event: the event is encoded once,
then appended to each subscriber's buffer under that subscriber's lock, and the event loop is
woken only when a buffer goes from empty to non-empty. Nothing runs on the loop per chunk, and
a chunk costs O(1) per subscriber.

A subscriber that reads slower than the shell prints skips ahead: when its buffer would pass
`STREAM_BUFFER_BYTES`, what it holds is dropped and it gets, before the newest events, one
`OutputChunk` whose text says how much was skipped. `CommandFinished` events are never lost:
the last one among the skipped events is kept. At most `MAX_SUBSCRIBERS` subscribe at once; a
new one beyond that ends the oldest one's stream (a client that lost its connection without
closing it would otherwise hold a place for ever).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from sandbox.protocol import CommandFinished, OutputChunk, StreamEvent

log = logging.getLogger("sandbox.server")

STREAM_BUFFER_BYTES = 1024 * 1024
"""Encoded events held for one subscriber before it skips ahead."""
MAX_SUBSCRIBERS = 8
"""`/stream` subscribers at once; one more ends the oldest."""


@dataclass(frozen=True)
class _Line:
    data: bytes
    seq: int
    command: str
    finished: bool


class Subscriber:
    """One `/stream` reader: a bounded buffer of encoded events, drained by `chunks()`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        self._loop = loop
        self._limit = limit
        self._lock = threading.Lock()
        self._lines: deque[_Line] = deque()
        self._size = 0
        self._skipped_bytes = 0
        self._skipped_events = 0
        self._last_skipped: _Line | None = None
        self._kept_finished: _Line | None = None
        self._wake = asyncio.Event()
        self._woken = False
        self._ended = False

    @property
    def buffered(self) -> int:
        """Bytes of encoded events waiting to be sent."""
        return self._size

    def offer(self, line: _Line) -> None:
        """Buffer one encoded event (any thread); skip ahead when the buffer would overflow."""
        with self._lock:
            if self._ended:
                return
            if self._lines and self._size + len(line.data) > self._limit:
                self._skip_buffered()
            self._lines.append(line)
            self._size += len(line.data)
            wake = not self._woken
            self._woken = True
        if wake:
            self._call(self._wake.set)

    def end(self) -> None:
        """End this subscriber's stream once what it holds is sent (any thread)."""
        with self._lock:
            self._ended = True
        self._call(self._wake.set)

    async def chunks(self) -> AsyncIterator[bytes]:
        """What to send, as the buffer fills: one joined chunk per wake-up, until `end()`."""
        while True:
            await self._wake.wait()
            with self._lock:
                self._wake.clear()
                self._woken = False
                parts = self._take()
                ended = self._ended
            if parts:
                yield b"".join(parts)
            if ended:
                return

    def _skip_buffered(self) -> None:
        for line in self._lines:  # each line is looked at once here: O(1) per event overall
            if line.finished:
                self._kept_finished = line
            else:
                self._skipped_bytes += len(line.data)
                self._skipped_events += 1
                self._last_skipped = line
        self._lines.clear()
        self._size = 0

    def _take(self) -> list[bytes]:
        parts: list[bytes] = []
        if self._last_skipped is not None:
            parts.append(_marker(self._last_skipped, self._skipped_bytes, self._skipped_events))
            self._last_skipped, self._skipped_bytes, self._skipped_events = None, 0, 0
        if self._kept_finished is not None:
            parts.append(self._kept_finished.data)
            self._kept_finished = None
        parts.extend(line.data for line in self._lines)
        self._lines.clear()
        self._size = 0
        return parts

    def _call(self, callback: Callable[[], object]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting
            self._loop.call_soon_threadsafe(callback)


def _marker(last: _Line, skipped_bytes: int, skipped_events: int) -> bytes:
    """The chunk that stands for what a subscriber missed (it carries the last missed seq)."""
    text = (
        f"\n[sandbox: {skipped_bytes} bytes of output ({skipped_events} events) skipped: "
        "this reader fell behind]\n"
    )
    source = last.source if isinstance(last, OutputChunk) else "bash"
    chunk = OutputChunk(seq=last.seq, command=last.command, data=text, source=source)
    return chunk.model_dump_json().encode() + b"\n"


class Fanout:
    """The set of `/stream` subscribers and the one place events are encoded for them."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        buffer_bytes: int = STREAM_BUFFER_BYTES,
        max_subscribers: int = MAX_SUBSCRIBERS,
    ) -> None:
        self._loop = loop
        self._buffer_bytes = buffer_bytes
        self._max = max_subscribers
        self._lock = threading.Lock()
        self._subscribers: tuple[Subscriber, ...] = ()  # replaced whole: publish reads it unlocked

    def subscribe(self) -> Subscriber:
        """A new subscriber; beyond the cap, the oldest one's stream ends."""
        subscriber = Subscriber(self._loop, self._buffer_bytes)
        with self._lock:
            current = self._subscribers
            dropped = current[: max(0, len(current) + 1 - self._max)]
            self._subscribers = (*current[len(dropped) :], subscriber)
        for old in dropped:
            log.warning("ending the oldest /stream subscriber: %d are the most", self._max)
            old.end()
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Stop buffering for `subscriber` (its connection ended)."""
        with self._lock:
            self._subscribers = tuple(s for s in self._subscribers if s is not subscriber)
        subscriber.end()

    def publish(self, event: StreamEvent) -> None:
        """Give `event` to every subscriber (called from the shell's reader thread)."""
        subscribers = self._subscribers
        if not subscribers:
            return
        line = _Line(
            data=event.model_dump_json().encode() + b"\n",
            seq=event.seq,
            command=event.command,
            finished=isinstance(event, CommandFinished),
        )
        for subscriber in subscribers:
            subscriber.offer(line)

    def close(self) -> None:
        """End every stream."""
        with self._lock:
            subscribers, self._subscribers = self._subscribers, ()
        for subscriber in subscribers:
            subscriber.end()
