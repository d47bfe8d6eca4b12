"""The checkpoint store's git plumbing: its private config, running git in it, its branch.

The store is a git object database of our own, kept outside the workspace. Every git command
runs with the store's own config put back first (`StoreGit._guard`), the workspace as its work
tree and this key's index; each key (sandbox) has its own index and branch. The commit objects
and the branch file are written here directly (a process fewer than `git commit-tree`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.checkpoint_scope import app_folders
from sandbox.defaults import DEFAULT_IGNORES
from sandbox.store_files import (
    CheckpointError,
    check_store,
    glob_escape,
    glob_unescape,
    make_folder,
    read_file,
    write_file,
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
\tsplitIndex = true
[index]
\tversion = 4
[splitIndex]
\tsharedIndexExpire = 2.weeks.ago
[gc]
\tauto = 0
[advice]
\taddEmbeddedRepo = false
"""
"""The store's whole config, written by workbench and put back before every git command:
nothing else may name a command for git to run (see `CheckpointStore._guard`); what git writes
is readable by its owner only (`sharedRepository = 0600`). Each key's index is split
(`splitIndex`): a step writes the few entries it changed, not the whole index again, beside a
shared index (`sharedindex.<id>`, rewritten once a fifth of the entries changed, removed two
weeks after its last use); new indexes are version 4 (paths prefix-compressed: smaller)."""
ATTRIBUTES = b"* -text -eol -filter -ident -working-tree-encoding\n"
"""The store's own attributes, above any `.gitattributes` in the workspace: files are stored
byte for byte (no line-ending or encoding conversion, no filter)."""
_SPLIT = (
    b"\tsplitIndex = true\n[index]\n\tversion = 4\n"
    b"[splitIndex]\n\tsharedIndexExpire = 2.weeks.ago\n"
)
_EARLIER_CONFIGS = (
    STORE_CONFIG.replace(_SPLIT, b"").replace(b"\tsharedRepository = 0600\n", b""),
    STORE_CONFIG.replace(_SPLIT, b""),
)
"""What stores made by earlier versions hold (before files were kept private, before the split
index): replaced without a warning."""
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
class StoreGit:
    """The git store at `path` holding the checkpoints of `workspace`: running git in it."""

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
            if current and current not in _EARLIER_CONFIGS:
                log.warning("the checkpoint store's config %s was changed: reset", target)
            write_file(self.path, target, STORE_CONFIG)
        attributes = self.path / "info" / "attributes"
        if os.path.isdir(attributes.parent) and read_file(self.path, attributes) != ATTRIBUTES:
            write_file(self.path, attributes, ATTRIBUTES)  # over anything planted there
        for planted in ("objects/info/alternates", "commondir"):
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (self.path / planted).unlink()

    def _env(self) -> dict[str, str]:
        return {
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

    def _git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        self._guard()
        done = subprocess.run(
            ["git", *SAFE_OPTIONS, *args],
            cwd=self.workspace,
            env=self._env(),
            input=input,
            capture_output=True,
            check=False,
        )
        if check and done.returncode != 0:
            self._failed(args, done.returncode, done.stderr)
        return done.stdout

    def _git_both(self, first: Sequence[str], second: Sequence[str]) -> tuple[bytes, bytes]:
        """Run two git commands that read the store at the same time; both outputs."""
        self._guard()
        started = [
            subprocess.Popen(
                ["git", *SAFE_OPTIONS, *args],
                cwd=self.workspace,
                env=self._env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for args in (first, second)
        ]
        outputs = [process.communicate() for process in started]
        for args, process, (_, errors) in zip((first, second), started, outputs, strict=True):
            if process.returncode != 0:
                self._failed(args, process.returncode, errors)
        return outputs[0][0], outputs[1][0]

    def _failed(self, args: Sequence[str], code: int, stderr: bytes) -> None:
        """Raise the error a failed git command means."""
        self._sweep_temporaries()  # a full disk must not stay full of a half-written pack
        why = stderr.decode(errors="replace").strip().splitlines()
        unborn = [m[1] for line in why if (m := _UNBORN.match(line))]
        if unborn:
            raise _UnbornRepositories(unborn)
        command = next((arg for arg in args if not arg.startswith("-") and "=" not in arg), "")
        raise CheckpointError(f"git {command} failed: {why[-1] if why else code}")

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
