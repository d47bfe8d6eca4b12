"""Our own reading of an action's risk, independent of what the LLM declared.

Each tool (`workbench.tools`) says which of these readings applies to its actions. A shell
line is parsed (`shell.py`) and each of its simple commands judged by what it does
(`shell_judge.py`, `commands.py`), looking through wrappers and into code handed to shells and
interpreters; Python is read from its syntax tree (`python_code.py`), other interpreters' code
by the calls it makes (`script_code.py`). The final risk of an action is the higher of this and
the LLM's `security_risk`.

HIGH: deleting or overwriting outside the workspace or a protected path inside it
(`paths.PROTECTED_GLOBS`: the repository's config and hooks, `.workbench/`; any `git config`
that writes), recursive forced deletes, privilege,
remote or unreadable code (a download or any data piped into a shell, a command name known only
at run time), reading credentials, uploads, persistence, publishing, signalling processes and
host control. MEDIUM: package installs and discarding work in git. LOW: everything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from sandbox.executors.bash_split import split_commands
from workbench.security import paths
from workbench.security.python_code import judge_python
from workbench.security.risk import LEVELS, Assessment, Findings, at_least, higher
from workbench.security.script_code import judge_script
from workbench.security.shell import parse
from workbench.security.shell_judge import judge_line

__all__ = [
    "LEVELS",
    "Assessment",
    "analyze_browse",
    "analyze_command",
    "analyze_path_edit",
    "analyze_python",
    "at_least",
    "higher",
    "outside_workspace",
]

outside_workspace = paths.outside_workspace
_TOO_DEEP = "nested too deeply to read"


class _Analysis:
    """The `Judge` for one action: sends code in each language to its analysis."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace

    def shell(self, text: str, findings: Findings, depth: int) -> None:
        """Judge a shell line."""
        line = parse(text)
        why = incomplete(text) if line.errors and depth == 0 else None
        if why is not None:  # the agent's shell refuses it, saying why: judge what parsed
            line = replace(line, errors=False)
        judge_line(line, self.workspace, self, findings, depth)
        if why is not None:
            why = f"the command is incomplete, so the shell will not run it ({why})"
            findings.add("LOW", why, "incomplete")

    def python(self, code: str, findings: Findings, depth: int) -> None:
        """Judge Python code."""
        judge_python(code, self.workspace, self, findings, depth)

    def script(self, language: str, code: str, findings: Findings, depth: int) -> None:
        """Judge another interpreter's code."""
        judge_script(language, code, self.workspace, self, findings, depth)


def incomplete(text: str) -> str | None:
    """Why the agent's shell refuses `text` as incomplete (an open quote, a here-document with
    no body), or None when it would run it. The same check the sandbox's shell makes."""
    try:
        why = split_commands(text).incomplete
    except RecursionError:  # nested past the stack: not a verdict of "incomplete"
        return None
    return why.splitlines()[0] if why else None


def analyze_command(command: str, workspace: str) -> Assessment:
    """Assess one shell command line."""
    return _assess(lambda findings: _Analysis(workspace).shell(command, findings, 0))


def analyze_python(code: str, workspace: str) -> Assessment:
    """Assess an IPython cell: Python, `!` shell lines and magics."""
    return _assess(lambda findings: _Analysis(workspace).python(code, findings, 0))


def _assess(judge: Callable[[Findings], None]) -> Assessment:
    """Run one judgement; nesting too deep to follow is HIGH, not a crash."""
    findings = Findings()
    try:
        judge(findings)
    except RecursionError:
        findings.add("HIGH", _TOO_DEEP, "hidden_code")
    return findings.assessment()


def analyze_path_edit(path: str, workspace: str) -> Assessment:
    """Assess a change to the file at `path` (outside the workspace, a protected path or
    persistence is HIGH)."""
    full = paths.resolve(path, workspace)
    if full is None:
        return Assessment("LOW")
    what = paths.protected(full, workspace)
    if what is not None:
        return Assessment("HIGH", (paths.protected_reason("edits", path, what),), ("protected",))
    if paths.persistence(full):
        return Assessment("HIGH", (f"edits {path}, {paths.PERSISTS}",), ("persistence",))
    if not paths.inside(full, workspace):
        return Assessment("HIGH", (f"edits {path}, outside the workspace",), ("outside",))
    return Assessment("LOW")


_FILE_URL = re.compile(r"""\bfile:(//)?[^\s'"]*|\bview-source:file:""", re.I)


def analyze_browse(action: str, workspace: str) -> Assessment:
    """Assess browser actions: a `file:` URL reads local files (outside the workspace: HIGH)."""
    findings = Findings()
    for match in _FILE_URL.finditer(action):
        url = match.group(0)
        path = re.sub(r"^(view-source:)?file:(//[^/]*)?", "", url, flags=re.I) or "/"
        from urllib.parse import unquote

        full = paths.resolve(unquote(path), workspace)
        if full is None or not paths.inside(full, workspace):
            findings.add("HIGH", f"reads local files through the browser ({url[:100]})")
    return findings.assessment()
