"""How an event looks to a person, as plain data: the `Cell` (a title line and a body) and the
small text helpers that make titles. Tools build their cells with these; the TUI draws them.

Nothing here imports Textual, so building 10 000 cells costs only the string work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

Role = Literal["user", "agent", "action", "observation", "error", "confirm", "state"]
BodyFormat = Literal["markdown", "code", "text"]

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_MD_LINK_RE = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_MD_MARK_RE = re.compile(r"\*\*|`")
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*")
_FATAL = re.compile(r"\b(fatal|panic)(:|\b)", re.IGNORECASE)
_ERROR = re.compile(r"\berror\b\s*(\[[^\]]*\])?:|^E\s{2,}|^ERROR\b", re.IGNORECASE)
_FAILURE = re.compile(
    r"\b(error|failed|failure|not found|no such file|permission denied|cannot|can't|unable"
    r"|refused|denied|invalid|unknown|missing|abort(ed)?)\b",
    re.IGNORECASE,
)
_EXT_LEXERS = {
    ".py": "python",
    ".sh": "bash",
    ".js": "javascript",
    ".ts": "typescript",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".c": "c",
    ".rs": "rust",
    ".go": "go",
}


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences (colours, cursor moves, titles)."""
    return ANSI_RE.sub("", text) if "\x1b" in text else text


@dataclass(frozen=True)
class Section:
    """One more body of a cell: its text and how to draw it."""

    text: str
    body_format: BodyFormat = "text"
    lexer: str = "text"


@dataclass(eq=False)
class Cell:
    """One row group: a title line, and a body shown when `expanded`."""

    key: str
    role: Role
    icon: str
    title: str
    body: str = ""
    body_format: BodyFormat = "text"
    lexer: str = "text"
    expanded: bool = False
    image: bytes | None = None
    """A PNG drawn below the body (Jupyter output)."""
    summary: str = ""
    """The outcome in a few words, drawn at the right end of the title row (`+3 -1`,
    `✗ exit 1 · 4 lines · fatal: ...`)."""
    summary_role: Role | None = None
    """The colour of `summary` (the cell's role when None)."""
    more: tuple[Section, ...] = ()
    """Further bodies drawn after `body` (an action's code, then its output)."""
    inline: bool = False
    """Expanded, the body starts on the title row and wraps under it: a message shown whole."""

    @property
    def expandable(self) -> bool:
        """True when the body holds more than the title shows."""
        return bool(self.body) or bool(self.more) or self.image is not None

    def copy_text(self) -> str:
        """The text a person copies out of this cell."""
        texts = [self.body, *(section.text for section in self.more)]
        return "\n\n".join(text for text in texts if text) or self.title


def first_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of `text`, cut to `limit` characters."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def last_line(text: str, limit: int = 200) -> str:
    """The last non-empty line of `text`, cut to `limit` characters."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:limit]
    return ""


def telling_line(text: str, limit: int = 200) -> str:
    """The line of failed output that says most about why: a `fatal:` line, a traceback's
    exception, the first line that reports an error, a line naming a failure, else the last."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if _FATAL.search(line):
            return line[:limit]
    if _TRACEBACK in text:
        after = [line for line in text[text.rindex(_TRACEBACK) :].splitlines()[1:] if line]
        flush_left = [line.strip() for line in after if not line.startswith((" ", "\t"))]
        named = [line for line in flush_left if _EXCEPTION_LINE.match(line)]
        if named or flush_left:
            return (named or flush_left)[0][:limit]
    for pattern in (_ERROR, _FAILURE):
        for line in lines:
            if pattern.search(line) and not line.startswith("make: ***"):
                return line[:limit]
    return lines[-1][:limit] if lines else ""


def diff_counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff (its `+++`/`---` headers not counted)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def plain_line(text: str, limit: int = 200) -> str:
    """The first line of Markdown `text` as a title: no `**`, backticks, heading marks or
    link targets."""
    line = _MD_LINK_RE.sub(r"\1", first_line(text, limit))
    return _MD_MARK_RE.sub("", line.lstrip("#").strip()) or line


def lexer_for_path(path: str) -> str:
    """A Pygments lexer name guessed from a file name."""
    return _EXT_LEXERS.get(PurePosixPath(path).suffix.lower(), "text")
