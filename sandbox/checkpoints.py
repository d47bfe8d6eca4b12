"""Checkpoints of the workspace: a content-addressed store, so every step can be undone.

The store is a git object database of our own, kept outside the workspace (never the
person's `.git`, which is not checkpointed: git never records a path named `.git`). A
checkpoint stages the workspace into the store's index and writes a tree: unchanged files cost
a `stat` each (git's index cache), a changed file costs its new blob, and an unchanged step
makes no new commit. Each commit's message holds what git itself does not keep: the empty
folders, and the files left out (over the size limit). Files matching the ignore patterns
(`node_modules/`, `.venv/`, caches; `DEFAULT_IGNORES`) and files over `max_file_bytes` are not
covered: a restore neither changes nor deletes them, so they are never lost.

`restore(commit)` makes the workspace what it was at `commit`: contents, deletions, symlinks
and executable bits, and empty folders; it works from the checkpoint of the present state
that the caller takes first (`checkpoint`), so that checkpoint undoes the restore. The
sandbox server runs checkpoints (the `checkpoint` and `restore` actions); the app reads the
same store for listings and diffs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from sandbox.checkpoint_changes import Changes, Checkpoint, under
from sandbox.checkpoint_reads import misread
from sandbox.checkpoint_scope import agent_paths, agent_tree, app_folders, is_app_path
from sandbox.store_files import (
    CheckpointError,
    check_store,
    glob_escape,
    glob_unescape,
    make_folder,
    read_file,
    write_file,
)

__all__ = [
    "ATTRIBUTES",
    "STORE_CONFIG",
    "Changes",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
]

DEFAULT_IGNORES = (
    "node_modules/",
    ".venv/",
    "venv/",
    "__pycache__/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".tox/",
    ".cache/",
    "*.pyc",
)
DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
log = logging.getLogger(__name__)

STORE_CONFIG = b"""[core]
\trepositoryformatversion = 0
\tbare = false
\tautocrlf = false
\tsymlinks = true
\tfilemode = true
\tuntrackedCache = true
\tlooseCompression = 1
\tfsmonitor = false
\thooksPath = /dev/null
\tsharedRepository = 0600
[gc]
\tauto = 0
[advice]
\taddEmbeddedRepo = false
"""
"""The store's whole config, written by workbench and put back before every git command:
nothing else may name a command for git to run (see `CheckpointStore._guard`); what git writes
is readable by its owner only (`sharedRepository = 0600`)."""
ATTRIBUTES = b"* -text -eol -filter -ident -working-tree-encoding\n"
"""The store's own attributes, above any `.gitattributes` in the workspace: files are stored
byte for byte (no line-ending or encoding conversion, no filter)."""
_EARLIER_CONFIG = STORE_CONFIG.replace(b"\tsharedRepository = 0600\n", b"")
"""What stores made before files were kept private hold: replaced without a warning."""
SAFE_OPTIONS = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")
"""Given to every git command as well, should the config change while it runs."""

_MANAGED = "# workbench: files over the size limit (rewritten at each checkpoint)\n"
_UNBORN = re.compile(r"error: '(.+?)/?' does not have a commit checked out")


class _UnbornRepositories(CheckpointError):
    """git refused to add folders that are repositories without a commit."""

    def __init__(self, folders: list[str]) -> None:
        super().__init__(f"repositories without a commit: {', '.join(folders)}")
        self.folders = folders


@dataclass
class CheckpointStore:
    """The checkpoints of one workspace, in the git store at `path`."""

    path: Path
    workspace: Path
    ignore: Sequence[str] = DEFAULT_IGNORES
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    key: str = "main"
    """Whose checkpoints: each sandbox has its own index and branch in a shared store."""
    reread: bool = False
    """Read each staged file again without following symlinks (`checkpoint_reads.py`): set
    where the checkpoint runs outside the agent's sandbox, on the host."""
    _head: str | None = field(default=None, init=False, repr=False)
    _dirs: tuple[str, list[str]] = field(default=("", []), init=False, repr=False)
    _skipped: list[str] = field(default_factory=list, init=False, repr=False)
    _refresh_after: float = field(default=0.0, init=False, repr=False)
    _checked: bool = field(default=False, init=False, repr=False)
    _scoped: bool = field(default=False, init=False, repr=False)
    """The app's folders are known to be out of this key's index (`checkpoint_scope.py`)."""
    _app_folders: tuple[str, ...] | None = field(default=None, init=False, repr=False)

    @property
    def app(self) -> tuple[str, ...]:
        """The app's own folders in the workspace: in no checkpoint, never restored."""
        if self._app_folders is None:
            self._app_folders = app_folders(self.workspace, self.path)
        return self._app_folders

    _unborn: set[str] = field(default_factory=set, init=False, repr=False)
    """Folders left out: repositories without a commit, which `git add` refuses."""

    # ------------------------------------------------------------------ git

    @property
    def index_file(self) -> Path:
        """This key's index: the stat cache that makes an unchanged file cost a `stat`."""
        return self.path / f"index-{self.key}"

    @property
    def ref(self) -> Path:
        """This key's branch file: its latest checkpoint."""
        return self.path / "refs" / "heads" / self.key

    def _guard(self) -> None:
        """Put the store's own settings back if anything changed them: its config names
        commands git runs (`core.fsmonitor`, filter and diff drivers, `include.path`), and
        git runs here in the sandbox server and on the host (`workbench rewind`). Once per
        store object, the whole store is checked first: no symlink, private (`check_store`)."""
        if not self._checked:
            check_store(self.path)
            self._checked = True
        target = self.path / "config"
        current = read_file(self.path, target) or b""
        if current != STORE_CONFIG:
            if current and current != _EARLIER_CONFIG:
                log.warning("the checkpoint store's config %s was changed: reset", target)
            write_file(self.path, target, STORE_CONFIG)
        attributes = self.path / "info" / "attributes"
        if os.path.isdir(attributes.parent) and read_file(self.path, attributes) != ATTRIBUTES:
            write_file(self.path, attributes, ATTRIBUTES)  # over anything planted there
        for planted in ("objects/info/alternates", "commondir"):
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (self.path / planted).unlink()

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        self._guard()
        env = {
            **os.environ,
            "GIT_DIR": str(self.path),
            "GIT_WORK_TREE": str(self.workspace),
            "GIT_INDEX_FILE": str(self.index_file),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_AUTHOR_NAME": "workbench",
            "GIT_AUTHOR_EMAIL": "checkpoints@workbench",
            "GIT_COMMITTER_NAME": "workbench",
            "GIT_COMMITTER_EMAIL": "checkpoints@workbench",
            "GIT_TERMINAL_PROMPT": "0",
        }
        done = subprocess.run(
            ["git", *SAFE_OPTIONS, *args],
            cwd=self.workspace,
            env=env,
            input=input,
            capture_output=True,
            check=False,
        )
        if check and done.returncode != 0:
            self._sweep_temporaries()  # a full disk must not stay full of a half-written pack
            why = done.stderr.decode(errors="replace").strip().splitlines()
            unborn = [m[1] for line in why if (m := _UNBORN.match(line))]
            if unborn:
                raise _UnbornRepositories(unborn)
            command = next((arg for arg in args if not arg.startswith("-") and "=" not in arg), "")
            raise CheckpointError(f"git {command} failed: {why[-1] if why else done.returncode}")
        return done.stdout

    def _add(self, *args: str, paths: Sequence[str] | None = None) -> None:
        """`git add ...` (of `paths`, NUL-separated on stdin, when given), leaving out (as
        ignored) each folder that is a repository without a commit: git refuses to add one,
        which turned checkpoints off (`git init sub`)."""
        for attempt in range(21):
            left = [p for p in paths or () if not self._in_unborn(p)]
            if paths is not None and not left:
                return
            data = "\0".join(left).encode(errors="surrogateescape") if paths is not None else None
            try:
                self._git(*args, input=data)
                return
            except _UnbornRepositories as unborn:
                if attempt == 20:
                    raise
                self._unborn.update(unborn.folders)
                self._write_excludes(self._large_now())

    def _in_unborn(self, path: str) -> bool:
        return any(path.rstrip("/") == f or path.startswith(f + "/") for f in self._unborn)

    def _sweep_temporaries(self) -> None:
        """Remove what a failed git command left half-written in the store."""
        for pattern in ("objects/pack/tmp_*", "objects/*/tmp_obj_*", "objects/*/.*.tmp"):
            for leftover in self.path.glob(pattern):
                leftover.unlink(missing_ok=True)

    def _ready(self) -> bool:
        """Create the store if it does not exist; True when it was just created."""
        if os.path.lexists(self.path):
            self._guard()  # checks the store before anything reads it
            if (self.path / "HEAD").is_file():
                return False
        if shutil.which("git") is None:
            raise CheckpointError("checkpoints need git, and it is not installed in the sandbox")
        if not self.workspace.is_dir():
            raise CheckpointError(f"the workspace {self.workspace} does not exist")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            self.path.mkdir(mode=0o700)
        made = subprocess.run(
            ["git", "init", "-q", "--bare", "--template=", str(self.path)],
            capture_output=True,
            check=False,
        )
        if made.returncode != 0:
            why = made.stderr.decode(errors="replace").strip() or f"exit {made.returncode}"
            raise CheckpointError(f"cannot create the checkpoint store {self.path}: {why}")
        self._checked = False  # git made its folders with the umask's modes: made private
        write_file(self.path, self.path / "config", STORE_CONFIG)  # git's own, not a change
        self._guard()
        make_folder(self.path, self.path / "info")
        self._write_excludes([])
        return True

    def _write_excludes(self, large: Sequence[str]) -> None:
        unborn = ("/" + glob_escape(p) + "/" for p in sorted(self._unborn))
        lines = [
            *self.ignore,
            *("/" + glob_escape(f) + "/" for f in self.app),
            *unborn,
            _MANAGED,
            *("/" + glob_escape(p) for p in large),
        ]
        text = "\n".join(lines) + "\n"
        write_file(self.path, self.path / "info" / "exclude", text.encode("utf-8"))

    # ------------------------------------------------------------------ checkpoints

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
        # One look at what differs from the index (the last checkpoint): changed and deleted
        # files, new files in known folders, and new folders as a whole.
        listing = self._git(
            "ls-files",
            "-z",
            "-t",
            "--others",
            "--modified",
            "--deleted",
            "--directory",
            "--exclude-standard",
        )
        tags: dict[str, set[str]] = {}
        new_folders: list[str] = []
        for entry in listing.decode(errors="surrogateescape").split("\0"):
            if len(entry) > 2 and entry.startswith("? ") and entry.endswith("/"):
                new_folders.append(entry[2:].rstrip("/"))
            elif len(entry) > 2:
                tags.setdefault(entry[2:], set()).add(entry[0])
        for name, tag in tags.items():
            # A file whose folder became a symlink is gone from the workspace (git looks
            # through the link and would call it changed, then refuse to add it).
            if "R" not in tag and "/" in name and self._through_symlink(name):
                tags[name] = {"R"}
        listed = list(tags)
        new_files, empty_dirs = self._walk(new_folders)
        tags.update((name, {"?"}) for name in new_files)
        deleted = [name for name, tag in tags.items() if "R" in tag]
        empty_dirs = sorted({*empty_dirs, *self._emptied(deleted)})
        skipped = self._update_large([name for name, tag in tags.items() if "R" not in tag])
        covered = {name: tag for name, tag in tags.items() if name not in skipped}
        changes = Changes(
            added=tuple(sorted(n for n, t in covered.items() if "?" in t)),
            changed=tuple(sorted(n for n, t in covered.items() if t == {"C"})),
            deleted=tuple(sorted(n for n, t in covered.items() if "R" in t)),
        )
        unchanged = changes.empty and skipped == self._skipped
        if parent is not None and unchanged and empty_dirs == self._dirs_of(parent):
            return Checkpoint(parent, changes, tuple(skipped), time.perf_counter() - started)
        if first or not self.index_file.exists():
            # Big files stream into one pack the first time (many loose objects are slow).
            self._add("-c", "core.bigFileThreshold=1", "add", "--all", "--", ".")
            self._refresh_after = time.time() + 1.5
        elif not changes.empty:
            # Only what the listing named: no second walk of the whole workspace. What went
            # away leaves the index by name: `git add` refuses a path whose folder is now a
            # symlink ("beyond a symbolic link"), which turned checkpoints off.
            gone = [n for n in listed if n in covered and "R" in covered[n]]
            if gone:
                self._git(
                    "update-index",
                    "--force-remove",
                    "-z",
                    "--stdin",
                    input="\0".join(gone).encode(errors="surrogateescape"),
                )
            paths = [n for n in listed if n in covered and "R" not in covered[n]]
            paths += [f"{f}/" for f in new_folders]
            if paths:
                self._add(
                    "--literal-pathspecs",
                    "add",
                    "--all",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                    paths=paths,
                )
        if self.reread and (first or not changes.empty):
            self._reread(None if first else {*listed, *(f"{f}/" for f in new_folders)})
        tree = self._git("write-tree").decode().strip()
        meta = {"label": label, "empty_dirs": empty_dirs, "skipped": skipped}
        commit = self._write_commit(tree, parent, json.dumps(meta))
        self._set_head(commit)
        self._dirs, self._skipped = (commit, empty_dirs), skipped
        return Checkpoint(commit, changes, tuple(skipped), time.perf_counter() - started)

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
            names = "\0".join(gone).encode(errors="surrogateescape")
            self._git("update-index", "--force-remove", "-z", "--stdin", input=names)

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

    def _write_commit(self, tree: str, parent: str | None, message: str) -> str:
        """Write the commit object directly (a process fewer than `git commit-tree`)."""
        stamp = f"workbench <checkpoints@workbench> {int(time.time())} +0000"
        lines = [f"tree {tree}", *([f"parent {parent}"] if parent else [])]
        lines += [f"author {stamp}", f"committer {stamp}", "", message, ""]
        body = "\n".join(lines).encode()
        data = b"commit %d\0" % len(body) + body
        sha = hashlib.sha1(data, usedforsecurity=False).hexdigest()
        target = self.path / "objects" / sha[:2] / sha[2:]
        if not os.path.lexists(target):
            make_folder(self.path, target.parent)
            write_file(self.path, target, zlib.compress(data, 1))
        return sha

    def _set_head(self, commit: str) -> None:
        make_folder(self.path, self.ref.parent)
        write_file(self.path, self.ref, f"{commit}\n".encode("ascii"))
        self._head = commit

    def head(self) -> str | None:
        """The latest checkpoint's commit, or None before the first."""
        if self._head is None and os.path.lexists(self.path):
            self._guard()
            found = read_file(self.path, self.ref) or b""
            self._head = found.decode("ascii", "replace").strip() or None
        return self._head

    def forget(self) -> None:
        """Drop this key's index and branch (the commits stay, named by the session log)."""
        self.index_file.unlink(missing_ok=True)
        self.ref.unlink(missing_ok=True)
        self._head = None

    def _dirs_of(self, commit: str) -> list[str]:
        """The empty folders `commit` records (remembered for the latest)."""
        if self._dirs[0] != commit:
            found = self.metadata(commit).get("empty_dirs", [])
            self._dirs = (commit, list(found))
        return self._dirs[1]

    def metadata(self, commit: str) -> dict[str, list[str] | str]:
        """What a checkpoint's message records: its label, empty folders, skipped files."""
        body = self._git("log", "-1", "--format=%B", commit).decode()
        try:
            data = json.loads(body)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}

    def _large_now(self) -> list[str]:
        """The files over the size limit the store's excludes leave out now."""
        excludes = (read_file(self.path, self.path / "info" / "exclude") or b"").decode()
        section = excludes.split(_MANAGED, 1)[1] if _MANAGED in excludes else ""
        return sorted(glob_unescape(line[1:]) for line in section.splitlines() if line)

    def _update_large(self, candidates: Sequence[str]) -> list[str]:
        """Leave files over the size limit out (and take back those that shrank)."""
        before = self._large_now()
        large = set(before)
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
        skipped = sorted(large)
        if skipped != before:
            self._write_excludes(skipped)
            for name in skipped:  # a file that grew past the limit is no longer covered
                self._git("update-index", "--force-remove", "--", name)
        return skipped

    # ------------------------------------------------------------------ reading

    def changes(self, old: str | None, new: str) -> Changes:
        """What differs from checkpoint `old` (None: an empty workspace) to `new`."""
        if old is None:
            names = self._git("ls-tree", "-r", "-z", "--name-only", new).decode(
                errors="surrogateescape"
            )
            return Changes(added=agent_paths(sorted(n for n in names.split("\0") if n), self.app))
        out = self._git("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new)
        fields = out.decode(errors="surrogateescape").split("\0")
        added: list[str] = []
        changed: list[str] = []
        deleted: list[str] = []
        for status, name in zip(fields[0::2], fields[1::2], strict=False):
            {"A": added, "D": deleted}.get(status[:1], changed).append(name)
        app = self.app
        return Changes(
            agent_paths(added, app), agent_paths(changed, app), agent_paths(deleted, app)
        )

    def diff(self, old: str | None, new: str) -> str:
        """A unified diff from `old` (None: empty) to `new`; binary files are named."""
        base = old or self._git("hash-object", "-t", "tree", "/dev/null").decode().strip()
        scope = ("--", ".", *(f":(top,exclude,literal){f}" for f in self.app))
        return self._git("diff", "--no-color", "--no-renames", base, new, *scope).decode(
            errors="replace"
        )

    # ------------------------------------------------------------------ restoring

    def restore(self, commit: str) -> Changes:
        """Make the workspace what it was at `commit`; call `checkpoint` first (it undoes this).

        Files the store does not cover (ignored, over the size limit) are left as they are."""
        current = self.head()
        if current is None:
            raise CheckpointError("no checkpoint of the present state: take one first")
        self._git("cat-file", "-e", f"{commit}^{{commit}}")
        changes = self.changes(current, commit)
        # A path the restore would create that holds something now is a file the store does
        # not cover (ignored, or over the size limit): never overwrite it.
        # (A path under what the restore replaces, e.g. a symlink where a folder was, is not
        # there: `lexists` would look through the link, outside the workspace.)
        # Nor is a folder whose files go away, where a file or symlink comes back.
        replaced = {*changes.changed, *changes.deleted}
        folders = {"/".join(p.split("/")[:i]) for p in replaced for i in range(1, p.count("/") + 1)}
        uncovered = [
            name
            for name in changes.added
            if not under(name, replaced)
            and name not in folders
            and os.path.lexists(self.workspace / name)
        ]
        if uncovered:
            listed = ", ".join(uncovered[:5]) + (" ..." if len(uncovered) > 5 else "")
            raise CheckpointError(
                f"the restore would overwrite files that checkpoints do not cover: {listed}; "
                "nothing was changed. Move them away first."
            )
        # Two-tree form: updates and deletes what differs, refuses to overwrite a file the
        # store does not cover.
        # Both sides without the app's folder: a restore never changes or deletes it.
        self._git(
            "read-tree", "-m", "-u", agent_tree(self._git, current), agent_tree(self._git, commit)
        )
        wanted = list(agent_paths(self.metadata(commit).get("empty_dirs", []), self.app))
        for name in agent_paths(self._dirs_of(current), self.app):
            folder = self.workspace / name
            while (
                folder != self.workspace and str(folder.relative_to(self.workspace)) not in wanted
            ):
                if not folder.is_dir() or folder.is_symlink() or any(folder.iterdir()):
                    break
                folder.rmdir()
                folder = folder.parent
        for name in wanted:
            (self.workspace / name).mkdir(parents=True, exist_ok=True)
        self._set_head(commit)
        self._dirs = (commit, wanted)
        return changes
