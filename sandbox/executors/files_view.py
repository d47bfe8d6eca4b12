"""What the editor shows: numbered lines, directory trees, snippets and unified diffs."""

from __future__ import annotations

import difflib
import os
import re
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path

from sandbox.executors.files_text import (
    SNIFF_BYTES,
    EditRefused,
    NotText,
    binary_reason,
    head_encoding,
    human_size,
    not_text_message,
)

SNIPPET_CONTEXT = 4
"""Lines shown above and below an edited region."""
DIFF_CONTEXT = 3

RACY_S = 2.0
"""A file changed less than this long before it was read is not cached (timestamp granularity)."""

_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def split_lines(text: str) -> list[str]:
    """Lines split on `\\n` only (never on form feeds or other separators), without endings."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def numbered(lines: Sequence[str], first: int, max_chars: int) -> tuple[str, int]:
    """`cat -n` style lines numbered from `first`, stopping before `max_chars`; (text, shown)."""
    out: list[str] = []
    used = 0
    for offset, line in enumerate(lines):
        row = f"{first + offset:6}\t{line.removesuffix(chr(13))}"
        used += len(row) + 1
        if used > max_chars and out:
            break
        out.append(row)
    return "\n".join(out), len(out)


def snippet(text: str, first: int, last: int, max_chars: int) -> str:
    """Lines `first`..`last` (1-based) of `text` with a few lines of context, numbered."""
    lines = split_lines(text)
    start = max(1, first - SNIPPET_CONTEXT)
    stop = min(len(lines), max(last, first) + SNIPPET_CONTEXT)
    shown, _ = numbered(lines[start - 1 : stop], start, max_chars)
    return shown


def unified_diff(path: str, old: str | None, new: str | None) -> str:
    """A unified diff between two versions of a file (None: the file does not exist)."""
    old_lines = split_lines(old or "")
    new_lines = split_lines(new or "")
    # Edits touch one region: diff only that region (plus context) and shift the hunk numbers,
    # so a one-line change in a 10 MB file costs no more than in a small one.
    prefix = 0
    limit = min(len(old_lines), len(new_lines))
    while prefix < limit and old_lines[prefix] == new_lines[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and old_lines[len(old_lines) - 1 - suffix] == new_lines[len(new_lines) - 1 - suffix]
    ):
        suffix += 1
    start = max(0, prefix - DIFF_CONTEXT)
    keep = max(0, suffix - DIFF_CONTEXT)
    hunk = difflib.unified_diff(
        old_lines[start : len(old_lines) - keep],
        new_lines[start : len(new_lines) - keep],
        fromfile="/dev/null" if old is None else f"a{path}",
        tofile="/dev/null" if new is None else f"b{path}",
        n=DIFF_CONTEXT,
        lineterm="",
    )
    out = []
    for line in hunk:
        match = _HUNK.match(line)
        if match and start:
            old_at, old_len, new_at, new_len = match.groups()
            line = f"@@ -{int(old_at) + start}{old_len} +{int(new_at) + start}{new_len} @@"
        out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def parse_view_range(view_range: list[int]) -> tuple[int, int]:
    """(first, last) from a `view_range`, checked for shape; last is -1 for the end of file."""
    if len(view_range) != 2:
        raise EditRefused(
            f"Invalid view_range {view_range}: give two numbers [start, end], "
            "1-based and inclusive; end -1 means the end of the file."
        )
    first, last = view_range
    if first < 1:
        raise EditRefused(f"Invalid view_range {view_range}: start must be 1 or more.")
    if last != -1 and last < first:
        raise EditRefused(
            f"Invalid view_range {view_range}: end must be -1 (end of file) or at "
            f"least start ({first})."
        )
    return first, last


def lines_in_range(text: str, first: int, last: int) -> tuple[list[str], int | None]:
    """Lines `first`..`last` (-1: to the end) and the line count, None if the file goes past
    `last`: only the lines up to `last` are split, so a view near the top of a big file is cheap.
    """
    if last == -1:
        lines = split_lines(text)
        return lines[first - 1 :], len(lines)
    parts = text.split("\n", last)
    if len(parts) > last and parts[last] != "":
        return parts[first - 1 : last], None
    if parts[-1] == "":
        parts.pop()
    return parts[first - 1 : last], len(parts)


class LineCache:
    """Recently viewed files split into lines, reused while the file's stat is unchanged.

    As in git's "racy clean" rule, only files last changed at least `RACY_S` before they were
    read are kept, and an entry must match inode, size, mtime and ctime: any later write changes
    ctime, which cannot be set back, so a stale entry is never served.
    """

    def __init__(self, capacity: int = 4) -> None:
        self._capacity = capacity
        self._entries: OrderedDict[Path, tuple[tuple[int, ...], list[str]]] = OrderedDict()

    def get(self, path: Path, stat: os.stat_result) -> list[str] | None:
        """The cached lines of `path` if its stat still matches."""
        entry = self._entries.get(path)
        if entry is None or entry[0] != _signature(stat):
            return None
        self._entries.move_to_end(path)
        return entry[1]

    @staticmethod
    def trusts(stat: os.stat_result) -> bool:
        """Whether a file with this stat changed long enough ago to be cached."""
        return time.time() - max(stat.st_mtime, stat.st_ctime) >= RACY_S

    def put(self, path: Path, stat: os.stat_result, lines: list[str]) -> None:
        """Keep `lines`, read after `stat` was taken from a file that `trusts` accepts."""
        self._entries[path] = (_signature(stat), lines)
        self._entries.move_to_end(path)
        while len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def forget(self, path: Path) -> None:
        """Drop `path` (the editor just wrote it)."""
        self._entries.pop(path, None)


def _signature(stat: os.stat_result) -> tuple[int, ...]:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def stream_lines(path: Path, first: int, last: int | None) -> Iterator[tuple[int, str]]:
    """(number, line) for lines `first`..`last` of a file too big to read whole; None: to EOF."""
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
        why = binary_reason(head)
        if why is not None:
            raise NotText(not_text_message(path, why))
        encoding = head_encoding(head)
        handle.seek(0)
        for number, raw in enumerate(handle, start=1):
            if number < first:
                continue
            if last is not None and number > last:
                return
            yield number, raw.rstrip(b"\n").rstrip(b"\r").decode(encoding, errors="replace")


def directory_tree(root: Path, max_entries: int) -> str:
    """Entries up to two levels below `root`, hidden ones left out and counted."""
    shown: list[str] = []
    hidden = 0
    more = 0
    for depth_one in _entries(root):
        if depth_one.name.startswith("."):
            hidden += 1
            continue
        is_dir = depth_one.is_dir()
        if len(shown) < max_entries:
            shown.append(depth_one.path + ("/" if is_dir else ""))
        else:
            more += 1
        if not is_dir or depth_one.is_symlink():
            continue
        for depth_two in _entries(Path(depth_one.path)):
            if depth_two.name.startswith("."):
                hidden += 1
            elif len(shown) < max_entries:
                shown.append(depth_two.path + ("/" if depth_two.is_dir() else ""))
            else:
                more += 1
    lines = [
        f"Files and directories up to 2 levels deep in {root}, excluding hidden items:",
        str(root).rstrip("/") + "/",
        *shown,
    ]
    if more:
        lines.append(f"... and {more} more entries not shown; view a subdirectory to see them.")
    if hidden:
        lines.append("")
        lines.append(
            f"{hidden} hidden files/directories (names starting with '.') are excluded. "
            f"You can use 'ls -la {root}' to see them."
        )
    return "\n".join(lines)


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda entry: entry.name)
    except OSError:
        return []


def view_big(
    path: Path, size: int, view_range: list[int] | None, max_bytes: int, max_chars: int
) -> str:
    """Part of a file over the edit limit, streamed line by line (view only, never whole)."""
    if view_range is None:
        raise EditRefused(
            f"{path} is {human_size(size)}, over the editor's limit of "
            f"{human_size(max_bytes)} for a whole view. Give a `view_range` "
            f"such as [1, 100], or search it from the shell (`grep -n PATTERN {path}`)."
        )
    first, last = parse_view_range(view_range)
    rows: list[str] = []
    used = 0
    for number, line in stream_lines(path, first, None if last == -1 else last):
        rows.append(f"{number:6}\t{line}")
        used += len(rows[-1]) + 1
        if used > max_chars:
            rows.append(f"[Output cut at line {number}: give a narrower view_range.]")
            break
    if not rows:
        raise EditRefused(f"Invalid view_range {view_range}: {path} has fewer than {first} lines.")
    return (
        f"Here's the result of running `cat -n` on part of {path} "
        f"({human_size(size)}; view only, too big to edit):\n" + "\n".join(rows)
    )
