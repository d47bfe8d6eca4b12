"""What a list of sessions shows of a log: its header, first task, last state and damage.

`summarize` reads a log's first lines and its last 64 KB, never the whole file, and reports
damage (no header, lines that are not JSON, a cut last line) instead of raising. A summary's
header has no `config`: no list shows it, and it is most of a header's bytes (the whole header
is `log.read`'s). `scan_summaries` summarizes every log of a folder; `index.list_summaries`
(what `workbench sessions` and the TUI's picker use) keeps the summaries in a small index and
reads only the logs that changed.
"""

from __future__ import annotations

import errno
import json
import mmap
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from workbench.events import ENDED_STATES
from workbench.session.log import SessionHeader

LOG_SUFFIX = ".jsonl"
_USER = b'"source":"user"'
"""How a person's message reads in a log line (`model_dump_json`, compact): only these
lines are parsed."""


@dataclass(frozen=True)
class SessionSummary:
    """One line of a session list: the header, the first task, and how the session ended."""

    path: Path
    header: SessionHeader
    """The log's header without its `config` (empty here; `log.read` has it); for a log
    without a readable one, a stand-in named after the file (its time is the file's, model
    and workspace are empty) and `damaged` says why."""
    task: str
    """The first message the person sent ("" if the log has none)."""
    state: str
    """The last agent state recorded: finished, error or stopped; "unfinished" if the log
    stops in another state (still running, or its process was killed); "" if none."""
    damaged: str = ""
    """What is wrong with the file ("" when nothing is): no header, a line that is not JSON,
    cut mid-line (its complete lines still load), unreadable."""
    own_task: str | None = None
    """For a continued session (resumed or branched), the first message the person sent after
    its parent's history ("" if none yet: `title.session_title` then names the task it goes on
    with); None for a new session."""


_MAX_BAD_LINES_NAMED = 3


def summarize(path: Path, head_lines: int = 64, tail_bytes: int = 65_536) -> SessionSummary:
    """Summarize a log from its first lines and its last bytes (not the whole file); damage
    seen there is reported in `damaged`, not raised."""
    damage: list[str] = []
    bad: list[str] = []
    task = ""
    head_states: dict[int, dict[str, Any]] = {}
    """The state events of the head by where their line starts: the tail is not parsed twice."""
    with open_regular(Path(path)) as stream:
        first = stream.readline()
        header = _header_of(Path(path), first, damage)
        head_end = len(first)
        for number in range(2, head_lines + 2):
            line = stream.readline()
            if not line.endswith(b"\n"):
                break  # the end, or a cut last line (seen below)
            event = _json_object(line)
            if not event and line.strip():
                bad.append(f"line {number} {_not_json(line)}")
            if not task and event.get("kind") == "message" and event.get("source") == "user":
                task = str(event.get("text", ""))
            if event.get("kind") == "state":
                head_states[head_end] = event
            head_end += len(line)
        size = stream.seek(0, os.SEEK_END)
        start = max(len(first), size - tail_bytes)
        stream.seek(start)
        tail = stream.read()
        own = None
        if header.parent_id and header.parent_event > 0:  # its own task is after the history
            stream.seek(0)  # read, not mapped: a log cut while mapped would kill us (SIGBUS)
            own = own_task(stream.read(size), header.parent_event)
    if first.endswith(b"\n") and size > len(first) and not tail.endswith(b"\n"):
        damage.append("cut mid-line at the end (its complete lines are listed)")
    state = ""
    offset = start
    for index, line in enumerate(tail.split(b"\n")[:-1]):  # the last piece: "" or a cut line
        at, offset = offset, offset + len(line) + 1
        if index == 0 and start > len(first):
            continue  # most likely cut by the seek, not by the writer
        if at < head_end:
            event = head_states.get(at, {})  # read in the head already
        else:
            event = _json_object(line)
            if not event and line.strip():
                bad.append(f"a line near the end {_not_json(line)}")
        if event.get("kind") == "state":
            last = str(event.get("state", ""))
            state = last if last in ENDED_STATES else "unfinished"
    bad = list(dict.fromkeys(bad))
    if len(bad) > _MAX_BAD_LINES_NAMED:
        rest = len(bad) - _MAX_BAD_LINES_NAMED
        bad[_MAX_BAD_LINES_NAMED:] = [f"{rest} more line(s) that are not JSON objects"]
    return SessionSummary(Path(path), header, task, state, "; ".join([*damage, *bad]), own)


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for reading; OSError unless it is a regular file (a FIFO named like a log
    would block a listing forever, a device never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
            why = os.strerror(code) if code == errno.EISDIR else "not a regular file"
            raise OSError(code, why, str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _header_of(path: Path, line: bytes, damage: list[str]) -> SessionHeader:
    """The header in `line` without its config, or a stand-in named after the file (the
    reason added to `damage`)."""
    if not line:
        damage.append("empty file: no header")
    elif not line.endswith(b"\n"):
        damage.append("cut in its first line: no complete header")
    else:
        fields = _json_object(line)
        if not fields:
            damage.append(f"line 1 {_not_json(line)}: no header")
            return _stand_in(path)
        if isinstance(fields.get("config"), dict):
            fields["config"] = {}  # checked as a dict, then dropped: no list shows it
        try:
            return SessionHeader.model_validate(fields)
        except ValidationError as exc:
            reason = str(exc).splitlines()[0]
            damage.append(f"line 1 is not a session header ({reason})")
    return _stand_in(path)


def _stand_in(path: Path) -> SessionHeader:
    """A header for a file that has none: its name and time, nothing else known."""
    try:
        created = path.stat().st_mtime
    except OSError:
        created = 0.0
    return SessionHeader(
        workbench_version="", session_id=path.stem, created=created, workspace="", model=""
    )


def _not_json(line: bytes) -> str:
    """Why a complete line is no event, in a few words."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return "is not UTF-8 text"
    return "is not a JSON object"


def _json_object(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:  # a partial line (cut by the tail read, or by a kill), or not JSON
        return {}
    return value if isinstance(value, dict) else {}


def unreadable(path: Path, exc: OSError) -> SessionSummary:
    """The summary of a log that could not be read: listed under its file name, saying why."""
    why = f"cannot read it: {exc.strerror or exc}"
    return SessionSummary(path, _stand_in(path), "", "", why)


def log_names(directory: Path) -> list[str]:
    """The names of the logs in `directory` (`*.jsonl`), newest first (ids sort by time)."""
    with os.scandir(directory) as entries:
        names = [entry.name for entry in entries if entry.name.endswith(LOG_SUFFIX)]
    return sorted(names, reverse=True)


def scan_summaries(directory: Path) -> list[SessionSummary]:
    """Summaries of the logs in `directory`, newest first, each log read (no index); a
    damaged or unreadable log is listed too, with `damaged` saying what is wrong."""
    summaries: list[SessionSummary] = []
    for name in log_names(directory):
        path = directory / name
        try:
            summaries.append(summarize(path))
        except OSError as exc:
            summaries.append(unreadable(path, exc))
    return summaries


def own_task(data: bytes | mmap.mmap, parent_event: int) -> str:
    """The first message of the person after event `parent_event` in a log's bytes ("" if
    none). Only the lines holding a user event are parsed: found with `find`, not line by
    line."""
    at = data.find(_USER)
    while at >= 0:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        try:
            event = json.loads(data[start:end])
        except ValueError:
            event = None
        if isinstance(event, dict) and event.get("kind") == "message":
            number = event.get("id")
            if isinstance(number, int) and number > parent_event and event.get("source") == "user":
                return str(event.get("text", ""))
        at = data.find(_USER, end)
    return ""
