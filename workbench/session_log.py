"""The session log: one append-only JSONL file per session, readable after a crash.

Line 1 is a `SessionHeader`; every later line is one event (`workbench.events`). Each line is
written whole and flushed as it happens, so a process killed mid-write leaves at most one
partial last line, which `read` skips and reports. Large payloads (images) are files in a
folder beside the log (`<id>.files/`), referenced by name. Known secret values are scrubbed
from every line before it is written, whatever event carries them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.events import (
    ENDED_STATES,
    EVENT_SCHEMA_VERSION,
    Event,
    event_to_json,
    parse_event,
)

SESSION_SCHEMA_VERSION = 1
REDACTED = "***"
MIN_SECRET_LEN = 6
"""Shorter values are not scrubbed: replacing "x" everywhere would wreck the log, not hide much."""

_SECRET_KEY_WORDS = frozenset(
    {"key", "keys", "apikey", "token", "secret", "secrets", "password", "passwd", "credentials"}
)
"""A config key holding one of these words (split at `_`, `-`, `.`) is a secret; `max_tokens`
is a count, not a token."""


class SessionHeader(BaseModel):
    """The first line of a session log: what made it and with which (redacted) settings."""

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: Literal["header"] = "header"
    schema_version: int = SESSION_SCHEMA_VERSION
    event_schema_version: int = EVENT_SCHEMA_VERSION
    workbench_version: str
    session_id: str
    created: float
    workspace: str
    model: str
    config_digest: str = ""
    config: dict[str, Any] = {}
    parent_id: str = ""
    """The session this one continues (resumed or branched from it); "" for a new one."""
    parent_event: int = 0
    """The id of the parent's last event copied into this log (events up to it are history)."""


def workbench_version() -> str:
    """The installed workbench version, or "0+unknown" when running from a bare checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workbench")
    except PackageNotFoundError:
        return "0+unknown"


def new_session_id(now: float | None = None) -> str:
    """A new id that sorts by creation time (UTC), e.g. `20261122-215600-3fa9c1`."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(time.time() if now is None else now))
    return f"{stamp}-{secrets.token_hex(3)}"


def redact(data: Any) -> Any:
    """A copy of a JSON-like value with every secret-looking key's value replaced."""
    if isinstance(data, Mapping):
        out: dict[str, Any] = {}
        for key, value in data.items():
            secret = not _SECRET_KEY_WORDS.isdisjoint(re.split(r"[_.\-]", str(key).lower()))
            out[str(key)] = REDACTED if secret and value not in (None, "") else redact(value)
        return out
    if isinstance(data, list | tuple):
        return [redact(item) for item in data]
    return data


