"""What "always allow" proposes for an approved action: general rules, never a blank cheque.

A shell line gets one rule per command it runs that no allow rule covers yet (a pipeline and
`&&` give several), each as general as is safe: `pip install --dry-run requests 2>&1` gives
`run:pip install *` (the tool and its subcommand, then ` *` for what follows),
`python3 tools/gen.py --fast` gives `run:python3 tools/gen.py *` (an interpreter and its script),
`ls -la src` gives `run:ls *`; a command with nothing after them gets `*` alone (`npm test*`).
Never broader than the program and its subcommand: `git -C /x status` or a bare `npm` gets the
exact command, and so does any command naming a path outside the workspace (`cat /etc/hosts`,
`--git-dir=/x`). Commands whose everyday use changes or removes things (`rm`, `mv`, `chmod`,
`kill`, ...), shells, wrappers and network tools get a rule for exactly that command. A line
with a substitution or a part that does not parse gets only its exact text.
An editor action gets its folder (`edit:/ws/src/*`), a browser visit its site, other tools the
exact text. Rules are offered at every risk level except for an action with a finding that must
always be asked about (`risk.ALWAYS_ASK`: deleting or writing outside the workspace or a
protected path, credentials, privilege, persistence, publishing, code that cannot be read
before it runs): that one is approved one at a time.
The person may edit the rules; `rule_errors` says what is wrong with an edited one, and which
part of the action a rule fails to match (`rule_mismatch.py`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

from workbench.config.schema import SecurityConfig
from workbench.events import AnyAction
from workbench.security.paths import inside, outside_workspace, resolve
from workbench.security.policy import allowed_by, assess, subject_of
from workbench.security.risk import Assessment, Category
from workbench.security.rule_mismatch import mismatch
from workbench.security.shell import DYNAMIC, Command, parse
from workbench.tools.registry import REGISTRY

SUBCOMMAND_TOOLS = frozenset(
    {
        "apt",
        "brew",
        "bun",
        "cargo",
        "composer",
        "conda",
        "deno",
        "docker",
        "dotnet",
        "gem",
        "git",
        "go",
        "gradle",
        "helm",
        "just",
        "kubectl",
        "make",
        "mvn",
        "npm",
        "pip",
        "pip3",
        "pnpm",
        "poetry",
        "rustup",
        "terraform",
        "tox",
        "uv",
        "yarn",
    }
)
"""Tools whose first argument names what they do (`git commit`, `npm test`)."""
INTERPRETERS = frozenset({"node", "perl", "php", "python", "python3", "ruby", "Rscript"})
"""A script's path says what runs; code given inline does not."""
EXACT_ONLY = frozenset(
    {
        ".",
        "bash",
        "builtin",
        "chgrp",
        "chmod",
        "chown",
        "command",
        "curl",
        "dash",
        "dd",
        "doas",
        "env",
        "eval",
        "exec",
        "fish",
        "kill",
        "killall",
        "ksh",
        "ln",
        "mv",
        "nc",
        "ncat",
        "nice",
        "nohup",
        "pkill",
        "rm",
        "rmdir",
        "rsync",
        "scp",
        "sh",
        "shred",
        "source",
        "ssh",
        "su",
        "sudo",
        "time",
        "timeout",
        "truncate",
        "wget",
        "xargs",
        "zsh",
    }
)
"""Commands whose general pattern would allow far more than what was approved."""

_GLOB = re.compile(r"[*?\[]")
_NEEDS_QUOTES = re.compile(r"""[\s'"\\$`;&|<>(){}#~]""")


@dataclass(frozen=True)
class AllowProposal:
    """The rules "always allow" offers for one action, or why it offers none."""

    rules: tuple[str, ...]
    refused: str = ""
    """Why no rule is offered (it must always be asked about, ...); empty when offered."""


_ASKED_FOR: dict[Category, str] = {
    "outside": "delete or write outside the workspace",
    "protected": "change protected paths",
    "credentials": "touch credentials",
    "privilege": "gain privileges",
    "persistence": "make things run later (persistence)",
    "publishing": "publish or upload",
    "remote_code": "run code that cannot be read before it runs",
    "hidden_code": "run code that cannot be read before it runs",
    "escalation": "run outside the sandbox",
    "unclassified": "are HIGH risk in a way no rule may cover",
}


def always_asked(found: Assessment) -> str:
    """Why no rule may approve actions like `found`'s (empty: a rule may)."""
    reasons = found.always_ask()
    if not reasons:
        return ""
    kinds = [kind for _, reason, kind in found.kinds() if reason in reasons]
    what = " or ".join(dict.fromkeys(_ASKED_FOR.get(kind, kind) for kind in kinds))
    return f"actions that {what} are asked about every time ({'; '.join(reasons)})"


def escape(text: str) -> str:
    """`text` as a glob that matches only itself."""
    return _GLOB.sub(lambda found: f"[{found.group()}]", text)


