"""Whether a workspace looks like a person's home folder, and what in it the agent must not change.

The workspace defaults to the current folder, so `workbench` started in `~` would hand the agent
the shell's start-up files, the SSH and cloud keys. `home_reasons` says why a folder looks like a
home (it is `$HOME` or holds it, or holds `.ssh`, `.gnupg`, `.aws` or a shell rc file at its
root); the CLI refuses such a workspace unless `--workspace` names it and the person confirms.
Even then, `protected_names` lists the dotfiles and dot-folders at its root (and at the home's,
when the home is inside it), which the runtime makes read-only to the agent
(`session.runtime_options`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SECRET_FOLDERS = (".ssh", ".gnupg", ".aws")
"""Folders of keys and credentials that only a home holds."""
SHELL_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
)
"""Files a shell runs at start-up: writing one runs code in the person's next shell."""
NOT_PROTECTED = (".git", ".workbench")
"""Dot entries kept out of the list: the repository (git must keep working; its config and
hooks are protected on their own) and the project's config (read-only already)."""


def home_of(env: Mapping[str, str] | None = None) -> Path | None:
    """The person's home folder (`$HOME`), resolved; None when it is not set."""
    home = (os.environ if env is None else env).get("HOME", "")
    return Path(home).resolve() if home else None


def home_reasons(workspace: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """Why `workspace` looks like a home folder (empty when it does not)."""
    workspace = Path(workspace).resolve()
    reasons: list[str] = []
    home = home_of(env)
    if workspace == home:
        reasons.append("it is your home folder")
    elif home is not None and home.is_relative_to(workspace):
        reasons.append(f"it holds your home folder {home}")
    for name in SECRET_FOLDERS:
        if (workspace / name).is_dir():
            reasons.append(f"it holds {name}/")
    for name in SHELL_FILES:
        if (workspace / name).exists():
            reasons.append(f"it holds the shell start-up file {name}")
    return reasons


def refusal(workspace: Path, reasons: list[str], how: str) -> str:
    """The message refusing `workspace`; `how` says how to choose it anyway."""
    return (
        f"the workspace {workspace} looks like a home folder ({'; '.join(reasons)}). The agent "
        "could change your shell's start-up files or read your keys there. Fix: start workbench "
        f"in a project folder, or name this folder explicitly: {how}."
    )


def protected_names(workspace: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """Relative to `workspace`, sorted: the dotfiles and dot-folders at its root, and at the
    home folder's root when that is inside it (for a link among them, its target inside the
    workspace too)."""
    workspace = Path(workspace).resolve()
    home = home_of(env)
    roots = [workspace]
    if home is not None and home != workspace and home.is_relative_to(workspace):
        roots.append(home)
    names: set[str] = set()
    for root in roots:
        try:
            entries = list(root.iterdir())
        except OSError:
            continue
        for entry in entries:
            if not entry.name.startswith(".") or entry.name in NOT_PROTECTED:
                continue
            names.add(str(entry.relative_to(workspace)))
            if entry.is_symlink():
                target = entry.resolve()
                if target != workspace and target.is_relative_to(workspace):
                    names.add(str(target.relative_to(workspace)))
    return sorted(names)
