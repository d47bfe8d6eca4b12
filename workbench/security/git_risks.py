"""What a git command risks beyond its files: settings that make git run programs (`-c`,
`git config`), writes to the repository's own config (protected: the person changes it on the
host), hooks copied from a template, and submodule or remote changes that rewrite `.gitmodules`
or `.git/config`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.events import RiskLevel
from workbench.security.commands import is_option, option_value, split_options
from workbench.security.paths import PROTECTED_HELD, PROTECTED_WHY

_GIT_RUNS = re.compile(
    r"^(core\.(hookspath|fsmonitor|sshcommand|editor|pager|askpass|gitproxy|alternaterefscommand"
    r"|worktree)"
    r"|(filter|diff|merge)\..*\.(clean|smudge|textconv|driver|process|command)"
    r"|diff\.external|(diff|merge)tool\..*\.cmd|pager\..*|credential\.(.*\.)?helper"
    r"|sequence\.editor|gpg\.(.*\.)?program|uploadpack\.packobjectshook|include\.path"
    r"|includeif\..*\.path|init\.templatedir|remote\..*\.(uploadpack|receivepack|vcs)"
    r"|protocol\.(.*\.)?allow|(man|browser)\..*\.(cmd|path)|web\.browser|sendemail\..*cmd"
    r"|receive\.procreceiverefs|ssh\.variant)$",
    re.I,
)
HARMLESS_PROGRAMS = frozenset(
    {"", "cat", "less", "more", "true", "false", "less -R", "less -FRX", "less -FRSX"}
)
"""Pager and editor values that run nothing else (`git -c core.pager=cat`, `GIT_PAGER=cat`)."""
_PAGER_OR_EDITOR = re.compile(r"^(core\.(pager|editor)|pager\..*|sequence\.editor)$", re.I)
_CONFIG_READS = frozenset(
    {
        "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color", "--get-colorbool",
        "--list", "-l", "get", "list",
    }
)  # fmt: skip
_CONFIG_WRITES = frozenset(
    {
        "--unset", "--unset-all", "--add", "--replace-all", "--rename-section",
        "--remove-section", "-e", "--edit", "set", "unset", "edit", "rename-section",
        "remove-section",
    }
)  # fmt: skip
_CONFIG_VALUES = ("--file", "-f", "--type", "--default", "--blob", "--comment", "--value")
_REPO_CONFIG = (
    f"changes the repository's git config (.git/config), a protected path: {PROTECTED_WHY}"
)
_RUNS_OPTIONS = ("--upload-pack", "--receive-pack", "--exec", "-u")
"""Options of clone/fetch/pull/push/ls-remote/archive naming a program to run."""


def git_key_runs(key: str, value: str) -> bool:
    """True when the git setting `key=value` makes git run a program (or read more settings)."""
    if key.lower().startswith("alias."):
        return value.startswith("!")
    if _PAGER_OR_EDITOR.match(key) and value.strip() in HARMLESS_PROGRAMS:
        return False
    return bool(_GIT_RUNS.match(key))


def git_overrides(args: list[str]) -> list[tuple[str, str]]:
    """The `-c key=value` (and `--config-env key=VAR`) settings before git's subcommand that
    make it run a program."""
    found = []
    for i, word in enumerate(args):
        setting = None
        if word in ("-c", "--config-env") and i + 1 < len(args):
            setting = args[i + 1]
        elif word.startswith("--config-env="):
            setting = word.partition("=")[2]
        if setting is not None and "=" in setting:
            key, _, value = setting.partition("=")
            if word != "-c":
                value = "$" + value  # the value of an environment variable: not known here
            if git_key_runs(key, value):
                found.append((key, value))
        elif not word.startswith("-") and (i == 0 or args[i - 1] not in ("-c", "-C")):
            break
    return found


@dataclass(frozen=True)
class ConfigCall:
    """What `git config ARGS` does: whether it writes, where, and the key and value."""

    writes: bool
    where: str
    """`repo`, `global`, `system` or `file`."""
    file: str | None
    key: str
    value: str


def git_config(rest: list[str]) -> ConfigCall:
    """Read `git config ARGS` (old options and new subcommands alike)."""
    options, operands = split_options(rest, _CONFIG_VALUES)
    if operands[:1] and operands[0] in _CONFIG_READS | _CONFIG_WRITES:
        options, operands = [*options, operands[0]], operands[1:]
    file = option_value(rest, ("--file", "-f"))
    where = "file" if file else "repo"
    if "--global" in options:
        where = "global"
    elif "--system" in options:
        where = "system"
    key = operands[0] if operands else ""
    value = operands[1] if len(operands) > 1 else option_value(rest, ("--value",)) or ""
    reads = any(o in _CONFIG_READS for o in options) or option_value(rest, ("--blob",))
    writes = not reads and (
        any(o in _CONFIG_WRITES for o in options) or len(operands) >= 2 or "--value" in rest
    )
    return ConfigCall(writes, where, file, key, value)


def git_risks(sub: str, rest: list[str]) -> list[tuple[RiskLevel, str]]:
    """What the git subcommand `sub` with `rest` risks (files it names are judged apart)."""
    found: list[tuple[RiskLevel, str]] = []
    plain = [a for a in rest if not is_option(a)]
    if sub == "config":
        call = git_config(rest)
        if call.writes and call.where in ("global", "system"):
            found.append(("HIGH", "changes the global git config (persistence)"))
        elif call.writes and call.where == "repo":
            found.append(("HIGH", _REPO_CONFIG))
        if call.writes and git_key_runs(call.key, call.value):
            found.append(("HIGH", f"makes git run a program later (git config {call.key})"))
    elif sub in ("init", "clone") and option_value(rest, ("--template",)) is not None:
        found.append(
            ("HIGH", f"copies hooks from a template into the new .git (git {sub} --template)")
        )
    if sub in ("clone", "fetch", "pull", "push", "ls-remote", "archive"):
        ran = [o for o in _RUNS_OPTIONS if option_value(rest, (o,)) is not None]
        if ran and (ran[0] != "-u" or sub == "clone"):
            found.append(("HIGH", f"makes git run a program (git {sub} {ran[0]})"))
        for key in _clone_settings(sub, rest):
            found.append(("HIGH", f"makes git run a program (git {sub} --config {key})"))
    if sub == "submodule" and (
        plain[:1] in (["add"], ["init"], ["deinit"], ["sync"], ["set-url"], ["set-branch"])
        or (plain[:1] == ["update"] and "--init" in rest)
    ):
        found.append(
            (
                "HIGH",
                "changes the submodules' settings (.gitmodules, .git/config, .git/modules), "
                f"protected paths: {PROTECTED_HELD}",
            )
        )
    if sub == "remote" and plain[:1] and plain[0] in (
        "add", "rename", "remove", "rm", "set-url", "set-head", "set-branches"
    ):  # fmt: skip
        found.append(("HIGH", _REPO_CONFIG))
    if (sub == "branch" and _sets_upstream(rest)) or (
        sub in ("checkout", "switch") and any(a in ("-t", "--track") for a in rest)
    ):
        found.append(("HIGH", _REPO_CONFIG))
    return found


def _sets_upstream(rest: list[str]) -> bool:
    names = ("-u", "--set-upstream-to", "--unset-upstream", "--edit-description")
    return any(a in names or a.startswith("--set-upstream-to=") for a in rest)


def _clone_settings(sub: str, rest: list[str]) -> list[str]:
    """`git clone -c key=value`: the keys written into the new repository's config that make
    git run a program."""
    if sub != "clone":
        return []
    found: list[str] = []
    for i, word in enumerate(rest):
        setting = rest[i + 1] if word in ("-c", "--config") and i + 1 < len(rest) else None
        if word.startswith("--config="):
            setting = word.partition("=")[2]
        if setting and "=" in setting:
            key, _, value = setting.partition("=")
            if git_key_runs(key, value):
                found.append(key)
    return found
