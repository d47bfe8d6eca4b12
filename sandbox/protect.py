"""The after-action guard: what the agent left under protected paths is made harmless.

Protected paths that exist when a session starts are read-only bind mounts (local runtime with
bubblewrap, Docker). Those that appear later (the agent runs `git init`, or `mv .git .git2 &&
mkdir .git`, or `cp -r payload/hooks .git/`) cannot be known in advance, so after every action
and when the session ends, `Guard.check` looks at them and:

- **a git config** (`.git/config`, `config.worktree`, `.git/modules/**/config`, the `.git` of
  each submodule the index records, include targets) the agent wrote keeps only the entries
  it had at the start plus inert keys (`git_config.SAFE_KEYS`, an allowlist); one that is not
  a regular file (symlink, FIFO) or that git cannot parse goes to the quarantine;
- **hooks** other than `*.sample` that were not there at the start, a `.git` that became a
  file or symlink (a `gitdir:` redirect), a new `commondir`, and (home-like workspace) a new
  dotfile at the root go to the quarantine, a folder outside the workspace;
- then each such path is **locked** (`lock`, the local runtime's read-only bind into every
  agent process; no lock elsewhere, where the next check repeats the work).

It never follows a symlink the agent planted: folders are opened with `O_NOFOLLOW` and used
through `/proc/self/fd/N`. The host side runs the same check once no agent process is left
(`LocalRuntime`, `DockerRuntime` at close), which no background writer can race.
"""

from __future__ import annotations

import contextlib
import fnmatch
import itertools
import logging
import os
import stat
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.fd_files import exists as _exists
from sandbox.fd_files import open_dir as _open_dir
from sandbox.fd_files import read_regular as _read
from sandbox.fd_files import replace as _replace
from sandbox.git_config import GIT_ENV as _GIT_ENV
from sandbox.git_config import config_entries as _config_entries
from sandbox.git_config import key_safe as _key_safe
from sandbox.git_config import render as _render
from sandbox.profile import INCLUDE_KEYS
from sandbox.quarantine import evict

log = logging.getLogger("sandbox.protect")

_MAX_LINKS = 500


@dataclass(frozen=True)
class Finding:
    """One thing the guard did: the workspace path and what happened to it."""

    path: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


Lock = Callable[[int], None]
"""Makes the path open as an O_PATH fd read-only for the agent (raises OSError if it cannot)."""


@dataclass
class _Baseline:
    stats: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    raw: dict[str, bytes] = field(default_factory=dict)
    """Config files as they were, parsed only when one changes (git costs ~3 ms a run)."""

    def entries(self, rel: str) -> set[tuple[str, str]]:
        data = self.raw.get(rel)
        return set(_config_entries(data) or ()) if data else set()


