"""Search skills: text in a directory tree or in one file, files by name; outputs are capped.

Directory walks skip hidden entries (names starting with `.`), `node_modules` and `__pycache__`,
and files that are binary or bigger than `MAX_SEARCH_BYTES`.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator
from pathlib import Path

from sandbox.skills.viewer import VIEWER, clip, read_lines, resolve

MAX_MATCHES = 100
"""Matches printed at most; the rest are counted."""
MAX_SEARCH_BYTES = 2 * 1024 * 1024
MAX_FILES = 50_000
"""Files looked at, at most, by one directory walk."""
_SKIPPED_DIRS = frozenset({"node_modules", "__pycache__"})


def _walk(root: Path) -> Iterator[Path]:
    """Files under `root`, sorted, without hidden or skipped folders; at most `MAX_FILES`."""
    seen = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if name.startswith("."):
                continue
            seen += 1
            if seen > MAX_FILES:
                return
            yield Path(folder) / name


def _text_lines(path: Path) -> list[str] | None:
    """The lines of a text file small enough to search, else None."""
    try:
        if path.stat().st_size > MAX_SEARCH_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _directory(dir_path: str) -> Path | None:
    root = resolve(dir_path)
    if not root.is_dir():
        print(f"ERROR: {root} is not a directory. Give a folder (default: the current one).")
        return None
    return root


def search_dir(search_term: str, dir_path: str = "./") -> None:
    """Print every line containing `search_term` (plain text, case-sensitive) in files under
    `dir_path`, as `path (Line N): text`; at most 100 are printed, the rest counted.
    """
    if not search_term:
        print("ERROR: search_term is empty. Give the text to look for.")
        return
    root = _directory(dir_path)
    if root is None:
        return
    shown: list[str] = []
    total = 0
    files: set[Path] = set()
    for path in _walk(root):
        lines = _text_lines(path)
        for number, line in enumerate(lines or (), start=1):
            if search_term in line:
                total += 1
                files.add(path)
                if len(shown) < MAX_MATCHES:
                    shown.append(f"{path} (Line {number}): {clip(line.strip())}")
    if not total:
        print(f'No matches found for "{search_term}" in {root}')
        return
    print(f'[Found {total} matches for "{search_term}" in {len(files)} files under {root}]')
    print("\n".join(shown))
    if total > len(shown):
        print(
            f"[{total - len(shown)} more matches not shown: narrow the search term "
            "or search a subdirectory.]"
        )
    print(f'[End of matches for "{search_term}" in {root}]')


def search_file(search_term: str, file_path: str | None = None) -> None:
    """Print the lines of a file (default: the one open in the viewer) containing
    `search_term`, as `Line N: text`; at most 100 are printed, the rest counted.
    """
    if not search_term:
        print("ERROR: search_term is empty. Give the text to look for.")
        return
    if file_path is None:
        if VIEWER.path is None:
            print("ERROR: no file is open. Give file_path or call open_file(path) first.")
            return
        target = VIEWER.path
    else:
        target = resolve(file_path)
    lines = read_lines(target)
    if isinstance(lines, str):
        print(lines)
        return
    hits = [number for number, line in enumerate(lines, start=1) if search_term in line]
    if not hits:
        print(f'No matches found for "{search_term}" in {target}')
        return
    print(f'[Found {len(hits)} matches for "{search_term}" in {target}]')
    print("\n".join(f"Line {n}: {clip(lines[n - 1].strip())}" for n in hits[:MAX_MATCHES]))
    if len(hits) > MAX_MATCHES:
        print(f"[{len(hits) - MAX_MATCHES} more matches not shown: use a longer search term.]")
    print(f'[End of matches for "{search_term}" in {target}]')


def find_file(file_name: str, dir_path: str = "./") -> None:
    """Print the paths of files named `file_name` under `dir_path`; wildcards such as
    `*.py` or `test_*` match names; at most 100 are printed, the rest counted.
    """
    if not file_name or "/" in file_name:
        print("ERROR: give a file name without folders, such as 'setup.py' or '*.toml'.")
        return
    root = _directory(dir_path)
    if root is None:
        return
    pattern = any(char in file_name for char in "*?[")
    found = [
        path
        for path in _walk(root)
        if (fnmatch.fnmatchcase(path.name, file_name) if pattern else path.name == file_name)
    ]
    if not found:
        print(f'No files named "{file_name}" found in {root}')
        return
    print(f'[Found {len(found)} files named "{file_name}" in {root}]')
    print("\n".join(str(path) for path in found[:MAX_MATCHES]))
    if len(found) > MAX_MATCHES:
        print(f"[{len(found) - MAX_MATCHES} more files not shown: search a subdirectory.]")
    print(f'[End of matches for "{file_name}" in {root}]')
