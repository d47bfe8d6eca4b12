"""The `files` executor: the `str_replace_editor` contract (view, create, edit, undo).

Paths must be absolute. Text is decoded by `files_text` (encoding, BOM and CRLF kept on write,
tabs never expanded); what the agent reads is built by `files_view`. Every refusal is an
`ErrorObservation` that says what was wrong and what to do instead.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from sandbox.executors.base import ExecutorContext, register
from sandbox.executors.files_text import (
    EditRefused,
    TextFile,
    diff_text,
    human_size,
    near_miss,
    occurrences,
    read_text,
    too_big_message,
    write_bytes,
)
from sandbox.executors.files_view import (
    LineCache,
    directory_tree,
    lines_in_range,
    numbered,
    parse_view_range,
    snippet,
    split_lines,
    unified_diff,
    view_big,
)
from sandbox.profile import is_protected, refusal
from sandbox.protocol import (
    Action,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    Observation,
)

DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024
DEFAULT_HISTORY_DEPTH = 10
DEFAULT_MAX_VIEW_CHARS = 30_000
DEFAULT_MAX_DIR_ENTRIES = 400
_REVIEW = "Review the changes and make sure they are as expected. Edit the file again if necessary."


@dataclass(frozen=True)
class _Undo:
    before: bytes | None
    """The file's bytes before the edit; None when the edit created it."""
    after_digest: bytes


