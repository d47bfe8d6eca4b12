"""A file viewer for the agent's kernel: open a file, jump to a line, scroll; one current file.

Every function prints what it shows (the agent reads the cell's output) and returns None.
Problems are printed as a line starting with `ERROR:` that says what to do, never raised.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from sandbox.executors.files_text import NotText, read_text

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_LINE_CHARS = 1000
"""Longer lines are shown cut, with the number of characters left out."""
MAX_WINDOW = 2000


@dataclass
class _Viewer:
    """The current file and the window of it last shown."""

    path: Path | None = None
    first: int = 1
    window: int = 100

    def reset(self) -> None:
        """Forget the current file."""
        self.path, self.first, self.window = None, 1, 100


VIEWER = _Viewer()


def resolve(path: str | os.PathLike[str]) -> Path:
    """`path` made absolute against the kernel's current directory, `~` expanded."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def read_lines(path: Path) -> list[str] | str:
    """The file's lines, or an error message saying why it cannot be shown."""
    if not path.exists():
        return f"ERROR: {path} does not exist. Use find_file(name) to look for it."
    if path.is_dir():
        return f"ERROR: {path} is a directory. Use find_file() or search_dir() inside it."
    try:
        text = read_text(path, MAX_FILE_BYTES).text
    except NotText as exc:
        return f"ERROR: {exc}"
    except OSError as exc:
        return f"ERROR: cannot read {path}: {exc.strerror or exc}."
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def clip(line: str) -> str:
    """A line cut to `MAX_LINE_CHARS`, saying how much was left out."""
    line = line.removesuffix("\r")
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... [{len(line) - MAX_LINE_CHARS} more characters]"


def _show(first: int) -> None:
    """Print the window starting at `first` of the current file and remember it."""
    assert VIEWER.path is not None
    lines = read_lines(VIEWER.path)
    if isinstance(lines, str):
        print(lines)
        return
    total = len(lines)
    first = max(1, min(first, total - VIEWER.window + 1))
    last = min(total, first + VIEWER.window - 1)
    VIEWER.first = first
    out = [f"[File: {VIEWER.path} ({total} lines total)]"]
    if first > 1:
        out.append(f"({first - 1} more lines above)")
    out.extend(f"{number}|{clip(lines[number - 1])}" for number in range(first, last + 1))
    if total == 0:
        out.append("(the file is empty)")
    if last < total:
        out.append(f"({total - last} more lines below)")
        out.append("[Use scroll_down() to see the next lines, goto_line(n) to jump.]")
    else:
        out.append("(this is the end of the file)")
    print("\n".join(out))


def _centered(line_number: int) -> int:
    return line_number - VIEWER.window // 2 if line_number > VIEWER.window // 2 else 1


def open_file(path: str, line_number: int = 1, context_lines: int = 100) -> None:
    """Show `context_lines` numbered lines of a file around `line_number`; it becomes current.

    The path may be relative to the kernel's current directory. Long lines are cut.
    """
    if not 1 <= context_lines <= MAX_WINDOW:
        print(f"ERROR: context_lines must be within [1, {MAX_WINDOW}], not {context_lines}.")
        return
    target = resolve(path)
    lines = read_lines(target)
    if isinstance(lines, str):
        print(lines)
        return
    if not 1 <= line_number <= max(1, len(lines)):
        print(
            f"ERROR: line_number must be within [1, {max(1, len(lines))}] "
            f"({target} has {len(lines)} lines)."
        )
        return
    VIEWER.path, VIEWER.window = target, context_lines
    _show(_centered(line_number) if line_number > 1 else 1)


def goto_line(line_number: int) -> None:
    """Show the window of the current file centred on `line_number`."""
    if VIEWER.path is None:
        print("ERROR: no file is open. Call open_file(path) first.")
        return
    lines = read_lines(VIEWER.path)
    if isinstance(lines, str):
        print(lines)
        return
    if not 1 <= line_number <= max(1, len(lines)):
        print(f"ERROR: line_number must be within [1, {max(1, len(lines))}] for {VIEWER.path}.")
        return
    _show(_centered(line_number))


def scroll_down() -> None:
    """Show the next window of the current file."""
    if VIEWER.path is None:
        print("ERROR: no file is open. Call open_file(path) first.")
        return
    _show(VIEWER.first + VIEWER.window)


def scroll_up() -> None:
    """Show the previous window of the current file."""
    if VIEWER.path is None:
        print("ERROR: no file is open. Call open_file(path) first.")
        return
    _show(VIEWER.first - VIEWER.window)


def create_file(path: str, content: str = "") -> None:
    """Create a new file (and its folders) with `content`, then open it; never overwrites."""
    target = resolve(path)
    if target.exists():
        print(
            f"ERROR: {target} already exists; create_file never overwrites. "
            "Edit it with the str_replace_editor tool instead."
        )
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    except OSError as exc:
        print(f"ERROR: cannot create {target}: {exc.strerror or exc}.")
        return
    print(f"[File {target} created.]")
    open_file(str(target))
