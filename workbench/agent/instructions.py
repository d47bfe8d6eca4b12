"""Project instructions: `AGENTS.md` at the workspace root, and `.openhands/microagents/repo.md`
for people coming from OpenHands, read for the system prompt.

Read on the host, where the workspace is (the local and Docker runtimes mount it). A file is
read only if its real path stays inside the workspace: a symlink pointing elsewhere (at
`~/.ssh/id_rsa`, say) is skipped with a note and never opened. The check is made on the file
actually opened (`O_NOFOLLOW`, then its `/proc/self/fd` path), so a link swapped in between
cannot redirect the read. Only regular files are read, at most `max_chars` characters in all
(the rest is cut with a note); a file that is not UTF-8 text is skipped with a note.
"""

from __future__ import annotations

import codecs
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from workbench.config.schema import InstructionsConfig

SOURCES = ("AGENTS.md", ".openhands/microagents/repo.md")
"""Where instructions are looked for, relative to the workspace, in this order."""
CUT_NOTE = "[... instructions cut here: they are longer than the {limit}-character limit ...]"


@dataclass
class Instructions:
    """What the system prompt gets: the text, the files it came from, notes on what was cut."""

    text: str = ""
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _read(root: str, relative: str, limit: int) -> tuple[str | None, str]:
    """(text of at most `limit` + 1 characters, "") or (None, why it was skipped; "" if absent)."""
    path = os.path.join(root, relative)
    real = os.path.realpath(path)
    if not os.path.lexists(path):
        return None, ""
    if not _inside(real, root):
        return None, f"{relative} was not read: it points outside the workspace"
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return None, f"{relative} was not read: {exc.strerror or exc}"
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}") if os.path.isdir("/proc/self/fd") else real
        if not _inside(opened, root):
            return None, f"{relative} was not read: it points outside the workspace"
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, f"{relative} was not read: it is not a regular file"
        data = os.read(fd, (limit + 1) * 4)  # enough bytes for limit + 1 characters
    finally:
        os.close(fd)
    if b"\0" in data:
        return None, f"{relative} was not read: it is binary, not text"
    # Strict UTF-8; a read cut short may end inside a character, which is left out.
    decoder = codecs.getincrementaldecoder("utf-8")()
    return decoder.decode(data, final=len(data) < (limit + 1) * 4), ""


def load_instructions(workspace: Path, config: InstructionsConfig) -> Instructions:
    """The project instructions of `workspace` (none when turned off in the config)."""
    found = Instructions()
    if not config.enabled:
        return found
    root = os.path.realpath(workspace)
    parts: list[str] = []
    room = config.max_chars
    for relative in SOURCES:
        if room <= 0:
            found.notes.append(f"{relative} was not read: the {config.max_chars}-character limit")
            continue
        try:
            text, why = _read(root, relative, room)
        except UnicodeDecodeError:
            text, why = None, f"{relative} was not read: it is not UTF-8 text"
        except OSError as exc:
            text, why = None, f"{relative} was not read: {exc.strerror or exc}"
        if why:
            found.notes.append(why)
        if text is None or not text.strip():
            continue
        if len(text) > room:
            text = text[:room].rstrip() + "\n" + CUT_NOTE.format(limit=config.max_chars)
            found.notes.append(
                f"{relative} was cut at the {config.max_chars}-character limit "
                "(instructions.max_chars)"
            )
        found.files.append(relative)
        parts.append(f"From {relative}:\n{text.strip()}")
        room -= len(text)
    found.text = "\n\n".join(parts)
    return found
