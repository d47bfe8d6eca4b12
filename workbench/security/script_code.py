"""Judging code for interpreters other than Python (perl, ruby, node, php, lua, awk).

No parser for each language: the calls that run programs, delete, write or signal are found by
name, and the string literals near them are judged as the shell commands or paths they are.
"""

from __future__ import annotations

import re

from workbench.security import paths
from workbench.security.risk import Findings, Judge

_STRING = re.compile(r"\"((?:[^\"\\]|\\.)*)\"|'((?:[^'\\]|\\.)*)'|`((?:[^`\\]|\\.)*)`")
_RUNS = re.compile(
    r"\b(system|exec|execSync|execFileSync|spawn|spawnSync|execFile|popen|IO\.popen|Open3|qx"
    r"|shell_exec|passthru|proc_open|pcntl_exec|os\.execute|io\.popen|child_process|Kernel\.spawn)"
    r"\b|%x\{|`"
)
_DELETES = re.compile(
    r"\b(unlink|unlinkSync|rmSync|rmdirSync|rmdir|rm_rf|rm_r|remove_tree|rmtree|os\.remove"
    r"|File\.delete|FileUtils\.rm\w*|fs\.rm|Dir\.rmdir|deleteSync)\b"
)
_RECURSIVE = re.compile(r"rm_rf|rm_r\b|remove_tree|rmtree|recursive\s*:\s*true")
_WRITES = re.compile(
    r"\b(writeFileSync|appendFileSync|writeFile|appendFile|createWriteStream|file_put_contents"
    r"|File\.write|IO\.write|symlinkSync|renameSync|chmodSync|chownSync|copyFileSync)\b"
    r"|\bopen\s*\(?\s*[\w$]*\s*,?\s*['\"]?\s*(>|\+<|w|a)|\bfopen\s*\([^)]*['\"][wax]|print\s*>"
)
_SIGNALS = re.compile(r"\b(process\.kill|Process\.kill|posix_kill|kill)\s*\(?\s*['\"\w-]")
_EVALS = re.compile(r"\b(eval|Function|instance_eval|class_eval|loadstring|load)\s*\(")


def judge_script(
    language: str, code: str, workspace: str, judge: Judge, findings: Findings, depth: int
) -> None:
    """Judge `code` written for `language` by the calls and literals it holds."""
    literals = [next(g for g in m.groups() if g is not None) for m in _STRING.finditer(code)]
    if language == "awk":
        literals = [s for s in literals if s]
    for text in literals:
        full = paths.resolve(text, workspace)
        if full is not None and paths.credential(full):
            findings.add("HIGH", f"reads credentials ({text[:80]})")
    runs = (
        _RUNS.search(code)
        if language != "awk"
        else re.search(r"\bsystem\s*\(|\|\s*getline|print[^;]*\|", code)
    )
    if runs:
        commands = [s for s in literals if s.strip()]
        if not commands:
            findings.add("HIGH", f"runs a program known only when it runs ({language})")
        for text in commands:
            judge.shell(text, findings, depth + 1)
    deletes = _DELETES.search(code)
    if deletes and _RECURSIVE.search(code):
        findings.add("HIGH", f"recursive forced delete ({language} {deletes.group(0)})")
    if deletes or _WRITES.search(code):
        verb = "deletes" if deletes else "writes"
        for text in literals:
            full = paths.resolve(text, workspace)
            what = paths.protected(full, workspace) if full is not None else None
            if what is not None:
                findings.add("HIGH", paths.protected_reason(verb, text, what))
            elif full is not None and "/" in text and not paths.inside(full, workspace):
                findings.add("HIGH", f"{verb} {text}, outside the workspace ({language})")
            elif full is not None and paths.persistence(full):
                findings.add("HIGH", f"{verb} {text}, {paths.PERSISTS}")
    if _SIGNALS.search(code):
        findings.add("HIGH", f"sends a signal to a process ({language})")
    if _EVALS.search(code) and language in ("node", "ruby", "perl", "lua", "php"):
        findings.add("HIGH", f"evaluates code built at run time ({language})")
