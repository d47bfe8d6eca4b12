"""The sandbox profile as data: its table in docs/security.md, its protected paths, the notes."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.git_config import config_entries, key_safe, render
from sandbox.profile import PROTECTED_GLOBS, is_protected, profile_table, refused_write_note

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
