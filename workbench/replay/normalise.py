"""What always differs between two runs of the same action, masked before their results are
compared: the workspace path, temporary paths, clock times and dates, durations and pids.

Trailing white space (on each line, and blank lines at the end) is dropped too. Each is
replaced by a placeholder (`<workspace>`, `<tmp>`, `<time>`, `<duration>`, `<pid>`),
so `ls /tmp/tmpab12cd` at 10:01:02 and at 10:05:09 read the same, while a different file
content, exit code or error does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # temporary paths: /tmp/..., /var/tmp/..., macOS /var/folders/...
    (re.compile(r"(?:/private)?(?:/var)?/(?:tmp|folders)/[^\s'\"`:,;)\]}]*"), "<tmp>"),
    # ISO and common date-times, then a bare clock time
    (
        re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"),
        "<time>",
    ),
    (
        re.compile(
            rf"\b(?:(?:{_DAYS}),?\s+)?(?:{_MONTHS})\s+\d{{1,2}}\s+\d\d:\d\d(?::\d\d)?"
            r"(?:\s+[A-Z]{2,5})?(?:\s+\d{4})?"
        ),
        "<time>",
    ),
    (re.compile(r"\b\d{4}-\d\d-\d\d\b"), "<time>"),
    (re.compile(r"\b\d{1,2}:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    # durations: 0m0.003s (time), 1.5s, 12 ms, 3 seconds, 00:00:01 is a time already
    (re.compile(r"\b\d+m\d+(?:\.\d+)?s\b"), "<duration>"),
    (
        re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|min|mins|minutes?)\b"),
        "<duration>",
    ),
    # pids: "pid 123", "PID=123", a background job's "[1] 12345"
    (re.compile(r"\b(pid|PID|Pid)([\s=:#]*)\d+"), r"\1\2<pid>"),
    (re.compile(r"^(\[\d+\]\+?\s+)\d+$", re.MULTILINE), r"\1<pid>"),
)


def normalise(text: str, workspaces: Iterable[str] = ()) -> str:
    """`text` with the workspace paths and what always differs between runs masked."""
    for path in sorted({p.rstrip("/") for p in workspaces if p and p.rstrip("/")}, key=len)[::-1]:
        text = text.replace(path, "<workspace>")
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.rstrip().splitlines())
