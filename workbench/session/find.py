"""Finding a saved session by what a person types: a whole id, a unique prefix of one, the
path of a log, or the newest (`--last`).

An unknown or ambiguous reference raises `SessionNotFound`, whose message names the
candidates; the CLI turns it into a usage error (exit code 2).
"""

from __future__ import annotations

from pathlib import Path

MAX_CANDIDATES = 10
"""An ambiguous prefix lists at most this many of the sessions it matches."""


class SessionNotFound(ValueError):
    """No single session matches what was asked for; the message says why and what exists."""


def session_ids(directory: Path) -> list[str]:
    """The ids of the logs in `directory`, newest first (ids sort by creation time)."""
    if not directory.is_dir():
        return []
    return sorted((path.stem for path in directory.glob("*.jsonl")), reverse=True)


def find_session(directory: Path, ref: str) -> Path:
    """The log `ref` names: an id, a unique prefix of one, or a path to a `.jsonl` file."""
    ref = ref.strip()
    if not ref:
        raise SessionNotFound("no session id given")
    as_path = Path(ref).expanduser()
    if ref.endswith(".jsonl") and as_path.is_file():
        return as_path
    ids = session_ids(directory)
    if ref in ids:
        return directory / f"{ref}.jsonl"
    matches = [found for found in ids if found.startswith(ref)]
    if len(matches) == 1:
        return directory / f"{matches[0]}.jsonl"
    if matches:
        shown = "\n  ".join(matches[:MAX_CANDIDATES])
        more = len(matches) - MAX_CANDIDATES
        tail = f"\n  ... and {more} more" if more > 0 else ""
        raise SessionNotFound(
            f"session id {ref!r} is ambiguous: {len(matches)} sessions start with it:\n"
            f"  {shown}{tail}\nGive more of the id."
        )
    if not ids:
        raise SessionNotFound(f"no session {ref!r}: there are no saved sessions in {directory}")
    recent = "\n  ".join(ids[:5])
    raise SessionNotFound(
        f"no session {ref!r} in {directory}. The newest are:\n  {recent}\n"
        "`workbench sessions` lists them all."
    )


def last_session(directory: Path) -> Path:
    """The newest log in `directory` (`--last`)."""
    ids = session_ids(directory)
    if not ids:
        raise SessionNotFound(f"--last: there are no saved sessions in {directory}")
    return directory / f"{ids[0]}.jsonl"
