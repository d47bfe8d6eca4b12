"""The session log: one append-only JSONL file per session, readable after a crash.

Line 1 is a `SessionHeader`; every later line is one event (`workbench.events`). Each line is
written whole and flushed as it happens, so a process killed mid-write leaves at most one
partial last line, which `read` skips and reports. A write that fails (a full disk) is cut
back to the last complete line and raises `SessionLogWriteError`, whose message says where and
what to do. Large payloads (images) are files in a folder beside the log (`<id>.files/`),
referenced by name. Known secret values are scrubbed from every line before it is written,
whatever event carries them. What a list of sessions shows of a log is in `summaries.py`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from workbench.events import (
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


class SessionLogWriteError(OSError):
    """The session log, or a file beside it, could not be written (a full disk, a read-only
    or vanished folder); the message says what, where and what to do."""

    def __init__(self, message: str, path: Path, errno_code: int | None) -> None:
        super().__init__(errno_code or 0, message)
        self.message = message
        self.path = path

    def __str__(self) -> str:
        return self.message


_FULL = (errno.ENOSPC, errno.EDQUOT)


def _write_failure(what: str, path: Path, exc: OSError, kept: str = "") -> SessionLogWriteError:
    """The error for `what` (at `path`) failing to be written, with the fix."""
    why = exc.strerror or str(exc)
    folder = path.parent
    if exc.errno in _FULL:
        fix = f"free space on the disk holding {folder}"
    else:
        fix = f"make {folder} writable"
    message = (
        f"cannot write {what} {path}: {why}. {kept}Fix: {fix}, or point WORKBENCH_DATA_DIR "
        "(or session.dir in the config) at a folder on another disk, then run again."
    )
    return SessionLogWriteError(message, path, exc.errno)


class SessionLog:
    """An open session log: `append` writes one event per line, flushed as it happens.

    A line is written whole or not at all: when a write fails (a full disk), the file is cut
    back to its last complete line, the log stops taking events (`failure` says why) and the
    append raises `SessionLogWriteError`."""

    def __init__(
        self, path: Path, header: SessionHeader, fd: int, scrub: Scrubber, fsync: bool
    ) -> None:
        self.path = path
        self.header = header
        self._fd = fd
        self._size = os.fstat(fd).st_size
        """The file's length up to its last complete line."""
        self._scrub = scrub
        self._fsync = fsync
        self.events_written = 0
        self.failure: SessionLogWriteError | None = None
        """Why the log stopped taking events (None while it is whole and open)."""

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
        """Start `<directory>/<session id>.jsonl` with `header` (refuses to overwrite a log).

        Raises `SessionLogWriteError` (and leaves no file) when it cannot be written."""
        path = directory / f"{header.session_id}.jsonl"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        except FileExistsError:
            raise
        except OSError as exc:
            raise _write_failure("the new session log", path, exc, "Nothing was run. ") from exc
        log = cls(path, header, fd, Scrubber(secrets), fsync)
        try:
            log._write(header.model_dump_json())
        except BaseException as exc:
            os.close(fd)
            path.unlink(missing_ok=True)  # no empty log left behind
            cause = exc.__cause__
            if isinstance(exc, SessionLogWriteError) and isinstance(cause, OSError):
                nothing = "Nothing was run. "
                raise _write_failure("the new session log", path, cause, nothing) from cause
            raise
        return log

    def append(self, event: Event) -> None:
        """Write `event` as one line and flush it to the OS (and disk, with `fsync=True`)."""
        self._write(event_to_json(event))
        self.events_written += 1

    def write_payload(self, name: str, data: bytes) -> str:
        """Store a large payload beside the log; returns the name to reference it by.

        Written to a temporary name and renamed, so a failure (`SessionLogWriteError`) leaves
        no partial file."""
        safe = Path(name).name
        if not safe or safe in (".", ".."):
            raise ValueError(f"bad payload name: {name!r}")
        target = self.payload_dir / safe
        temp = target.with_name(f".{safe}.partial")
        try:
            self.payload_dir.mkdir(exist_ok=True)
            temp.write_bytes(data)
            os.replace(temp, target)
        except OSError as exc:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
            raise _write_failure("an image of the session to", target, exc) from exc
        return safe

    def close(self) -> None:
        """Sync and close the file; further appends raise ValueError. Never raises: a sync
        that fails is kept in `failure`."""
        if self._fd < 0:
            return
        try:
            os.fsync(self._fd)
        except OSError as exc:
            if self.failure is None:
                self.failure = _write_failure("the session log", self.path, exc)
        finally:
            os.close(self._fd)
            self._fd = -1

    @property
    def closed(self) -> bool:
        """True once `close` was called."""
        return self._fd < 0

    def _write(self, line: str) -> None:
        if self._fd < 0:
            raise ValueError(f"the session log {self.path} is closed")
        if self.failure is not None:
            raise self.failure
        if "\n" in line:  # model_dump_json never emits one; a line must stay one line
            line = line.replace("\n", "\\n")
        if self._scrub:
            line = self._scrub(line)
        encoded = (line + "\n").encode("utf-8")
        rest = memoryview(encoded)
        try:
            while rest:
                rest = rest[os.write(self._fd, rest) :]
            if self._fsync:
                os.fsync(self._fd)
        except OSError as exc:
            self._cut_back()
            kept = f"The log keeps its header and {self.events_written} event(s), each line whole. "
            self.failure = _write_failure("the session log", self.path, exc, kept)
            raise self.failure from exc
        self._size += len(encoded)

    def _cut_back(self) -> None:
        """Drop a partly written line: the file ends with its last complete line again."""
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)

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
