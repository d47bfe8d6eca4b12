"""The app's own check of a workspace's protected paths, shared by the local and Docker runtimes.

The runtime builds a `HostGuard` when it is made (what exists then is the baseline and becomes
read-only mounts), and runs it before each (re)start of the server and when it closes: moments
when no agent process is left, so nothing the agent leaves running can race it. Findings are
kept in `findings` (and logged at INFO: the app's stderr is the TUI's screen).
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from sandbox.fd_files import read_regular
from sandbox.protect import Guard
from sandbox.setid import clear_new_setid
from sandbox.workspace_scan import Scan, scan


class HostGuard:
    """A `Guard` run from the app's process, with what it did."""

    def __init__(self, workspace: Path, home_like: bool, name: str) -> None:
        self.quarantine = Path(tempfile.gettempdir()) / f"workbench-quarantine-{name}"
        """Where what the agent left under protected paths is kept (made only when needed)."""
        self.guard = Guard(workspace, self.quarantine, home_like=home_like, log_level=logging.INFO)
        self.findings: list[str] = []
        """What the checks did, for the person."""
        self.start: Scan = scan(workspace)
        """The workspace's set-id files and nested repositories at the start: the person's."""
        self.guard.remember(self.start.gitdirs)
        self._walked = True
        """The last walk is current (no agent process has run since): the next check skips it."""

    def existing(self) -> list[Path]:
        """The protected files and folders that exist now (to bind read-only)."""
        return self.guard.existing()

    def pinned(self) -> list[Path]:
        """Folders to bind over themselves, writable, so they cannot be renamed or removed:
        the person's `.git` (a real folder, not reached through a symlink)."""
        git = self.guard.workspace / ".git"
        return [git] if git.is_dir() and os.path.realpath(git) == str(git) else []

    def check(self) -> None:
        """Neutralise what changed under the protected paths (no agent process may run)."""
        try:
            self.findings += [str(found) for found in self.guard.check()]
        except OSError as exc:
            self.findings.append(f"could not check the protected paths: {exc}")
        if self._walked:  # the first start: nothing ran since the walk above (~1 s per 50k files)
            self._walked = False
            return
        now = scan(self.guard.workspace)
        for rel in clear_new_setid(self.guard.workspace, now.setid, self.start.setid):
            self.findings.append(f"{rel}: set-user-id/set-group-id bits the agent set were cleared")
        for rel in clear_new_setid(self.guard.workspace, now.shared, self.start.shared, 0o002):
            self.findings.append(f"{rel}: write access for everyone the agent gave was removed")
        try:
            found = self.guard.check_nested([*now.gitdirs, *self._gitfile_targets(now)])
            self.findings += [str(finding) for finding in found]
        except OSError as exc:
            self.findings.append(f"could not check the nested repositories: {exc}")

    def _gitfile_targets(self, now: Scan) -> list[str]:
        """The git dirs inside the workspace that nested `.git` files or symlinks made (or
        changed) since the start send git to."""
        targets = []
        for rel, sig in now.gitfiles.items():
            if self.start.gitfiles.get(rel) == sig:
                continue
            path = self.guard.workspace / rel
            try:
                if path.is_symlink():
                    target = Path(os.path.realpath(path))
                else:  # a FIFO or a device named .git must not block the app
                    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                    try:
                        raw = read_regular(folder, ".git", limit=4096)
                    finally:
                        os.close(folder)
                    text = raw.decode("utf-8", "replace").strip()
                    where = text.removeprefix("gitdir:").strip()
                    target = Path(os.path.realpath(path.parent / where))
            except OSError:
                continue
            if target.is_relative_to(self.guard.workspace) and target != self.guard.workspace:
                targets.append(str(target.relative_to(self.guard.workspace)))
        return targets
