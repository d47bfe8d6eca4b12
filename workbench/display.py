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
    label: str = ""
    """Shown instead of the title while expanded (messages, whose body repeats the title)."""

    @property
    def expandable(self) -> bool:
        """True when the body holds more than the title shows."""
        return bool(self.body) or self.image is not None

    def copy_text(self) -> str:
        """The text a person copies out of this cell."""
        return self.body or self.title


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


def plain_line(text: str, limit: int = 200) -> str:
    """The first line of Markdown `text` as a title: no `**`, backticks, heading marks or
    link targets."""
    line = _MD_LINK_RE.sub(r"\1", first_line(text, limit))
    return _MD_MARK_RE.sub("", line.lstrip("#").strip()) or line


def lexer_for_path(path: str) -> str:
    """A Pygments lexer name guessed from a file name."""
    return _EXT_LEXERS.get(PurePosixPath(path).suffix.lower(), "text")
