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

Its parts: `checkpoint_git.py` (the store's config and running git in it, its branch and
commits), `checkpoint_record.py` (taking a checkpoint), this module (what differs between two,
restoring one), and `checkpoint_changes.py`, `checkpoint_scope.py`, `checkpoint_reads.py`.
"""

from __future__ import annotations

import os

from sandbox.checkpoint_changes import Changes, Checkpoint, under
from sandbox.checkpoint_git import (
    ATTRIBUTES,
    DEFAULT_MAX_FILE_BYTES,
    SAFE_OPTIONS,
    STORE_CONFIG,
)
from sandbox.checkpoint_record import RecordingStore
from sandbox.checkpoint_scope import agent_paths, agent_tree
from sandbox.defaults import DEFAULT_IGNORES
from sandbox.store_files import CheckpointError

__all__ = [
    "ATTRIBUTES",
    "DEFAULT_IGNORES",
    "DEFAULT_MAX_FILE_BYTES",
    "SAFE_OPTIONS",
    "STORE_CONFIG",
    "Changes",
    "Checkpoint",
    "CheckpointError",
    "CheckpointStore",
]


class CheckpointStore(RecordingStore):
    """The checkpoints of one workspace, in the git store at `path`: recording them
    (`checkpoint_record.py`), reading what differs between two, restoring one."""

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
        self._recent.forget()  # the files it wrote are in the index as they are now
        return changes