class FileEditor:
    """Carries out `FileEditAction`s on the sandbox's file system."""

    name: ClassVar[str] = "files"
    action_kinds: ClassVar[tuple[str, ...]] = ("edit",)

    def __init__(
        self,
        workspace: Path,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        history_depth: int = DEFAULT_HISTORY_DEPTH,
        max_view_chars: int = DEFAULT_MAX_VIEW_CHARS,
        max_dir_entries: int = DEFAULT_MAX_DIR_ENTRIES,
        protected: tuple[Path, ...] = (),
    ) -> None:
        self.workspace = workspace
        self.protected = tuple(Path(os.path.realpath(path)) for path in protected)
        """Folders of the sandbox's own (the checkpoint store) that no command may touch."""
        self.max_file_bytes = max_file_bytes
        self.history_depth = history_depth
        self.max_view_chars = max_view_chars
        self.max_dir_entries = max_dir_entries
        self._history: dict[Path, deque[_Undo]] = {}
        self._lines = LineCache()

    @classmethod
    def from_context(cls, context: ExecutorContext) -> FileEditor:
        """Build the editor for a sandbox, with paths suggested relative to its workspace; the
        checkpoint store is out of its reach (through a symlink too)."""
        store = context.checkpoints or context.artifacts.parent / "checkpoints.git"
        return cls(context.workspace, protected=(store,))

    def execute(self, action: Action) -> Observation:
        """Carry out one editor command; refusals come back as `ErrorObservation`s."""
        if not isinstance(action, FileEditAction):
            return ErrorObservation(content=f"The file editor cannot run '{action.kind}' actions.")
        try:
            path = self._absolute(action.path)
            self._refuse_protected(path)
            if action.command != "view":
                self._refuse_profile(path)
            handler = {
                "view": self._view,
                "create": self._create,
                "str_replace": self._str_replace,
                "insert": self._insert,
                "undo_edit": self._undo,
            }[action.command]
            content, diff = handler(path, action)
        except EditRefused as exc:  # NotText included
            return ErrorObservation(content=str(exc))
        except OSError as exc:
            what = exc.strerror or str(exc)
            return ErrorObservation(
                content=f"Could not {action.command} {action.path}: {what} "
                f"({type(exc).__name__}). Check the path and its permissions."
            )
        return FileEditObservation(
            command=action.command, path=str(path), content=content, diff=diff
        )

    def close(self) -> None:
        """Forget the undo history (the editor starts no processes)."""
        self._history.clear()

    # ------------------------------------------------------------------ commands

    def _view(self, path: Path, action: FileEditAction) -> tuple[str, None]:
        if path.is_dir():
            if action.view_range is not None:
                raise EditRefused(
                    f"{path} is a directory: `view_range` only applies to files. "
                    "View the directory without it, or view a file inside it."
                )
            return directory_tree(path, self.max_dir_entries), None
        self._require_file(path)
        stat = path.stat()
        if stat.st_size > self.max_file_bytes:
            return (
                view_big(
                    path, stat.st_size, action.view_range, self.max_file_bytes, self.max_view_chars
                ),
                None,
            )
        first, last = (1, -1) if action.view_range is None else parse_view_range(action.view_range)
        total: int | None
        every = self._lines.get(path, stat)
        if every is None:
            text = read_text(path, self.max_file_bytes).text
            if LineCache.trusts(stat):
                every = split_lines(text)
                self._lines.put(path, stat, every)
        if every is not None:
            lines, total = every[first - 1 : None if last == -1 else last], len(every)
        else:
            lines, total = lines_in_range(text, first, last)
        if total == 0:
            return f"{path} is empty.", None
        note = ""
        if total is not None:
            if first > total:
                raise EditRefused(
                    f"Invalid view_range {action.view_range}: start must be within "
                    f"[1, {total}] ({path} has {total} lines)."
                )
            if last > total:
                lines_word = "line" if total == 1 else "lines"
                note = f"\n[{path} has only {total} {lines_word}: showed up to line {total}.]"
            last = total if last == -1 or last > total else last
        body, shown = numbered(lines, first, self.max_view_chars)
        if shown < len(lines):
            end = first + shown - 1
            note += (
                f"\n[Output cut at line {end} to keep it short: view the rest with "
                f"view_range [{end + 1}, {last}], in smaller steps if needed.]"
            )
        return f"Here's the result of running `cat -n` on {path}:\n{body}{note}", None

    def _create(self, path: Path, action: FileEditAction) -> tuple[str, str]:
        if action.file_text is None:
            raise EditRefused("`create` needs `file_text`: the whole content of the new file.")
        if path.is_dir():
            raise EditRefused(f"{path} is a directory; `create` needs the path of a new file.")
        if path.exists():
            raise EditRefused(
                f"File already exists at {path}. `create` never overwrites a file: change it "
                "with `str_replace` or `insert`, or remove it from the shell first."
            )
        data = action.file_text.encode("utf-8")
        if len(data) > self.max_file_bytes:
            raise EditRefused(
                f"The new file would be {human_size(len(data))}, over the editor's limit of "
                f"{human_size(self.max_file_bytes)}. Write it in smaller parts or from the shell."
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, data)
        self._remember(path, None, data)
        lines = len(split_lines(action.file_text))
        return (
            f"File created successfully at: {path} ({lines} lines)",
            unified_diff(str(path), None, action.file_text),
        )

    def _str_replace(self, path: Path, action: FileEditAction) -> tuple[str, str]:
        if action.old_str is None or action.old_str == "":
            raise EditRefused(
                "`str_replace` needs a non-empty `old_str`: the exact text to replace, "
                "including enough surrounding lines to be unique."
            )
        file = self._read_for_edit(path)
        old = file.normalize(action.old_str)
        new = file.normalize(action.new_str or "")
        if old == new:
            raise EditRefused("`old_str` and `new_str` are identical: there is nothing to change.")
        starts = occurrences(file.text, old)
        if not starts:
            raise EditRefused(
                f"No replacement was performed: old_str did not appear verbatim in {path}."
                + near_miss(file.text, old)
            )
        if len(starts) > 1:
            numbers = [file.text.count("\n", 0, at) + 1 for at in starts[:20]]
            listed = f"{numbers}" if len(starts) <= 20 else f"{numbers} (first 20 shown)"
            raise EditRefused(
                f"No replacement was performed: old_str occurs {len(starts)} times in {path}, "
                f"starting at lines {listed}. Include more surrounding lines in old_str so "
                "that it matches exactly once."
            )
        at = starts[0]
        text = file.text[:at] + new + file.text[at + len(old) :]
        self._write(file, text)
        first = file.text.count("\n", 0, at) + 1
        last = first + new.count("\n")
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a "
            f"snippet of {path}:\n{snippet(text, first, last, self.max_view_chars)}\n{_REVIEW}",
            unified_diff(str(path), file.text, text),
        )

    def _insert(self, path: Path, action: FileEditAction) -> tuple[str, str]:
        if action.insert_line is None:
            raise EditRefused(
                "`insert` needs `insert_line`: the line after which to insert (0 for the top)."
            )
        if action.new_str is None:
            raise EditRefused("`insert` needs `new_str`: the text to insert.")
        file = self._read_for_edit(path)
        lines = file.text.split("\n")
        total = len(split_lines(file.text))
        if not 0 <= action.insert_line <= total:
            raise EditRefused(
                f"Invalid insert_line {action.insert_line}: it must be within [0, {total}] "
                f"for {path} (0 inserts at the top, {total} after the last line)."
            )
        new = file.normalize(action.new_str)
        new_lines = new.removesuffix("\n").split("\n")
        at = action.insert_line
        if at == total and lines[-1] != "":  # a last line without newline: keep it that way
            lines = [*lines[:at], *new_lines]
        else:
            lines = [*lines[:at], *new_lines, *lines[at:]]
        text = "\n".join(lines)
        self._write(file, text)
        return (
            f"The file {path} has been edited. Here's the result of running `cat -n` on a "
            f"snippet of the edited file:\n"
            f"{snippet(text, at + 1, at + len(new_lines), self.max_view_chars)}\n{_REVIEW}",
            unified_diff(str(path), file.text, text),
        )

    def _undo(self, path: Path, action: FileEditAction) -> tuple[str, str]:
        history = self._history.get(path)
        if not history:
            raise EditRefused(
                f"No edit history for {path}: the editor has not changed this file in this "
                "session (or every edit has already been undone)."
            )
        undo = history.pop()
        self._lines.forget(path)
        current = path.read_bytes() if path.is_file() else None
        note = ""
        if current is not None and hashlib.blake2b(current).digest() != undo.after_digest:
            note = " The file had been changed outside the editor since; those changes are gone."
        old_text = diff_text(current)
        if undo.before is None:
            path.unlink(missing_ok=True)
            return (
                f"Last edit to {path} undone: it had created the file, which is now removed.{note}",
                unified_diff(str(path), old_text, None),
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(path, undo.before)
        restored = diff_text(undo.before) or ""
        left = f" {len(history)} more undo level(s) remain." if history else ""
        body, _ = numbered(split_lines(restored), 1, self.max_view_chars)
        return (
            f"Last edit to {path} undone successfully.{left}{note} Here's the result of "
            f"running `cat -n` on {path}:\n{body}",
            unified_diff(str(path), old_text, restored),
        )

    # ------------------------------------------------------------------ helpers

    def _absolute(self, raw: str) -> Path:
        if not raw.strip():
            raise EditRefused("The path is empty: give the absolute path of a file or directory.")
        if not os.path.isabs(raw):
            suggestion = self.workspace / raw.removeprefix("./")
            raise EditRefused(
                f"The path {raw!r} is not an absolute path; the editor only takes absolute "
                f"paths. Did you mean {suggestion}?"
            )
        return Path(os.path.normpath(raw))

    def _refuse_protected(self, path: Path) -> None:
        """Refuse a path that is, or leads through a symlink into, a protected folder."""
        real = Path(os.path.realpath(path))
        for folder in self.protected:
            if real == folder or folder in real.parents:
                raise EditRefused(
                    f"{path} is in the sandbox's checkpoint store ({folder}), which only the "
                    "sandbox itself may change. Nothing was done."
                )

    def _refuse_profile(self, path: Path) -> None:
        """Refuse a write under one of the workspace's protected paths (`sandbox/profile.py`),
        named as given or reached through a symlink."""
        for candidate in (path, Path(os.path.realpath(path))):
            if candidate.is_relative_to(self.workspace):
                why = is_protected(str(candidate.relative_to(self.workspace)))
                if why is not None:
                    raise EditRefused(refusal(str(path), why))

    def _require_file(self, path: Path) -> None:
        if path.is_dir():
            raise EditRefused(
                f"{path} is a directory: only `view` works on directories. "
                "Give the path of a file inside it."
            )
        if not path.exists():
            hint = ""
            if path.parent.is_dir():
                names = [entry.name for entry in os.scandir(path.parent)]
                close = difflib.get_close_matches(path.name, names, n=3)
                if close:
                    hint = " Did you mean " + " or ".join(str(path.parent / c) for c in close) + "?"
            raise EditRefused(
                f"The path {path} does not exist.{hint} View a directory to see what is there, "
                "or use `create` to make a new file."
            )
        if not path.is_file():
            raise EditRefused(f"{path} is not a regular file (a device, socket or pipe).")

    def _read_for_edit(self, path: Path) -> TextFile:
        self._require_file(path)
        size = path.stat().st_size
        if size > self.max_file_bytes:
            raise EditRefused(too_big_message(path, size, self.max_file_bytes))
        return read_text(path, self.max_file_bytes)

    def _write(self, file: TextFile, text: str) -> None:
        try:
            data = file.encode(text)
        except UnicodeEncodeError as exc:
            bad = exc.object[exc.start : exc.end]
            raise EditRefused(
                f"{file.path} is stored as {file.label}, which cannot hold {bad!r}. "
                "Nothing was written: use characters the file's encoding has, or convert the "
                f"file first (e.g. `iconv -f {file.encoding} -t utf-8`)."
            ) from exc
        if len(data) > self.max_file_bytes:
            raise EditRefused(too_big_message(file.path, len(data), self.max_file_bytes))
        before = file.path.read_bytes()
        self._lines.forget(file.path)
        write_bytes(file.path, data)
        self._remember(file.path, before, data)

    def _remember(self, path: Path, before: bytes | None, after: bytes) -> None:
        history = self._history.setdefault(path, deque(maxlen=self.history_depth))
        history.append(_Undo(before, hashlib.blake2b(after).digest()))


register("files", ("edit",), FileEditor.from_context)
