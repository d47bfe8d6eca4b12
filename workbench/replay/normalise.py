"""What always differs between two runs of the same action, masked before their results are
compared: the workspace path, temporary paths, clock times and dates, durations and pids.

Trailing white space (on each line, and blank lines at the end) is dropped too. Each is
replaced by a placeholder (`<workspace>`, `<tmp>`, `<time>`, `<duration>`, `<pid>`),
so `ls /tmp/tmpab12cd` at 10:01:02 and at 10:05:09 read the same, while a different file
content, exit code or error does not. A mask covers the time or id only and never the rest of
its line: `74 Nov 26 11:34 AGENTS.md` reads `74 <time> AGENTS.md` (a time zone is only taken
after a time with seconds, as `date` prints it, and only as a whole word).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_MONTHS = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_DAYS = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"
_END = r"(?![\w.-])"
"""Not followed by more of a word or a file name: `UTC` but not `AGENTS.md`."""
_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    # temporary paths: /tmp/..., /var/tmp/..., macOS /var/folders/...
    (
        "temporary paths",
        re.compile(r"(?:/private)?(?:/var)?/(?:tmp|folders)/[^\s'\"`:,;)\]}]*"),
        "<tmp>",
    ),
    # ISO and common date-times, then a bare clock time
    (
        "times",
        re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"),
        "<time>",
    ),
    (
        "times",
        # `date`: Thu Nov 26 11:34:56 UTC 2026; `ls -l`: Nov 26 11:34 (the name follows)
        re.compile(
            rf"\b(?:(?:{_DAYS}),?\s+)?(?:{_MONTHS})\s+\d{{1,2}}\s+\d\d:\d\d"
            rf"(?::\d\d(?:\s+[A-Z]{{2,5}}{_END})?(?:\s+\d{{4}}{_END})?)?{_END}"
        ),
        "<time>",
    ),
    # `ls -l` of a file older than six months: Nov 26  2025 (the name follows)
    ("times", re.compile(rf"\b(?:{_MONTHS})\s+\d{{1,2}}\s+\d{{4}}{_END}"), "<time>"),
    ("times", re.compile(r"\b\d{4}-\d\d-\d\d\b"), "<time>"),
    ("times", re.compile(r"\b\d{1,2}:\d\d:\d\d(?:[.,]\d+)?\b"), "<time>"),
    # durations: 0m0.003s (time), 1.5s, 12 ms, 3 seconds, 00:00:01 is a time already
    ("durations", re.compile(r"\b\d+m\d+(?:\.\d+)?s\b"), "<duration>"),
    (
        "durations",
        re.compile(r"\b\d+(?:\.\d+)?\s?(?:ns|us|µs|ms|s|sec|secs|seconds?|min|mins|minutes?)\b"),
        "<duration>",
    ),
    # pids: "pid 123", "PID=123", a background job's "[1] 12345"
    ("pids", re.compile(r"\b(pid|PID|Pid)([\s=:#]*)\d+"), r"\1\2<pid>"),
    ("pids", re.compile(r"^(\[\d+\]\+?\s+)\d+$", re.MULTILINE), r"\1<pid>"),
)


def masked(text: str, workspaces: Iterable[str] = ()) -> tuple[str, list[str]]:
    """`text` with the workspace paths and what always differs between runs masked, and what
    was masked in it ("the workspace path", "times", ...), in a fixed order."""
    found: list[str] = []
    for path in sorted({p.rstrip("/") for p in workspaces if p and p.rstrip("/")}, key=len)[::-1]:
        if path in text:
            text = text.replace(path, "<workspace>")
            found.append("the workspace path")
    for name, pattern, replacement in _RULES:
        text, count = pattern.subn(replacement, text)
        if count:
            found.append(name)
    lines = "\n".join(line.rstrip() for line in text.rstrip().splitlines())
    return lines, list(dict.fromkeys(found))


def normalise(text: str, workspaces: Iterable[str] = ()) -> str:
    """`text` with the workspace paths and what always differs between runs masked."""
    return masked(text, workspaces)[0]
