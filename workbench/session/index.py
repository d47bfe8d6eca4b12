"""The summary index: a list of sessions that reads only the logs that changed since the last.

`<sessions dir>/.index.json` (hidden, and not `*.jsonl`) holds, per log file name, the log's
identity when it was summarized (size, mtime, ctime and inode, in ns) and its summary
(`summaries.summarize`). `list_summaries` stats every log, takes the summary of each whose
identity is unchanged from the index, summarizes the others, and writes the index back (a
temporary file in the same folder, then `os.replace`: mode 0600) only when something
changed. It is not fsynced: a listing (the TUI's picker lists on its UI thread) does not wait
for the disk, and an index a power cut leaves torn or empty fails to parse and is rebuilt. The
index is a cache: deleting it costs one slower listing, never a session.

Why a crash or a race cannot make it wrong:
- A log is stat'd before it is read, so an entry's summary is never older than its identity;
  any later write to the log (an append, a truncation, a rewrite) changes its size or mtime.
- A same-size rewrite within the file system's timestamp granularity would keep the mtime
  (git's "racy" case), so an entry is trusted only when its log's mtime and ctime were at least
  `RACY_NS` older than the index's reference time: the file system's clock, read from the new
  index's temporary file before the logs it summarizes are stat'd. A younger entry is
  summarized again at the next listing (and then trusted, once old enough).
- The index is replaced whole; one a crash, a person or another version left unreadable,
  oversized (> `MAX_INDEX_BYTES`), of another format or code (`INDEX_KEY`: the version and a
  digest of the summarizing code), or with an entry of the wrong types, is ignored (that entry,
  or all of it) and rebuilt. Two listings at once each write their own temporary file; the last
  rename wins, and each index is correct for the logs as its listing saw them.
- A deleted log's entry is dropped; an unreadable log is listed as `scan_summaries` lists it
  and never indexed. What an entry holds is checked as a summary read from a log is, and goes
  through the same printing path (`safe_text` in the CLI, Rich text in the TUI).
Only the person writes the sessions folder (their data dir, outside the sandbox); the agent
cannot, so the index is no way for it to change what a list shows.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workbench.events import ENDED_STATES
from workbench.session.log import SessionHeader
from workbench.session.summaries import (
    SessionSummary,
    log_names,
    open_regular,
    summarize,
    unreadable,
)

INDEX_NAME = ".index.json"
INDEX_FORMAT = "workbench-session-index"
INDEX_VERSION = 1
"""Bump when a summary's fields change meaning; `summaries.py`'s digest is part of the key too."""
RACY_NS = 2_000_000_000
"""An entry whose log changed less than this before the index's reference time is not trusted
(covers file systems with 1 s or 2 s timestamps)."""
MAX_INDEX_BYTES = 64 * 1024 * 1024
"""A larger index is ignored (and not written): ~1 KB an entry, so ~60 000 sessions."""
MAX_TIME = 1e11
"""An entry's `created` beyond this many seconds from 1970 (year 5138) is not trusted."""
LEFT_BEHIND_NS = 3600 * 10**9
"""A temporary index file this old was left by a listing that was killed: it is removed."""
_STATES = frozenset({"", "unfinished", *ENDED_STATES})

Identity = list[int]
"""A log's [size, mtime_ns, ctime_ns, inode] (a list: what JSON gives back)."""


def _code_key() -> str:
    """The index's key: its version and a digest of the code that makes summaries."""
    from workbench.session import summaries

    try:
        code = Path(summaries.__file__).read_bytes()
    except (OSError, TypeError):
        code = b""
    return f"{INDEX_VERSION}:{hashlib.sha256(code).hexdigest()[:16]}"


INDEX_KEY = _code_key()


def list_summaries(directory: Path) -> list[SessionSummary]:
    """Summaries of the logs in `directory`, newest first (as `scan_summaries` gives them),
    reading only the logs the index does not hold unchanged; [] when there is no folder (or it
    cannot be read)."""
    try:
        names = log_names(directory)
    except OSError:  # no folder, or one we may not read: no sessions, as `Path.glob` said
        return []
    old, reference = _read_index(directory / INDEX_NAME)
    entries: dict[str, Any] = {}
    summaries: dict[str, SessionSummary] = {}
    stale: list[str] = []
    for name in names:
        path = directory / name
        try:
            info = os.stat(path)
        except OSError as exc:
            summaries[name] = unreadable(path, exc)
            continue
        entry = old.get(name) if old else None
        summary = _trusted(entry, _identity(info), reference, path)
        if summary is None:
            stale.append(name)
        else:
            entries[name], summaries[name] = entry, summary
    if stale or (old or {}).keys() != entries.keys():  # a log summarized, or one gone
        with _NewIndex(directory) as new:
            for name in stale:
                summaries[name] = _summarize(directory / name, entries, name)
            if old is None or old.keys() != entries.keys() or any(n in entries for n in stale):
                new.write(entries)  # not when the only logs read again cannot be read
    return [summaries[name] for name in names]


