"""Shared by the protected-path tests: a repository workspace, the `.git` attacks, host git.

Each attack writes a payload that touches a marker file OUTSIDE the workspace (the sandbox
cannot see or write there), so a marker appears only if the person's own git on the host runs
what the agent planted. `host_git_probe` runs the commands a person would run afterwards
(status, log, diff, commit, checkout), with a terminal as stdout so pagers run too.
"""

from __future__ import annotations

import os
import pty
import subprocess
from pathlib import Path

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.com",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.com",
}
ACCEPTANCE = "git init && git add -A && git commit -m x && git checkout -b b && git stash list"


def make_repo(workspace: Path) -> None:
    """A repository with one commit and a tracked file, made by the person on the host."""
    workspace.mkdir(parents=True, exist_ok=True)
    (workspace / "f.txt").write_text("one\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "start"]):
        subprocess.run(["git", *args], cwd=workspace, check=True, env=_env())


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "PAGER"}
    env |= GIT_IDENTITY | {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    # The person owns their workspace; as root here, git would refuse another uid's repository
    # ("dubious ownership") and run nothing at all, which would prove nothing.
    env |= {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory"}
    env |= {"GIT_CONFIG_VALUE_0": "*"}
    return env | {"TERM": "xterm"}


def payload(marker: Path) -> str:
    """A shell command that records that it ran."""
    return f"touch {marker}"


def hook(marker: Path) -> str:
    """printf arguments writing an executable-ready hook script that touches `marker`."""
    return f"'#!/bin/sh\\ntouch {marker}\\n'"


def attacks(marks: Path) -> dict[str, list[str]]:
    """The `.git` attack forms of issue 21, each a list of shell commands the agent sends;
    `marks` is a folder outside the workspace where payloads leave markers."""

    def m(name: str) -> Path:
        return marks / name

    evil_cfg = f"printf '[core]\\n\\tfsmonitor = \"{payload(m('include'))}\"\\n' > evil.cfg"
    evil_if = f"printf '[core]\\n\\tfsmonitor = \"{payload(m('includeif'))}\"\\n' > evil2.cfg"
    hooks = f"mkdir -p payload/hooks && printf {hook(m('cp-hooks'))} > payload/hooks/pre-commit"
    return {
        "include.path": [evil_cfg, "git config include.path ../evil.cfg"],
        "core.fsmonitor": [f"git config core.fsmonitor '{payload(m('fsmonitor'))}'"],
        "cp -r hooks": [
            f"{hooks} && chmod +x payload/hooks/pre-commit",
            "cp -r payload/hooks .git/",
        ],
        "git init --template": [
            f"mkdir -p tpl/hooks && printf {hook(m('template'))} > tpl/hooks/post-commit",
            "chmod +x tpl/hooks/post-commit && git init --template=./tpl",
        ],
        "core.pager": [f"git config core.pager '{payload(m('pager'))}; cat'"],
        "diff.external": [f"git config diff.external '{payload(m('diff-external'))}'"],
        "pager.*": [f"git config pager.status '{payload(m('pager-status'))}; cat'"],
        "includeIf": [evil_if, "git config includeIf.gitdir:/.path ../evil2.cfg"],
        "tar -C .git": [
            f"mkdir -p t/hooks && printf {hook(m('tar'))} > t/hooks/pre-commit",
            f"printf '[core]\\n\\tfsmonitor = \"{payload(m('tar-config'))}\"\\n' > t/config",
            "chmod +x t/hooks/pre-commit && tar -C t -cf p.tar hooks config",
            "tar -C .git -xf p.tar",
        ],
        "mv x .git/hooks": [
            f"mkdir -p x && printf {hook(m('mv-hooks'))} > x/pre-commit && chmod +x x/pre-commit",
            "rm -rf .git/hooks; mv x .git/hooks",
        ],
        "nested repository as a submodule": [
            "git init -q sub && git -C sub commit -q --allow-empty -m x && git add sub",
            f"git -C sub config core.fsmonitor '{payload(m('nested'))}'",
            f"printf {hook(m('nested-hook'))} > sub/.git/hooks/post-checkout",
            "chmod +x sub/.git/hooks/post-checkout",
        ],
        "submodule gitfile": [
            "git init -q evil4 && git -C evil4 commit -q --allow-empty -m x",
            f"git -C evil4 config core.fsmonitor '{payload(m('subgitfile'))}'",
            "git init -q sub2 && git -C sub2 commit -q --allow-empty -m x && git add sub2",
            "rm -rf sub2/.git && echo 'gitdir: ../evil4/.git' > sub2/.git",
        ],
        "hooks as a symlink": [
            f"mkdir -p y && printf {hook(m('hooks-symlink'))} > y/pre-commit && chmod +x y/*",
            "mv .git .git-old && git init -q && rm -rf .git/hooks && ln -s ../y .git/hooks",
        ],
        "gitfile into .git/modules through a symlink": [  # one action: before any check
            "git init -q evil5 && git -C evil5 commit -q --allow-empty -m x && "
            f"git -C evil5 config core.fsmonitor '{payload(m('modules-symlink'))}' && "
            "git init -q sub3 && git -C sub3 commit -q --allow-empty -m x && git add sub3 && "
            "mkdir -p .git/modules && ln -s ../../evil5/.git .git/modules/s3 && "
            "rm -rf sub3/.git && echo 'gitdir: ../.git/modules/s3' > sub3/.git",
        ],
        "mv .git away": [
            "mv .git .git-old && git init -q",
            f"git config core.fsmonitor '{payload(m('mv-git'))}'",
            f"printf {hook(m('mv-git-hook'))} > .git/hooks/pre-commit",
            "chmod +x .git/hooks/pre-commit",
        ],
        ".git as a gitfile": [
            "git init -q evilgit",
            f"git -C evilgit config core.fsmonitor '{payload(m('gitfile'))}'",
            "mv .git .git-old && echo 'gitdir: evilgit/.git' > .git",
        ],
        "FIFOs in hooks": [
            "mv .git .git-old && git init -q && mkdir .git/hooks/d && "
            "mkfifo .git/hooks/d/p .git/hooks/pre-commit",
        ],
        "FIFO as .git/config": [
            "mv .git .git-old && git init -q && rm .git/config && mkfifo .git/config",
        ],
        ".git as a symlink": [
            f"git init -q evil3 && git -C evil3 config core.fsmonitor '{payload(m('symlink'))}'",
            "mv .git .git-old && ln -s evil3/.git .git",
        ],
    }


REPLACING = (
    "hooks as a symlink",
    "mv .git away",
    ".git as a gitfile",
    "FIFO as .git/config",
    "FIFOs in hooks",
    ".git as a symlink",
)
"""Forms that replace `.git` itself. The person's `.git` cannot be renamed in the sandbox (it is
a mount point), so these run on a repository the agent made (`AGENT_REPO`) first."""
AGENT_REPO = "git init -q && git add -A && git commit -qm start"


def host_git_probe(workspace: Path) -> list[str]:
    """Run what a person runs on the host after the session; the outputs, for messages."""
    outputs = []
    target = workspace / "f.txt"
    if target.exists():
        target.write_text(target.read_text() + "changed on the host\n")
    for args in (
        ["status"],
        ["log", "-1"],
        ["diff"],
        ["-c", "commit.gpgsign=false", "commit", "-qam", "host commit", "--allow-empty"],
        ["checkout", "-q", "-b", "host-branch"],
    ):
        outputs.append(_on_a_terminal(["git", "-C", str(workspace), *args]))
    return outputs


def _on_a_terminal(argv: list[str]) -> str:
    """Run `argv` with a pty as stdout (git then starts its pager), its output as text."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            env=_env(),
            timeout=30,
            check=False,
        )
    finally:
        os.close(follower)
    chunks = []
    try:
        while True:
            chunk = os.read(leader, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:  # EIO: the terminal's other end is closed and drained
        pass
    finally:
        os.close(leader)
    return b"".join(chunks).decode(errors="replace") + done.stderr.decode(errors="replace")
