"""Our own reading of an action's risk, independent of what the LLM declared.

Each tool (`workbench.tools`) says which of these readings applies to its actions.

A small rule set, meant to catch the obvious: recursive forced deletes, root, piping a download
into a shell, package installs, publishing (git push), and writes outside the workspace. The
final risk of an action is the higher of this and the LLM's `security_risk`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath

from workbench.events import RiskLevel

LEVELS: tuple[RiskLevel, ...] = ("LOW", "MEDIUM", "HIGH")


def higher(a: RiskLevel, b: RiskLevel | None) -> RiskLevel:
    """The higher of two risk levels (None counts as LOW)."""
    if b is None:
        return a
    return a if LEVELS.index(a) >= LEVELS.index(b) else b


def at_least(level: RiskLevel, threshold: RiskLevel) -> bool:
    """True when `level` is `threshold` or higher."""
    return LEVELS.index(level) >= LEVELS.index(threshold)


@dataclass(frozen=True)
class Assessment:
    """A risk level and the reasons that led to it (empty for plain LOW)."""

    level: RiskLevel
    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """The reasons as one sentence."""
        return "; ".join(self.reasons)


# (pattern, level, reason); searched in each command of a shell line.
_RULE_TEXT: tuple[tuple[str, RiskLevel, str], ...] = (
    (
        r"\brm\s+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r|(-\S+\s+)*(-r|-R|--recursive)"
        r"\s+(-\S+\s+)*(-f|--force)|(-\S+\s+)*(-f|--force)\s+(-\S+\s+)*(-r|-R|--recursive))\b",
        "HIGH",
        "recursive forced delete (rm -rf)",
    ),
    (r"(^|[\s;&|(])(sudo|doas|su)\s", "HIGH", "runs as root (sudo/su)"),
    (
        r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z|da|k)?sh\b"
        r"|\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?python[0-9.]*\b",
        "HIGH",
        "pipes a download into a shell",
    ),
    (r"\bgit\s+(\S+\s+)*push\b", "HIGH", "publishes with git push"),
    (r"\b(mkfs(\.\w+)?|shutdown|reboot|halt|poweroff)\b", "HIGH", "system administration"),
    (r"\bdd\b.*\bof=/dev/", "HIGH", "writes to a device"),
    (
        r"\b(pip3?|uv\s+pip|pipx|poetry|conda|mamba)\s+(install|add)\b"
        r"|\b(apt(-get)?|dnf|yum|apk|brew|pacman|zypper)\s+(\S+\s+)*(install|add|-S)\b"
        r"|\b(npm|pnpm)\s+(i|install|add)\b|\byarn\s+(global\s+)?add\b"
        r"|\b(cargo|gem|go)\s+install\b",
        "MEDIUM",
        "installs packages",
    ),
    (r"\bchmod\s+(-\S+\s+)*-R\b|\bchown\s+", "MEDIUM", "changes ownership or permissions"),
    (r"\bgit\s+(reset\s+--hard|clean\s+-\w*f)", "MEDIUM", "discards work in git"),
)
_COMMAND_RULES = tuple((re.compile(text), level, reason) for text, level, reason in _RULE_TEXT)

_WRITE_TARGETS = re.compile(r"(?:^|[^<>&0-9])>{1,2}\s*([^\s;&|<>]+)|\btee\s+(?:-a\s+)?([^\s;&|]+)")
_SAFE_PATHS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/tmp/", "/var/tmp/")


def outside_workspace(path: str, workspace: str) -> bool:
    """True when absolute `path` lies outside `workspace` (and is not a scratch location)."""
    if not path.startswith(("/", "~")):
        return False
    if path.startswith("~"):
        return True
    if path in _SAFE_PATHS or path.startswith(_SAFE_PATHS[3:]):
        return False
    ws = PurePosixPath(workspace)
    p = PurePosixPath(path)
    return p != ws and ws not in p.parents


def analyze_command(command: str, workspace: str) -> Assessment:
    """Assess one shell command line."""
    level: RiskLevel = "LOW"
    reasons: list[str] = []
    for pattern, rule_level, reason in _COMMAND_RULES:
        if pattern.search(command):
            level = higher(level, rule_level)
            reasons.append(reason)
    for match in _WRITE_TARGETS.finditer(command):
        target = match.group(1) or match.group(2) or ""
        target = target.strip("'\"")
        if outside_workspace(target, workspace):
            level = "HIGH"
            reasons.append(f"writes outside the workspace ({target})")
    if re.search(r"\b(cp|mv|install|ln)\b", command):
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            words = command.split()
        last = words[-1] if words else ""
        if len(words) > 2 and outside_workspace(last, workspace):
            level = "HIGH"
            reasons.append(f"copies or moves into {last}, outside the workspace")
    return Assessment(level, tuple(dict.fromkeys(reasons)))


def analyze_path_edit(path: str, workspace: str) -> Assessment:
    """Assess a change to the file at `path` (writing outside the workspace is HIGH)."""
    if outside_workspace(path, workspace):
        return Assessment("HIGH", (f"edits {path}, outside the workspace",))
    return Assessment("LOW")


def analyze_python(code: str, workspace: str) -> Assessment:
    """Assess an IPython cell: its `!` shell lines, `%pip install`, deleting or running things."""
    shell_lines = [line.strip()[1:] for line in code.splitlines() if line.strip().startswith("!")]
    result = analyze_command("\n".join(shell_lines), workspace)
    if re.search(r"%pip\s+install", code):
        result = Assessment(higher("MEDIUM", result.level), (*result.reasons, "installs packages"))
    if re.search(r"\bshutil\.rmtree\b|\bos\.(system|remove|unlink)\b|\bsubprocess\.", code):
        result = Assessment(
            higher("MEDIUM", result.level),
            (*result.reasons, "deletes files or runs programs from Python"),
        )
    return result