def _identity(info: os.stat_result) -> Identity:
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


def _trusted(entry: Any, identity: Identity, reference: int, path: Path) -> SessionSummary | None:
    """The summary in `entry` if it is well formed, of this identity, and not racy."""
    if not isinstance(entry, dict) or entry.get("id") != identity:
        return None
    if max(identity[1], identity[2]) + RACY_NS > reference:
        return None
    task, state, damaged, fields = (entry.get(k) for k in ("task", "state", "damaged", "header"))
    if not (isinstance(task, str) and isinstance(damaged, str) and isinstance(state, str)):
        return None
    if state not in _STATES:
        return None
    own = entry.get("own_task")
    if own is not None and not isinstance(own, str):
        return None
    if not isinstance(fields, dict) or "config" in fields:
        return None
    try:
        header = SessionHeader.model_validate(fields)
    except ValidationError:
        return None
    if not (math.isfinite(header.created) and abs(header.created) < MAX_TIME):
        return None  # a time the list could not print
    return SessionSummary(path, header, task, str(state), damaged, own)


def _summarize(path: Path, entries: dict[str, Any], name: str) -> SessionSummary:
    """Summarize one log (stat'd first, after the new index's reference time) into `entries`."""
    try:
        identity = _identity(os.stat(path))
        summary = summarize(path)
    except OSError as exc:
        return unreadable(path, exc)
    header = summary.header.model_dump(mode="json", exclude={"config"})
    entries[name] = {
        "id": identity,
        "header": header,
        "task": summary.task,
        "state": summary.state,
        "damaged": summary.damaged,
        "own_task": summary.own_task,
    }
    return summary


def _read_index(path: Path) -> tuple[dict[str, Any] | None, int]:
    """The index's entries and reference time, or (None, 0) when it is missing or not one we
    wrote (unreadable, oversized, not JSON, another format or code)."""
    try:
        with open_regular(path) as stream:
            if os.fstat(stream.fileno()).st_size > MAX_INDEX_BYTES:
                return None, 0
            text = stream.read(MAX_INDEX_BYTES + 1)  # it may grow while read
            if len(text) > MAX_INDEX_BYTES:
                return None, 0
            data = json.loads(text)
    except (OSError, ValueError, RecursionError):
        return None, 0
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        return None, 0
    entries, reference = data.get("entries"), data.get("reference_ns")
    if data.get("key") != INDEX_KEY or not isinstance(entries, dict):
        return None, 0
    if not isinstance(reference, int) or isinstance(reference, bool):
        return None, 0
    return entries, reference


class _NewIndex:
    """A new index being made: its temporary file is created first, and its mtime (the file
    system's clock, before any log this listing summarizes is stat'd) is the reference time.
    Nothing is written when the folder is read-only; a failure leaves the old index."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.reference: int | None = None
        self._fd = -1
        self._temp = ""

    def __enter__(self) -> _NewIndex:
        try:
            self._fd, self._temp = tempfile.mkstemp(
                prefix=".index-", suffix=".tmp", dir=self.directory
            )
            self.reference = os.fstat(self._fd).st_mtime_ns
        except OSError:
            self.reference = None
        else:
            self._remove_left_behind()
        return self

    def _remove_left_behind(self) -> None:
        """Remove the temporary files of listings killed before their rename (an hour old:
        a running listing's lives for milliseconds)."""
        assert self.reference is not None
        with contextlib.suppress(OSError), os.scandir(self.directory) as entries:
            for entry in entries:
                name = entry.name
                if name.startswith(".index-") and name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        if entry.stat().st_mtime_ns + LEFT_BEHIND_NS < self.reference:
                            os.unlink(entry.path)

    def write(self, entries: dict[str, Any]) -> None:
        """Write the index with `entries` and put it in place (not when the folder is
        read-only or the index would be oversized)."""
        if self.reference is None:
            return
        data = {
            "format": INDEX_FORMAT,
            "key": INDEX_KEY,
            "reference_ns": self.reference,
            "entries": entries,
        }
        text = json.dumps(data, separators=(",", ":")).encode()
        if len(text) > MAX_INDEX_BYTES:
            return
        with contextlib.suppress(OSError):
            rest = memoryview(text)
            while rest:
                rest = rest[os.write(self._fd, rest) :]
            os.close(self._fd)
            self._fd = -1
            os.replace(self._temp, self.directory / INDEX_NAME)
            self._temp = ""

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        if self._temp:
            with contextlib.suppress(OSError):
                os.unlink(self._temp)