def config_digest(redacted_config: Mapping[str, Any]) -> str:
    """A short, stable digest of a (redacted) configuration."""
    text = json.dumps(redacted_config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def make_header(
    session_id: str,
    workspace: str | Path,
    model: str,
    config: Mapping[str, Any] | None = None,
    parent_id: str = "",
    parent_event: int = 0,
) -> SessionHeader:
    """A header for a new session (`parent_*`: the session it continues); `config` is
    redacted and digested here."""
    clean = redact(dict(config or {}))
    return SessionHeader(
        workbench_version=workbench_version(),
        session_id=session_id,
        created=time.time(),
        workspace=str(workspace),
        model=model,
        config_digest=config_digest(clean),
        config=clean,
        parent_id=parent_id,
        parent_event=parent_event,
    )


class Scrubber:
    """Replaces known secret values (and their JSON-escaped forms) in text."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for value in values:
            if value and len(value) >= MIN_SECRET_LEN:
                forms.add(value)
                forms.add(json.dumps(value)[1:-1])
        # Longest first, so a secret containing another is replaced whole.
        self._forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        """`text` with every secret replaced by `***`."""
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self._forms)


class SessionLog:
    """An open session log: `append` writes one event per line, flushed as it happens."""

    def __init__(
        self, path: Path, header: SessionHeader, stream: IO[str], scrub: Scrubber, fsync: bool
    ) -> None:
        self.path = path
        self.header = header
        self._stream = stream
        self._scrub = scrub
        self._fsync = fsync
        self.events_written = 0

    @property
    def session_id(self) -> str:
        """The session's id (also the log's file name without `.jsonl`)."""
        return self.header.session_id

    def scrub(self, text: str) -> str:
        """`text` with this session's secrets masked (as every line of the log is)."""
        return self._scrub(text)

    @property
    def payload_dir(self) -> Path:
        """The folder beside the log for large payloads (created on first use)."""
        return self.path.with_name(f"{self.session_id}.files")

    @classmethod
    def create(
        cls,
        directory: Path,
        header: SessionHeader,
        secrets: Iterable[str] = (),
        fsync: bool = False,
    ) -> SessionLog:
        """Start `<directory>/<session id>.jsonl` with `header` (refuses to overwrite a log)."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{header.session_id}.jsonl"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        stream = os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        log = cls(path, header, stream, Scrubber(secrets), fsync)
        log._write(header.model_dump_json())
        return log

    def append(self, event: Event) -> None:
        """Write `event` as one line and flush it to the OS (and disk, with `fsync=True`)."""
        self._write(event_to_json(event))
        self.events_written += 1

    def write_payload(self, name: str, data: bytes) -> str:
        """Store a large payload beside the log; returns the name to reference it by."""
        safe = Path(name).name
        if not safe or safe in (".", ".."):
            raise ValueError(f"bad payload name: {name!r}")
        self.payload_dir.mkdir(exist_ok=True)
        (self.payload_dir / safe).write_bytes(data)
        return safe

    def close(self) -> None:
        """Flush and close the file; further appends raise ValueError."""
        if not self._stream.closed:
            self._stream.flush()
            os.fsync(self._stream.fileno())
            self._stream.close()

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._stream.closed

    def _write(self, line: str) -> None:
        if "\n" in line:  # model_dump_json never emits one; a line must stay one line
            line = line.replace("\n", "\\n")
        if self._scrub:
            line = self._scrub(line)
        self._stream.write(line + "\n")
        self._stream.flush()
        if self._fsync:
            os.fsync(self._stream.fileno())

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SessionLogError(Exception):
    """The file is not a session log (no readable header); the message says why."""


@dataclass
class LoadedSession:
    """A session read back: header, events, and what could not be read."""

    path: Path
    header: SessionHeader
    events: list[Event] = field(default_factory=list)
    truncated: bool = False
    """The last line was incomplete (the writer was killed mid-line) and was skipped."""
    bad_lines: list[tuple[int, str]] = field(default_factory=list)
    """(line number, why) for complete lines that did not parse; they are skipped."""


def read(path: Path) -> LoadedSession:
    """Read a session log up to its last complete line, skipping (and reporting) bad lines."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise SessionLogError(f"cannot read session log {path}: {exc.strerror}") from exc
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline, else a partial line
    if not lines:
        raise SessionLogError(f"{path} has no complete header line; it is not a session log")
    try:
        header = SessionHeader.model_validate_json(lines[0])
    except ValidationError as exc:
        raise SessionLogError(f"{path}: line 1 is not a session header: {exc}") from exc
    loaded = LoadedSession(path=Path(path), header=header, truncated=bool(tail.strip()))
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            loaded.events.append(parse_event(line))
        except ValidationError as exc:
            loaded.bad_lines.append((number, str(exc).splitlines()[0]))
    return loaded


def load(path: Path) -> tuple[SessionHeader, list[Event]]:
    """The header and events of a session log (see `read` for what was skipped)."""
    loaded = read(path)
    return loaded.header, loaded.events


@dataclass(frozen=True)
class SessionSummary:
    """One line of a session list: the header, the first task, and how the session ended."""

    path: Path
    header: SessionHeader
    task: str
    """The first message the person sent ("" if the log has none)."""
    state: str
    """The last agent state recorded: finished, error or stopped; "unfinished" if the log
    stops in another state (still running, or its process was killed); "" if none."""


def summarize(path: Path, head_lines: int = 64, tail_bytes: int = 65_536) -> SessionSummary:
    """Summarize a log from its first lines and its last bytes (not the whole file)."""
    with Path(path).open("rb") as stream:
        header = SessionHeader.model_validate_json(stream.readline())
        task = ""
        for _ in range(head_lines):
            line = stream.readline()
            if not line:
                break
            event = _json_object(line)
            if event.get("kind") == "message" and event.get("source") == "user":
                task = str(event.get("text", ""))
                break
        size = stream.seek(0, os.SEEK_END)
        stream.seek(max(0, size - tail_bytes))
        tail = stream.read().split(b"\n")
    state = ""
    for line in reversed(tail):
        event = _json_object(line)
        if event.get("kind") == "state":
            last = str(event.get("state", ""))
            state = last if last in ENDED_STATES else "unfinished"
            break
    return SessionSummary(Path(path), header, task, state)


def _json_object(line: bytes) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError:  # a partial line (cut by the tail read, or by a kill)
        return {}
    return value if isinstance(value, dict) else {}


def list_summaries(directory: Path) -> list[SessionSummary]:
    """Summaries of the logs in `directory`, newest first (unreadable files are left out)."""
    summaries: list[SessionSummary] = []
    for path in sorted(directory.glob("*.jsonl"), reverse=True):
        try:
            summaries.append(summarize(path))
        except (OSError, ValidationError):
            continue
    return summaries
