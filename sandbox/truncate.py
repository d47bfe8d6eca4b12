"""Keep the head and the tail of long text, with a marker saying how much was cut between.

`HeadTailBuffer` does it while text streams in, holding at most about `limit` characters however
much arrives (O(total) work, no re-joining); `truncate_middle` is the one-shot form.
"""

from __future__ import annotations

from collections import deque

DEFAULT_LIMIT = 30_000
MIN_LIMIT = 100
"""The smallest limit that leaves room for a head, a tail and the marker between them."""


class HeadTailBuffer:
    """Collects streamed text and keeps the first and last `limit / 2` characters of it."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < MIN_LIMIT:
            raise ValueError(f"the output limit must be at least 100 characters, not {limit}")
        self.limit = limit
        self._head_cap = limit // 2
        self._tail_cap = limit - self._head_cap
        self._head: list[str] = []
        self._head_len = 0
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._cut_chars = 0
        self._cut_lines = 0

    def __bool__(self) -> bool:
        return self._head_len > 0

    def append(self, text: str) -> None:
        """Add text; what falls between head and tail is counted, not kept."""
        room = self._head_cap - self._head_len
        if room > 0:
            piece = text[:room]
            self._head.append(piece)
            self._head_len += len(piece)
            text = text[room:]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len - len(self._tail[0]) >= self._tail_cap:
            dropped = self._tail.popleft()
            self._tail_len -= len(dropped)
            self._cut_chars += len(dropped)
            self._cut_lines += dropped.count("\n")

    def take(self) -> str:
        """Everything collected since the last take, truncated in the middle if too long."""
        head = "".join(self._head)
        tail = "".join(self._tail)
        cut_chars, cut_lines = self._cut_chars, self._cut_lines
        self._head, self._head_len = [], 0
        self._tail, self._tail_len = deque(), 0
        self._cut_chars = self._cut_lines = 0
        if not cut_chars and len(head) + len(tail) <= self.limit:
            return head + tail
        excess = len(tail) - self._tail_cap
        if excess > 0:
            cut_chars += excess
            cut_lines += tail.count("\n", 0, excess)
            tail = tail[excess:]
        # Cut at line ends where that costs little, so that no half lines are shown.
        end = head.rfind("\n")
        if end >= len(head) // 2:
            cut_chars += len(head) - end - 1
            head = head[: end + 1]
        begin = tail.find("\n")
        if 0 <= begin < len(tail) // 2:
            cut_chars += begin + 1
            cut_lines += 1
            tail = tail[begin + 1 :]
        return head + cut_marker(cut_chars, cut_lines, head.endswith("\n")) + tail


def cut_marker(chars: int, lines: int, at_line_start: bool = True) -> str:
    """The line that stands for the cut-out middle of a text."""
    lead = "" if at_line_start else "\n"
    return (
        f"{lead}[... output truncated: {chars:,} characters ({lines:,} lines) "
        "omitted from the middle ...]\n"
    )


def truncate_middle(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """`text` itself if it fits in `limit` characters (or `limit` is 0: no limit), else its
    head and tail with a marker; limits under `MIN_LIMIT` count as `MIN_LIMIT`."""
    if limit <= 0 or len(text) <= limit:
        return text
    buffer = HeadTailBuffer(max(limit, MIN_LIMIT))
    buffer.append(text)
    return buffer.take()
