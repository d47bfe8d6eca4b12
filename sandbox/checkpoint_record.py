"""Taking a checkpoint: one look at what differs from the last one, and only that staged.

The key's index is the last checkpoint and git's stat cache: an unchanged file costs a `stat`.
One look finds what differs from it (`_listing`): `git diff` (index against the workspace, its
stat checks spread over threads; a file whose stat changed but whose content did not is no
change, and its stat is refreshed) and, at the same time, `git ls-files --others` (new files
and new folders, the ignore patterns applied). Only what they name is staged: changed, new and
deleted files by `git update-index` (which hashes those alone), new folders by `git add`. Then
`git write-tree`, and the commit is written directly. Nothing relies on being told what a step
touched: a process the agent left running, or an edit that kept the file's mtime, is seen by
the same look (git compares ctime, size and inode too, and reads again a file written in the
same instant as its index).
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch

from sandbox.checkpoint_changes import Changes, Checkpoint
from sandbox.checkpoint_git import StoreGit
from sandbox.checkpoint_reads import misread
from sandbox.checkpoint_recent import RecentWrites
from sandbox.checkpoint_scope import is_app_path
from sandbox.store_files import CheckpointError, glob_escape, read_file

log = logging.getLogger(__name__)

_DIFF = (
    "--no-pager",
    "diff",
    "-z",
    "--name-status",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--ignore-submodules=dirty",
)
"""Index against workspace: the tracked files changed (by content, not only by stat) or gone."""
_OTHERS = ("ls-files", "-z", "--others", "--directory", "--exclude-standard")
"""The new files, and each new folder as a whole (`dir/`)."""
_STDIN = ("-z", "--stdin")


@dataclass
class RecordingStore(StoreGit):
    """A checkpoint store that records the workspace (`checkpoint`)."""

    _recent: RecentWrites = field(default_factory=RecentWrites, init=False, repr=False)
    """Staged files a same-second write could hide from git (`checkpoint_recent.py`)."""
    _tree: tuple[str, str] = field(default=("", ""), init=False, repr=False)
    """The latest checkpoint written here and its tree."""

    def checkpoint(self, label: str) -> Checkpoint:
        """Record the workspace as it is now, labelled `label` (e.g. the step number)."""
        started = time.perf_counter()
        first = self._ready()
        parent = self.head()
        if not self._scoped:
            self._leave_app_folder()
        if self._refresh_after and time.time() > self._refresh_after:
            # The whole-tree index was written in the same second as files it holds ("racily
            # clean"): git would read each of them again at every step until it is rewritten.
            self._git("update-index", "-q", "--refresh", check=False)
            self._refresh_after = 0.0
        tags, new_folders = self._look(parent)
        hidden = self._recent.changed(self.workspace, tags)
        for name in hidden:
            tags[name] = "M" if os.path.lexists(self.workspace / name) else "D"
        listed = list(tags)
        new_files, empty_dirs = self._walk(new_folders)
        tags.update((name, "?") for name in new_files)
        deleted = [name for name, tag in tags.items() if tag == "D"]
        empty_dirs = sorted({*empty_dirs, *self._emptied(deleted)})
        skipped, back = self._update_large([name for name, tag in tags.items() if tag != "D"])
        for name in back:  # under the limit again: recorded now, not at the next step
            tags.setdefault(name, "?")
            listed.append(name)
        covered = {name: tag for name, tag in tags.items() if name not in skipped}
        changes = Changes(
            added=tuple(sorted(n for n, t in covered.items() if t == "?")),
            changed=tuple(sorted(n for n, t in covered.items() if t == "M")),
            deleted=tuple(sorted(n for n, t in covered.items() if t == "D")),
        )
        unchanged = changes.empty and skipped == self._skipped
        if parent is not None and unchanged and empty_dirs == self._dirs_of(parent):
            return Checkpoint(parent, changes, tuple(skipped), time.perf_counter() - started)
        if first or not self.index_file.exists():
            # Big files stream into one pack the first time (many loose objects are slow).
            self._add("-c", "core.bigFileThreshold=1", "add", "--all", "--", ".")
            self._refresh_after = time.time() + 1.5
        elif not changes.empty:
            # Only what the listing named: no second walk of the whole workspace.
            staged = [n for n, t in covered.items() if t != "D"]
            taken = self._recent.capture(self.workspace, staged)
            self._stage([n for n in listed if n in covered], covered, new_folders, hidden)
            self._recent.remember(taken)
        if self.reread and (first or not changes.empty):
            self._reread(None if first else {*listed, *(f"{f}/" for f in new_folders)})
        tree = self._git("write-tree").decode().strip()
        if (
            parent is not None
            and (parent, tree) == self._tree
            and skipped == self._skipped
            and empty_dirs == self._dirs_of(parent)
        ):
            # What was read again held what it held (a stat-only change): no new checkpoint.
            return Checkpoint(parent, Changes(), tuple(skipped), time.perf_counter() - started)
        meta = {"label": label, "empty_dirs": empty_dirs, "skipped": skipped}
        commit = self._write_commit(tree, parent, json.dumps(meta))
        self._set_head(commit)
        self._tree = (commit, tree)
        self._dirs, self._skipped = (commit, empty_dirs), skipped
        return Checkpoint(commit, changes, tuple(skipped), time.perf_counter() - started)

    def _look(self, parent: str | None) -> tuple[dict[str, str], list[str]]:
        """`_listing`; an index git cannot read (its shared index gone) is first made again
        from the last checkpoint (the next look compares each file's content once)."""
        try:
            return self._listing()
        except CheckpointError as unreadable:
            if parent is None or not self.index_file.exists():
                raise
            log.warning("checkpoint: index unreadable (%s); made again from %s", unreadable, parent)
            self.index_file.unlink()
            self._git("read-tree", parent)
            return self._listing()

    def _listing(self) -> tuple[dict[str, str], list[str]]:
        """What differs from the index (the last checkpoint): each path tagged "M" (changed),
        "D" (gone) or "?" (new), and the new folders (as a whole)."""
        tracked, others = self._git_both(_DIFF, _OTHERS)
        tags: dict[str, str] = {}
        fields = tracked.decode(errors="surrogateescape").split("\0")
        for status, name in zip(fields[0::2], fields[1::2], strict=False):
            if name:
                tags[name] = "D" if status.startswith("D") else "M"
        new_folders: list[str] = []
        for entry in others.decode(errors="surrogateescape").split("\0"):
            if entry.endswith("/"):
                new_folders.append(entry.rstrip("/"))
            elif entry:
                tags[entry] = "?"
        for name, tag in tags.items():
            # A file whose folder became a symlink is gone from the workspace (git would look
            # through the link, then refuse to add it).
            if tag == "M" and "/" in name and self._through_symlink(name):
                tags[name] = "D"
            # A file that became a folder: `--others --directory` does not name what is in
            # it (the index still holds a file there), so it is a new folder.
            elif tag == "D" and self._is_folder(name):
                new_folders.append(name)
        return tags, new_folders

    def _is_folder(self, name: str) -> bool:
        """True when `name` is a folder now, reached through no symlink."""
        path = self.workspace / name
        return path.is_dir() and not path.is_symlink() and not self._through_symlink(name)

    def _stage(
        self,
        listed: Sequence[str],
        tags: dict[str, str],
        folders: Sequence[str],
        hidden: Sequence[str] = (),
    ) -> None:
        """Stage the listed paths: changed, new and gone files by `git update-index` (only
        they are hashed), new folders by `git add` (which applies the ignore patterns); the
        `hidden` changes (whose stat git sees unchanged) are taken out first, then read."""
        gone = [name for name in listed if tags[name] == "D"]
        # A path beyond a folder that is now a symlink leaves the index by name: git refuses
        # it otherwise ("beyond a symbolic link"), which once turned checkpoints off.
        beyond = [name for name in gone if "/" in name and self._through_symlink(name)]
        out = [*beyond, *(name for name in hidden if name in tags)]
        if out:
            self._git("update-index", "--force-remove", *_STDIN, input=_nul(out))
        paths = [name for name in listed if tags[name] != "D" or name not in beyond]
        if paths:
            try:
                self._git("update-index", "--add", "--remove", *_STDIN, input=_nul(paths))
            except CheckpointError as refused:
                # What update-index will not take (a file that became a repository without a
                # commit, ...): through `git add` as a whole, which knows each such case.
                log.info("checkpoint: staging through git add (%s)", refused)
                if gone:
                    self._git("update-index", "--force-remove", *_STDIN, input=_nul(gone))
                self._add_paths([name for name in listed if tags[name] != "D"])
        if folders:
            self._add_paths([f"{folder}/" for folder in folders])

    def _add_paths(self, paths: Sequence[str]) -> None:
        self._add(
            "--literal-pathspecs",
            "add",
            "--all",
            "--pathspec-from-file=-",
            "--pathspec-file-nul",
            paths=paths,
        )

    def _leave_app_folder(self) -> None:
        """Keep the app's own folder out (a store or index made before that rule holds it)."""
        excludes = (read_file(self.path, self.path / "info" / "exclude") or b"").decode()
        lines = excludes.splitlines()
        if any("/" + glob_escape(f) + "/" not in lines for f in self.app):
            self._write_excludes(self._large_now())
        if self.index_file.exists():
            rm = ("--literal-pathspecs", "rm", "--cached", "-r", "-q", "--ignore-unmatch", "--")
            self._git(*rm, *self.app)
        self._scoped = True

    def _reread(self, wanted: set[str] | None) -> None:
        """Store what each staged file (of `wanted`, None: all) holds, read again without
        following a symlink, where git stored something else; unstage what is no file now."""
        differ, gone = misread(self.workspace, self._git("ls-files", "-s", "-z"), wanted)
        for mode, name, data in differ:
            log.warning("checkpoint: %s changed or was swapped while read; read again", name)
            sha = self._git("hash-object", "-w", "--no-filters", "--stdin", input=data)
            info = f"{mode},{sha.decode().strip()},{name}"
            self._git("update-index", "--add", "--cacheinfo", info)
        if gone:
            self._git("update-index", "--force-remove", *_STDIN, input=_nul(gone))

    def _through_symlink(self, name: str) -> bool:
        """True when a folder on the way to `name` in the workspace is a symlink."""
        parts = name.split("/")[:-1]
        return any(
            os.path.islink(self.workspace.joinpath(*parts[:i])) for i in range(1, len(parts) + 1)
        )

    def _walk(self, folders: Sequence[str]) -> tuple[list[str], list[str]]:
        """The files in new folders, and their empty folders (ignored folders left out)."""
        skip = {pattern.strip("/") for pattern in self.ignore if pattern.endswith("/")}
        names_out = [p for p in self.ignore if "/" not in p]
        files: list[str] = []
        empty: list[str] = []
        for folder in folders:
            for root, dirs, names in os.walk(self.workspace / folder):
                rel = os.path.relpath(root, self.workspace)
                entries = len(dirs) + len(names)
                dirs[:] = [
                    d for d in dirs if d not in skip and not is_app_path(f"{rel}/{d}", self.app)
                ]
                kept = [n for n in names if not any(fnmatch(n, p) for p in names_out)]
                files.extend(f"{rel}/{name}" for name in kept)
                if not entries:
                    empty.append(rel)
        return files, empty

    def _emptied(self, deleted: Sequence[str]) -> set[str]:
        """Folders left empty by deleted files."""
        found: set[str] = set()
        for name in deleted:
            folder = os.path.dirname(name)
            while folder and folder not in found:
                path = self.workspace / folder
                if path.is_symlink() or not path.is_dir() or os.listdir(path):
                    break
                found.add(folder)
                folder = os.path.dirname(folder)
        # Only the deepest: a folder holding an empty folder is not empty.
        return {f for f in found if not any(o.startswith(f + "/") for o in found)}

    def _update_large(self, candidates: Sequence[str]) -> tuple[list[str], list[str]]:
        """Leave files over the size limit out (and take back those that shrank): the files
        left out now, and those taken back (regular files again under the limit)."""
        before = self._large_now()
        large = set(before)
        back: list[str] = []
        for name in {*candidates, *before}:
            try:
                info = (self.workspace / name).lstat()
            except OSError:
                large.discard(name)
                continue
            if info.st_size > self.max_file_bytes and stat.S_ISREG(info.st_mode):
                large.add(name)
            else:
                large.discard(name)
                kind = stat.S_IFMT(info.st_mode)
                if name in before and kind in (stat.S_IFREG, stat.S_IFLNK):
                    back.append(name)
        skipped = sorted(large)
        if skipped != before:
            self._write_excludes(skipped)
            for name in skipped:  # a file that grew past the limit is no longer covered
                self._git("update-index", "--force-remove", "--", name)
        return skipped, sorted(back)


def _nul(names: Sequence[str]) -> bytes:
    return "\0".join(names).encode(errors="surrogateescape")
