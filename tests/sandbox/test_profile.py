"""The sandbox profile as data: its table in docs/security.md, its protected paths, the notes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from protected_support import GIT_IDENTITY

from sandbox.git_config import config_entries, key_safe, render
from sandbox.profile import PROTECTED_GLOBS, is_protected, profile_table, refused_write_note
from sandbox.protect import Guard

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"


def test_the_security_doc_shows_the_profile_table_as_the_code_has_it() -> None:
    assert profile_table() in DOCS.read_text(encoding="utf-8"), (
        "docs/security.md's profile table differs from sandbox/profile.py: paste "
        "`python -c 'from sandbox.profile import profile_table; print(profile_table())'`"
    )


@pytest.mark.parametrize(
    "path",
    [".git", ".git/config", ".git/hooks/pre-commit", ".git/info/attributes", ".gitmodules",
     ".git/modules/a/b/config", ".git/modules/a/hooks/post-checkout", ".workbench/config.toml",
     "./.git/commondir"],
)  # fmt: skip
def test_protected(path: str) -> None:
    assert is_protected(path)


@pytest.mark.parametrize(
    "path",
    [".git/objects/ab/cdef", ".git/refs/heads/main", ".git/index", ".git/HEAD", ".git/logs/HEAD",
     "src/.git/config", "a/.workbench/x", ".bashrc", "../.git/config", ".github/workflows/x"],
)  # fmt: skip
def test_not_protected(path: str) -> None:
    assert is_protected(path) is None


def test_a_home_folder_protects_its_dotfiles() -> None:
    assert is_protected(".bashrc", home_like=True)
    assert is_protected(".ssh/authorized_keys", home_like=True)
    assert is_protected("src/.bashrc", home_like=True) is None


def test_the_globs_are_plain_relative_patterns() -> None:
    assert all(not p.startswith("/") and ".." not in p for p in PROTECTED_GLOBS)


def test_a_refused_git_write_gets_a_note_and_other_failures_do_not() -> None:
    busy = "error: could not write config file .git/config: Device or resource busy"
    note = refused_write_note(busy)
    assert note and ".git/config is protected" in note and "git -c" in note
    assert refused_write_note(
        "cp: cannot create regular file '.git/hooks/x': Read-only file system"
    )
    assert refused_write_note("touch: cannot touch 'src/x': Read-only file system") is None
    assert refused_write_note("fatal: not a git repository: .git") is None


def test_a_config_keeps_inert_keys_only_when_rewritten() -> None:
    text = (
        b'[core]\n\tbare = false\n\tfsmonitor = "sh -c x"\n[remote "o\\"r"]\n\turl = /x\n'
        b'[alias]\n\tst = !sh\n[user]\n\tname = A \\"B\\"\n\temail = a@b\n'
    )
    entries = config_entries(text)
    assert entries is not None
    kept = [(k, v) for k, v in entries if key_safe(k)]
    assert [k for k, _ in kept] == ["core.bare", 'remote.o"r.url', "user.name", "user.email"]
    assert config_entries(render(kept).encode()) == kept
    assert config_entries(b"[core\n") is None


def test_the_guard_finds_submodules_in_a_repository_another_uid_owns(tmp_path: Path) -> None:
    """A submodule's config is protected from the start and a hook planted in it is moved out,
    also when the guard runs as root on a repository the person (another uid) owns."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", **GIT_IDENTITY}
    line = (
        "git init -q && git init -q sub && git -C sub commit -q --allow-empty -m x && git add sub"
    )
    subprocess.run(line, shell=True, cwd=workspace, check=True, env=env, capture_output=True)
    if os.getuid() == 0:
        for folder, _, files in os.walk(workspace):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.lchown(name, 1000, 1000)
    guard = Guard(workspace, tmp_path / "quarantine")
    assert workspace / "sub" / ".git" / "config" in guard.existing()
    (workspace / "sub" / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\n")
    assert [f.path for f in guard.check()] == ["sub/.git/hooks/post-checkout"]


def test_the_note_after_an_action_speaks_of_what_was_protected() -> None:
    """A user trial: a dotfile the editor created in a home folder was moved out with a note
    about "the repository's config and hooks" and `git -c`."""
    from sandbox.profile import tell
    from sandbox.protect import Finding
    from sandbox.protocol import CmdOutputObservation, FileEditObservation

    edit = FileEditObservation(command="create", path="/h/.profile", content="File created")
    home = tell(edit, [Finding(".profile", "a dotfile in a home folder: moved out")])
    assert isinstance(home, FileEditObservation)
    assert "dotfiles at the root of this home folder" in home.content
    assert "repository" not in home.content and "git -c" not in home.content
    run = CmdOutputObservation(command="git init", content="", exit_code=0)
    git = tell(run, [Finding(".git/config", "read-only from now on")])
    assert isinstance(git, CmdOutputObservation) and git.note is not None
    assert "repository's config" in git.note and "git -c" in git.note
    assert "home folder" not in git.note