class Guard:
    """Checks a workspace's protected paths after each action; see the module docstring."""

    def __init__(
        self,
        workspace: Path,
        quarantine: Path,
        home_like: bool = False,
        lock: Lock | None = None,
        log_level: int = logging.WARNING,
        unlock: Callable[[str], None] | None = None,
    ) -> None:
        self.unlock = unlock
        """Removes our lock at a path, so a locked file written through an fd the agent held
        can be rewritten (`ro_mounts.unbind`)."""
        self.log_level = log_level
        """How findings are logged (the app's own checks log below WARNING: no stray stderr)."""
        self.workspace = Path(workspace)
        self.quarantine = Path(quarantine)
        self.home_like = home_like
        self.lock = lock
        self._locked: set[tuple[int, int]] = set()
        self._count = itertools.count(1)
        self._links: tuple[tuple[int, int, int, int], list[str]] | None = None
        self._base = _Baseline()
        self._include_list = includes = self._includes()
        """Config files the repository's config includes at the start (those it names later
        are removed from it)."""
        for rel, info in self._present():
            self._base.stats[rel] = _sig(info)
            if rel.endswith(("config", "config.worktree")) or rel in includes:
                self._base.raw[rel] = self._raw_at(rel) or b""
        for rel in [".git", *(f"{p}/.git" for p in self._gitlinks())]:
            with contextlib.suppress(OSError):
                self._base.stats[rel] = _sig(os.lstat(self.workspace / rel))
        with contextlib.suppress(OSError):
            self._root_names = set(os.listdir(self.workspace))

    def _raw_at(self, rel: str) -> bytes | None:
        """The bytes of the regular file at `rel` (no symlink followed), or None."""
        try:
            root = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            parent, name = _split(rel)
            fd = _open_dir(root, parent)
            try:
                return _read(fd, name)
            finally:
                os.close(fd)
        except OSError:
            return None
        finally:
            os.close(root)

    # ------------------------------------------------------------------ what is protected

    def existing(self) -> list[Path]:
        """The protected files and folders present now (real ones, not symlinks): the paths
        a runtime binds read-only when it starts."""
        found = []
        for rel, info in self._present():
            if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                found.append(self.workspace / rel)
        return found

    def _present(self) -> Iterator[tuple[str, os.stat_result]]:
        names = [".git/config", ".git/config.worktree", ".git/commondir", ".git/hooks"]
        names += [".git/info", ".gitmodules", ".workbench"]
        gitdirs = [*self._module_dirs(), *self._nested_gitdirs()]
        names += [f"{d}/{leaf}" for d in gitdirs for leaf in ("config", "hooks")]
        names += getattr(self, "_include_list", [])
        if self.home_like:
            with contextlib.suppress(OSError):
                names += [n for n in os.listdir(self.workspace) if n.startswith(".")]
        for rel in dict.fromkeys(names):
            with contextlib.suppress(OSError):
                yield rel, os.lstat(self.workspace / rel)

    def _module_dirs(self) -> list[str]:
        """`.git/modules/**` folders holding a git dir (a `HEAD` or a `config`)."""
        top = self.workspace / ".git" / "modules"
        found: list[str] = []
        if not top.is_dir() or top.is_symlink():
            return found
        for folder, dirs, files in os.walk(top):  # os.walk does not follow symlinks
            if "config" in files or "HEAD" in files or "hooks" in dirs:
                found.append(str(Path(folder).relative_to(self.workspace)))
            dirs[:] = [d for d in dirs if d not in ("objects", "refs", "logs", "hooks", "info")]
        return found

    def _includes(self) -> list[str]:
        """Config files inside the workspace that `.git/config` includes."""
        found: list[str] = []
        raw = self._raw_at(".git/config")
        if not raw or b"include" not in raw.lower():
            return found
        for key, value in _config_entries(raw) or ():
            if any(fnmatch.fnmatchcase(key.lower(), k) for k in INCLUDE_KEYS) and value:
                target = Path(os.path.expanduser(value))
                full = target if target.is_absolute() else self.workspace / ".git" / target
                full = Path(os.path.normpath(full))
                if full.is_relative_to(self.workspace) and full != self.workspace:
                    found.append(str(full.relative_to(self.workspace)))
        return found

    def remember(self, gitdirs: list[str]) -> None:
        """Take nested repositories' configs and hooks as they are now (the person's)."""
        for gitdir in gitdirs:
            hooks = self.workspace / gitdir / "hooks"
            listed = os.listdir(hooks) if hooks.is_dir() and not hooks.is_symlink() else []
            names = [f"{gitdir}/{n}" for n in ("config", "hooks", *(f"hooks/{h}" for h in listed))]
            for rel in names:
                with contextlib.suppress(OSError):
                    self._base.stats[rel] = _sig(os.lstat(self.workspace / rel))
            self._base.raw[f"{gitdir}/config"] = self._raw_at(f"{gitdir}/config") or b""

    def check_nested(self, gitdirs: list[str]) -> list[Finding]:
        """Neutralise nested repositories' configs and hooks like the top one's (a person who
        enters that folder runs git there); call when no agent process runs."""
        root = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            return [found for gitdir in gitdirs for found in self._check_gitdir(root, gitdir)]
        finally:
            os.close(root)

    # ------------------------------------------------------------------ the check

    def check(self) -> list[Finding]:
        """Neutralise and lock what changed under protected paths; what was done, by path."""
        found: list[Finding] = []
        root = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        steps: list[tuple[str, Callable[[], list[Finding]]]] = [
            (".git", lambda: self._check_git(root))
        ]
        steps += [(n, lambda n=n: self._lock_new(root, n)) for n in (".gitmodules", ".workbench")]  # type: ignore[misc]
        if self.home_like:
            steps.append(("dotfiles", lambda: self._check_home(root)))
        try:
            for what, step in steps:
                try:  # one failure (a file the agent swapped meanwhile) must not skip the rest
                    found += step()
                except OSError as exc:
                    found.append(Finding(what, f"could not be checked: {exc.strerror or exc}"))
        finally:
            os.close(root)
        for finding in found:
            log.log(self.log_level, "protected path: %s", finding)
        return found

    def _check_git(self, root: int) -> list[Finding]:
        try:
            info = os.lstat(".git", dir_fd=root)
        except OSError:
            return []
        if not stat.S_ISDIR(info.st_mode):
            if self._base.stats.get(".git") == _sig(info):
                return []  # a worktree's or submodule's gitfile the person made
            return [self._evict(root, ".git", ".git", "a .git that is not a folder redirects git")]
        found: list[Finding] = []
        for gitdir in [".git", *self._module_dirs()]:
            found += self._check_gitdir(root, gitdir)
        for path in self._gitlinks():
            found += self._check_submodule(root, path)
        for rel in self._include_list:
            found += self._check_config(root, rel)
        return found

    def _gitlinks(self) -> list[str]:
        """Paths the index records as submodules (gitlinks): the person's `git status` runs a
        git in each, which reads that folder's `.git`. Asked of git, once per index change."""
        index = self.workspace / ".git" / "index"
        try:
            sig = _sig(os.lstat(index))
        except OSError:
            return []
        if self._links is not None and self._links[0] == sig:
            return self._links[1]
        argv = ["git", "--git-dir", str(self.workspace / ".git"), "--work-tree", "."]
        argv += ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
        argv += ["ls-files", "--stage", "-z"]
        links: list[str] = []
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=20, check=False, cwd=self.workspace,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_GIT_ENV},
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            done = None
        for item in done.stdout.split(b"\0") if done is not None else ():
            meta, _, path = item.partition(b"\t")
            if meta.startswith(b"160000 ") and path:
                links.append(path.decode("utf-8", "surrogateescape"))
        self._links = (sig, links[:_MAX_LINKS])
        return self._links[1]

    def _nested_gitdirs(self) -> list[str]:
        """The `.git` folders of the index's submodules that are folders, not gitfiles."""
        found = []
        for path in self._gitlinks():
            gitdir = self.workspace / path / ".git"
            if gitdir.is_dir() and os.path.realpath(gitdir) == str(gitdir):
                found.append(f"{path}/.git")
        return found

    def _check_submodule(self, root: int, path: str) -> list[Finding]:
        """A submodule's `.git`: a folder is checked like the top one; a gitfile or symlink
        the agent made is removed (it would send git to a config of the agent's choosing)."""
        rel = f"{path}/.git"
        try:
            fd = _open_dir(root, path)
        except OSError:
            return []
        try:
            info = os.lstat(".git", dir_fd=fd)
        except OSError:
            os.close(fd)
            return []
        try:
            if stat.S_ISDIR(info.st_mode):
                return self._check_gitdir(root, rel)
            if self._base.stats.get(rel) == _sig(info) or self._to_modules(fd, path):
                return []
            return [self._evict(fd, ".git", rel, "a submodule's .git that redirects git")]
        finally:
            os.close(fd)

    def _to_modules(self, fd: int, path: str) -> bool:
        """Whether the gitfile `path/.git` (open folder `fd`) sends git to a real folder
        under `.git/modules/`, as `git submodule` makes them (those folders are checked)."""
        try:
            text = _read(fd, ".git", limit=4096).decode("utf-8", "replace").strip()
        except OSError:
            return False
        if not text.startswith("gitdir:") or "\n" in text:
            return False
        target = os.path.normpath(
            os.path.join(self.workspace, path, text.removeprefix("gitdir:").strip())
        )  # a symlink on the way could lead anywhere: none is allowed
        modules = self.workspace / ".git" / "modules"
        return Path(target).is_relative_to(modules) and os.path.realpath(target) == target

    def _check_gitdir(self, root: int, gitdir: str) -> list[Finding]:
        try:
            fd = _open_dir(root, gitdir)
        except OSError:
            return []
        found: list[Finding] = []
        try:
            for leaf in ("config", "config.worktree"):
                found += self._check_config(root, f"{gitdir}/{leaf}")
            new_commondir = self._base.stats.get(".git/commondir") is None
            if gitdir == ".git" and new_commondir and _exists(fd, "commondir"):
                found.append(self._evict(fd, "commondir", ".git/commondir", "it redirects git"))
            found += self._check_hooks(root, fd, gitdir)
            if gitdir == ".git":
                found += self._lock_new(root, ".git/info")
        finally:
            os.close(fd)
        return found

    def _check_config(self, root: int, rel: str) -> list[Finding]:
        parent, name = _split(rel)
        try:
            fd = _open_dir(root, parent)
        except OSError:
            return []
        try:
            try:
                info = os.lstat(name, dir_fd=fd)
            except OSError:
                return []
            if self._base.stats.get(rel) == _sig(info):
                return []
            if not stat.S_ISREG(info.st_mode):
                return [self._evict(fd, name, rel, "not a regular file")]
            found: list[Finding] = []
            for _ in range(3):  # a writer racing the lock (an fd it holds) is caught here
                if not self._unlock(fd, name):
                    break
                entries = _config_entries(_read(fd, name))
                if entries is None:
                    return [*found, self._evict(fd, name, rel, "git cannot read it")]
                keep_old = self._base.entries(rel)
                dropped = [k for k, v in entries if (k, v) not in keep_old and not _key_safe(k)]
                if dropped:
                    kept = [(k, v) for k, v in entries if (k, v) in keep_old or _key_safe(k)]
                    _replace(fd, name, _render(kept).encode())
                    keys = ", ".join(sorted(set(dropped)))
                    found.append(
                        Finding(rel, f"removed {keys} (only settings that run nothing are kept)")
                    )
                if os.lstat(name, dir_fd=fd).st_nlink > 1:  # a hard link writes past the lock
                    _replace(fd, name, _read(fd, name))
                if self._lock(fd, name):
                    found.append(Finding(rel, "read-only from now on"))
                data = _read(fd, name)
                after = _config_entries(data) or [("", "")]
                if all((k, v) in keep_old or _key_safe(k) for k, v in after):
                    self._base.stats[rel] = _sig(os.lstat(name, dir_fd=fd))
                    self._base.raw[rel] = data
                    return found
            return [*found, Finding(rel, "changed again while it was being locked; not locked")]
        finally:
            os.close(fd)

    def _check_hooks(self, root: int, gitfd: int, gitdir: str) -> list[Finding]:
        rel = f"{gitdir}/hooks"
        try:
            info = os.lstat("hooks", dir_fd=gitfd)
        except OSError:
            return []
        if not stat.S_ISDIR(info.st_mode):
            return [self._evict(gitfd, "hooks", rel, "not a folder")]
        found: list[Finding] = []
        fd = _open_dir(gitfd, "hooks")
        try:
            for entry in sorted(os.listdir(fd)):
                entry_rel = f"{rel}/{entry}"
                entry_info = os.lstat(entry, dir_fd=fd)
                if entry.endswith(".sample") and stat.S_ISREG(entry_info.st_mode):
                    continue
                if self._base.stats.get(entry_rel) == _sig(entry_info):
                    continue
                found.append(self._evict(fd, entry, entry_rel, "git would run it"))
            if self._base.stats.get(rel) != _sig(info) and self._lock(gitfd, "hooks"):
                found.append(Finding(rel, "read-only from now on"))
        finally:
            os.close(fd)
        return found

    def _lock_new(self, root: int, rel: str) -> list[Finding]:
        parent, name = _split(rel)
        try:
            fd = _open_dir(root, parent)
        except OSError:
            return []
        try:
            info = os.lstat(name, dir_fd=fd)
            if self._base.stats.get(rel) == _sig(info) and rel in self._base.stats:
                return []
            return [Finding(rel, "read-only from now on")] if self._lock(fd, name) else []
        except OSError:
            return []
        finally:
            os.close(fd)

    def _check_home(self, root: int) -> list[Finding]:
        found = []
        for name in sorted(os.listdir(root)):
            own = name in self._root_names or name in (".git", ".gitmodules", ".workbench")
            if name.startswith(".") and not own:
                found.append(self._evict(root, name, name, "a dotfile in a home folder"))
        return found

    # ------------------------------------------------------------------ actions

    def _lock(self, dir_fd: int, name: str) -> bool:
        """Lock `name` (a real file or folder) once; True when it was locked now."""
        if self.lock is None:
            return False
        try:
            fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return False
        try:
            info = os.fstat(fd)
            if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                return False
            if _key(info) in self._locked:
                return False
            self.lock(fd)
            self._locked.add(_key(info))
            return True
        except OSError as exc:
            log.warning("could not lock %s: %s", name, exc)
            return False
        finally:
            os.close(fd)

    def _unlock(self, dir_fd: int, name: str) -> bool:
        """Undo our own lock of `name` (to rewrite it); False when it cannot be undone."""
        try:
            key = _key(os.stat(name, dir_fd=dir_fd, follow_symlinks=False))
        except OSError:
            return False
        if key not in self._locked:
            return True
        if self.unlock is None:
            return False
        try:
            self.unlock(f"/proc/self/fd/{dir_fd}/{name}")
        except OSError as exc:
            log.warning("could not unlock %s: %s", name, exc)
            return False
        self._locked.discard(key)
        return True

    def _evict(self, dir_fd: int, name: str, rel: str, why: str) -> Finding:
        """Move `name` (in the folder `dir_fd`) into the quarantine, whatever it is."""
        target = self.quarantine / f"{time.strftime('%H%M%S')}-{next(self._count)}" / rel
        try:
            return Finding(rel, f"{why}: {evict(dir_fd, name, target)}")
        except OSError as exc:
            return Finding(rel, f"{why}, and it could not be removed: {exc.strerror or exc}")


# ---------------------------------------------------------------------- helpers


def _sig(info: os.stat_result) -> tuple[int, int, int, int]:
    return (info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns)


def _key(info: os.stat_result) -> tuple[int, int]:
    return (info.st_dev, info.st_ino)


def _split(rel: str) -> tuple[str, str]:
    parent, _, name = rel.rpartition("/")
    return parent or ".", name
