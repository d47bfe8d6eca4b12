"""Environment variables that decide what runs: in a shell line (`PROMPT_COMMAND=…`,
`GIT_CONFIG_KEY_0=core.fsmonitor git status`, `env GIT_SSH_COMMAND=… git fetch`) and in a
`set_env` action, which is judged by the names it sets (its values may be secrets)."""

from __future__ import annotations

import re

from workbench.events import RiskLevel
from workbench.security.git_risks import HARMLESS_PROGRAMS, git_key_runs

UNKNOWN = "\x00"
"""A value not known here (`GIT_CONFIG_VALUE_0` is a variable of its own)."""
HOOK_VARIABLES = frozenset({"PROMPT_COMMAND", "BASH_ENV", "ENV", "PS0", "PS4", "LD_PRELOAD"})
"""Shell variables whose value runs later (before each prompt, in each new shell, each program)."""

_GIT_PROGRAMS = frozenset(
    {
        "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_EXEC_PATH", "GIT_TEMPLATE_DIR",
        "GIT_PROXY_COMMAND",
    }
)  # fmt: skip
"""Variables naming a program (or where programs are found) that git runs."""
_GIT_CONFIG_FILES = frozenset({"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG"})
# What setting each kind of name does, for `set_env` (matched in order).
_SET_ENV_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^(PROMPT_COMMAND|BASH_ENV|ENV|PS[0-4]|SHELLOPTS|BASHOPTS|IFS|BASH_FUNC_.*)$"),
        "changes what the shell runs and how it reads every command",
    ),
    (re.compile(r"^(LD_.*|DYLD_.*|GCONV_PATH)$"), "loads code into every program started"),
    (re.compile(r"^PATH$"), "chooses which program each command name runs"),
    (
        re.compile(
            r"^(PYTHON(PATH|STARTUP|HOME|USERBASE|EXECUTABLE|INSPECT)|NODE_(OPTIONS|PATH)"
            r"|PERL5?(OPT|LIB)|PERLLIB|RUBY(OPT|LIB)|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS"
            r"|JDK_JAVA_OPTIONS|CLASSPATH|LUA_(INIT|PATH|CPATH).*)$"
        ),
        "loads code into an interpreter",
    ),
    (re.compile(r"^GIT_.*$"), "changes which programs and settings git uses"),
    (
        re.compile(
            r"^(EDITOR|VISUAL|PAGER|MANPAGER|LESSOPEN|LESSCLOSE|BROWSER|SSH_ASKPASS|SUDO_ASKPASS"
            r"|TERMINAL)$"
        ),
        "names a program that others run",
    ),
    (
        re.compile(r"^(HOME|XDG_CONFIG_HOME|ZDOTDIR|INPUTRC|npm_config_.*|PIP_.*)$"),
        "moves where programs read their settings from",
    ),
)


def set_env_risks(names: list[str]) -> list[str]:
    """Why setting each of `names` is HIGH (empty: ordinary names)."""
    found: list[str] = []
    for name in sorted(names):
        for pattern, why in _SET_ENV_NAMES:
            if pattern.match(name):
                found.append(f"sets {name}, which {why}")
                break
    return found


def variable_risks(name: str, value: str) -> list[tuple[RiskLevel, str]]:
    """What setting `name=value` in a shell line risks."""
    if name in HOOK_VARIABLES:
        return [("HIGH", f"makes the shell run code later, on its own ({name})")]
    if name in _GIT_PROGRAMS and value.strip() not in HARMLESS_PROGRAMS:
        return [("HIGH", f"makes git run a program ({name})")]
    if name in _GIT_CONFIG_FILES and value != "/dev/null":
        return [("HIGH", f"makes git read settings that can run programs from {value} ({name})")]
    if re.match(r"^GIT_CONFIG_KEY_\d+$", name) and git_key_runs(value, UNKNOWN):
        return [("HIGH", f"makes git run a program ({name}={value})")]
    if name == "GIT_CONFIG_PARAMETERS" and any(
        git_key_runs(key, UNKNOWN) for key in re.findall(r"'([^'=]+)'?=", value)
    ):
        return [("HIGH", f"makes git run a program ({name})")]
    return []
