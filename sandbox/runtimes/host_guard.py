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

from sandbox.protect import Guard
from sandbox.setid import clear_new_setid, setid_files


class HostGuard:
    """A `Guard` run from the app's process, with what it did."""

    def __init__(self, workspace: Path, home_like: bool, name: str) -> None:
        self.quarantine = Path(tempfile.gettempdir()) / f"workbench-quarantine-{name}"
        """Where what the agent left under protected paths is kept (made only when needed)."""
        self.guard = Guard(workspace, self.quarantine, home_like=home_like, log_level=logging.INFO)
        self.findings: list[str] = []
        """What the checks did, for the person."""
        self.setid = setid_files(workspace)
        """The workspace's set-id files at the start: the person's, kept as they are."""

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
        for rel in clear_new_setid(self.guard.workspace, self.setid):
            self.findings.append(f"{rel}: set-user-id/set-group-id bits the agent set were cleared")
            logging.getLogger(__name__).info("cleared the set-id bits of %s", rel)