def propose(action: AnyAction, config: SecurityConfig, workspace: str) -> AllowProposal:
    """The allow rules that would let `action`, and actions like it, run without asking."""
    subject = subject_of(action)
    found = assess(action, workspace)
    why = always_asked(found)
    if why:
        return AllowProposal((), why)
    if subject is None:
        return AllowProposal((), "no rule can name this action (it is judged by its tool alone)")
    exact = f"{subject.kind}:{escape(subject.text.strip())}"
    if subject.shell:
        general = _shell_rules(subject.text, config, workspace)
    else:
        general = [_tool_rule(subject.kind, subject.text.strip(), workspace) or exact]
    for rules in (general, [exact]):
        if rules and allowed_by([*config.allow, *rules], action):
            return AllowProposal(tuple(dict.fromkeys(rules)))
    return AllowProposal((), "no rule can describe this action safely")


def rule_errors(
    rules: list[str], action: AnyAction, config: SecurityConfig, workspace: str
) -> list[str]:
    """What is wrong with rules a person edited for `action`, as sentences (empty: none)."""
    errors: list[str] = []
    kinds = REGISTRY.rule_kinds()
    for rule in rules:
        kind, sep, pattern = rule.partition(":")
        if not sep or kind not in kinds:
            errors.append(
                f"{rule!r} names no kind of action: start it with one of "
                + ", ".join(f"{name}:" for name in sorted(kinds))
            )
        elif not pattern.strip() or all(char in "*?" for char in pattern.strip()):
            errors.append(
                f"{rule!r} would allow every {kind} action; set security.confirmation "
                '= "never" instead if that is what you want'
            )
    subject = subject_of(action)
    if not errors and not allowed_by([*config.allow, *rules], action):
        errors.append("these rules do not match the action being approved")
        if subject is not None:
            errors += mismatch([*config.allow, *rules], subject)
    why = always_asked(assess(action, workspace))
    if not errors and why:
        errors.append(why)
    return errors


def _shell_rules(line: str, config: SecurityConfig, workspace: str) -> list[str]:
    """A rule for each command of `line` that no allow rule covers yet."""
    parsed = parse(line)
    if parsed.errors or parsed.substitutions:
        return []
    rules: list[str] = []
    cwd: str | None = workspace
    for command in parsed.commands:
        if not command.words and not command.redirects:
            continue
        if not allowed_by_text(config.allow, command.text):
            rules.append("run:" + _command_pattern(command, workspace, cwd))
        if command.words[:1] in (["cd"], ["pushd"]):  # what follows runs there
            target = next((w for w in command.words[1:] if not w.startswith("-")), "~")
            cwd = resolve(target, cwd)
    return rules


def allowed_by_text(rules: list[str], text: str) -> bool:
    """True when a `run:` (or kind-less) rule matches the command `text`."""
    for rule in rules:
        kind, sep, pattern = rule.partition(":")
        if sep and kind in REGISTRY.rule_kinds():
            if kind != "run":
                continue
        else:
            pattern = rule
        if fnmatchcase(text.strip(), pattern.strip()):
            return True
    return False


def _command_pattern(command: Command, workspace: str, cwd: str | None) -> str:
    """The pattern for one simple command: its name and what says what it does, then `*`;
    exactly the command where that would allow more than its program and subcommand, or where
    it names a path outside the workspace."""
    words = command.words
    exact = escape(command.text.strip())
    if not words or any(DYNAMIC in word for word in words):
        return exact
    name = posixpath.basename(words[0])
    if name in EXACT_ONLY or any(_outside(word, workspace, cwd) for word in words[1:]):
        return exact
    rest = words[1:]
    head = [words[0]]
    if name in SUBCOMMAND_TOOLS:
        if not rest or rest[0].startswith("-"):
            return exact  # `git -C /x status`, `npm`: `git*` would allow every git command
        head.append(rest[0])
    elif name in INTERPRETERS:
        if rest[:1] == ["-m"] and len(rest) > 1:
            head += rest[:2]
        elif rest and not rest[0].startswith("-"):
            head.append(rest[0])
        else:
            return exact  # inline code (-c, -e) or nothing to tell it by
    if any(_NEEDS_QUOTES.search(word) for word in head):
        return exact
    more = len(words) > len(head) or command.redirects
    return escape(" ".join(head)) + (" *" if more else "*")


def _outside(word: str, workspace: str, cwd: str | None) -> bool:
    """True when `word`, or an option's value in it (`--git-dir=/x`, `-C/x`), is a path
    outside the workspace (after a `cd` out of it, any word that is not an option)."""
    values = [word]
    if word.startswith("-"):
        values.append(word.partition("=")[2] if "=" in word else word[2:])
    elif cwd is None or not inside(cwd, workspace):
        return True
    for value in values:
        if value.startswith(("/", "~", "..")) and outside_workspace(value, workspace, cwd):
            return True
    return False


def _tool_rule(kind: str, text: str, workspace: str) -> str | None:
    """A general rule for an editor path or a browser visit; None where only exact is safe."""
    if kind == "edit" and text.startswith("/") and inside(text, workspace):
        folder = posixpath.dirname(posixpath.normpath(text))
        return f"edit:{escape(folder.rstrip('/'))}/*"
    if kind == "browse":
        visit = re.match(r"""goto\(\s*['"]https?://[^/'"\s]+""", text)
        if visit:  # the site, then a path or the closing quote: never a longer host name
            return f"browse:{escape(visit.group())}[/\"']*"
    return None
