"""When an action needs a person's yes, and what headless answers when nobody is there.

Order: a `deny` rule rejects without asking; an `ask` rule asks whatever the risk; an `allow`
rule runs without asking; otherwise `security.confirmation` decides ("always", "risky" at or
above `risk_threshold`, "never"). Deny beats ask beats allow. `security.examples` gives texts a
rule must (or, with a leading "!", must not) match; `example_errors` checks them when the
config loads.
A rule is a glob on the action's text, optionally limited to one kind with a prefix:
`run:git status*` (shell command), `edit:/work/*` (editor path), `ipython:*`, `browse:*`, or a
run-time tool's name (matched against its arguments as sorted JSON). Each tool says what its
actions' text and kind are (`Tool.rule_subject`) and how risky they look (`Tool.assess`).

A shell command line is judged command by command, on the same parse the analyzer reads
(`shell.py`): `git status; rm -rf ~` is two commands, and so are lines joined by `&&`, `||`,
`|`, `&`, subshells, loops and newlines. A deny rule matching any command (inside `$( )`,
backticks and `<( )` too; as written or after quote removal, so `r''m -rf ~` is `rm -rf ~`)
rejects the line; allow rules let it through only when every command is allowed, so
`run:git status*` does not let a chained command ride along. A line with a substitution, or
with a part that does not parse, is allowed only by a rule without wildcards that matches it
exactly. A rule with wildcards never approves an action with a finding that must always be
asked about (`risk.ALWAYS_ASK`: outside the workspace, protected paths, credentials, privilege,
persistence, publishing, unreadable code): only a rule naming the exact text does; other HIGH
actions (a signal, a container on the host) a pattern may approve (what the TUI's "always
allow" offers is in `allow_rules.py`).
An action no rule can name (`set_env`, set by the person or read from a log being re-run) is
still judged by its tool: when that says more than LOW, `security.confirmation` decides.
An escalation (a command run outside the sandbox, `tools/host_run.py`) is always asked: a deny
rule still rejects it, but no allow rule approves it, whatever `confirmation` says; headless,
`escalation_decision` refuses it unless `security.allow_escalation` (`--allow-escalation`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from workbench.config.schema import SecurityConfig
from workbench.events import AnyAction, RiskLevel
from workbench.security.analyzer import Assessment, at_least, higher
from workbench.security.shell import DYNAMIC, parse
from workbench.tools.base import RuleSubject
from workbench.tools.registry import REGISTRY

Verdict = Literal["approve", "reject", "stop"]


@dataclass(frozen=True)
class Decision:
    """An answer to a confirmation request and the rule that gave it."""

    verdict: Verdict
    rule: str
    reason: str = ""

    @property
    def approved(self) -> bool:
        """True when the action may run."""
        return self.verdict == "approve"


@dataclass(frozen=True)
class PolicyCheck:
    """What the policy says about one action before anyone is asked."""

    risk: RiskLevel
    reasons: tuple[str, ...]
    """Why: the analyzer's reasons, the risk the agent declared, an ask rule that matched."""
    needs_confirmation: bool
    rule: str
    """The rule or policy that decided, e.g. `deny:rm *` or `confirmation=risky (HIGH)`."""
    always_ask: tuple[str, ...] = ()
    """The analyzer's reasons no pattern may approve (`risk.ALWAYS_ASK`); empty: one may."""
    decision: Decision | None = None
    """Set when a rule decided without asking: a deny rule rejects; an allow rule approves an
    action that would otherwise have been asked about."""

    @property
    def reason(self) -> str:
        """The reasons as one sentence."""
        return "; ".join(self.reasons)


def subject_of(action: AnyAction) -> RuleSubject | None:
    """What rules match for `action` (None for actions that run nothing)."""
    return REGISTRY.for_action(action).rule_subject(action)


def assess(action: AnyAction, workspace: str) -> Assessment:
    """Our own reading of the risk of `action` (its tool's)."""
    return REGISTRY.for_action(action).assess(action, workspace)


_ESCAPED_GLOB = re.compile(r"\[[*?\[]\]")


def _pattern(rule: str, kind: str) -> str | None:
    """The glob of a `[kind:]glob` rule when it applies to actions of `kind`."""
    prefix, sep, pattern = rule.partition(":")
    if sep and prefix in REGISTRY.rule_kinds():
        return pattern.strip() if prefix == kind else None
    return rule.strip()


def _literal(pattern: str) -> bool:
    return not any(c in _ESCAPED_GLOB.sub("", pattern) for c in "*?[")


def _literal_rule(rule: str) -> bool:
    """True for a rule without wildcards (it matches one text only)."""
    prefix, sep, pattern = rule.partition(":")
    return _literal(pattern if sep and prefix in REGISTRY.rule_kinds() else rule)


def _matches(rule: str, subject: RuleSubject) -> bool:
    pattern = _pattern(rule, subject.kind)
    return pattern is not None and fnmatchcase(subject.text.strip(), pattern)


def simple_commands(command: str) -> list[str] | None:
    """The simple commands of a shell line, each as its text; None when it cannot be split
    safely (a substitution runs commands of its own; a part that does not parse)."""
    line = parse(command)
    if line.errors or line.substitutions:
        return None
    return [c.text for c in line.commands if c.words or c.redirects]


def _first(rules: Iterable[str], subject: RuleSubject) -> str | None:
    return next((rule for rule in rules if _matches(rule, subject)), None)


def denied_by(rules: Iterable[str], action: AnyAction) -> str | None:
    """The deny rule that matches `action`, or any one command of a shell line (commands
    inside `$( )`, backticks and `<( )` included)."""
    subject = subject_of(action)
    return None if subject is None else _any_command(list(rules), subject)


def _any_command(rules: list[str], subject: RuleSubject) -> str | None:
    """The first rule matching the whole text, or (shell) any one of its commands."""
    found = _first(rules, subject)
    if found is not None or not subject.shell:
        return found
    for command in parse(subject.text).commands:
        # Both as written and as it runs (`r''m -rf ~` is `rm -rf ~`).
        as_run = " ".join(command.words).replace(DYNAMIC, "_")
        for text in dict.fromkeys((command.text, as_run)):
            found = _first(rules, RuleSubject(subject.kind, text))
            if found is not None:
                return found
    return None


def allowed_by(rules: Iterable[str], action: AnyAction) -> list[str]:
    """The allow rules that let `action` run without asking (one per command of a shell line
    where it takes several); empty when it is not allowed."""
    subject = subject_of(action)
    return [] if subject is None else _every_command(list(rules), subject)


def _every_command(rules: list[str], subject: RuleSubject) -> list[str]:
    """The rules covering the whole text, or (shell) each of its commands; empty if not."""
    if not subject.shell:
        found = _first(rules, subject)
        return [found] if found is not None else []
    whole = [rule for rule in rules if _matches(rule, subject)]
    exact = [rule for rule in whole if _literal(_pattern(rule, subject.kind) or "*")]
    if exact:
        return exact[:1]
    parts = simple_commands(subject.text)
    if parts is None:
        return []
    if len(parts) == 1:
        return whole[:1]
    used: list[str] = []
    for part in parts:
        found = _first(rules, RuleSubject(subject.kind, part))
        if found is None:
            return []
        used.append(found)
    return list(dict.fromkeys(used))


def example_errors(config: SecurityConfig) -> list[str]:
    """Each way a rule fails its own examples (`security.examples`), as a sentence."""
    decisions = {rule: kind for kind in ("allow", "ask", "deny") for rule in getattr(config, kind)}
    errors: list[str] = []
    for rule, texts in config.examples.items():
        kind = decisions.get(rule)
        if kind is None:
            errors.append(f"examples are given for {rule!r}, which is in no allow, ask or deny")
            continue
        prefix, sep, _ = rule.partition(":")
        rule_kind = prefix if sep and prefix in REGISTRY.rule_kinds() else "run"
        shell = rule_kind in REGISTRY.shell_rule_kinds()
        for text in texts:
            wanted = not text.startswith("!")
            subject = RuleSubject(rule_kind, text if wanted else text[1:], shell=shell)
            if kind == "allow":
                matched = bool(_every_command([rule], subject))
            else:
                matched = _any_command([rule], subject) is not None
            if matched != wanted:
                should = "match" if wanted else "not match"
                errors.append(f"{kind} rule {rule!r} should {should} {subject.text!r}")
    return errors


def check(
    action: AnyAction, declared: RiskLevel | None, config: SecurityConfig, workspace: str
) -> PolicyCheck:
    """Assess `action` (higher of declared and analysed risk) and decide whether to ask."""
    found = assess(action, workspace)
    if subject_of(action) is None and found.level == "LOW":
        return PolicyCheck("LOW", (), False, "nothing runs")
    risk = higher(found.level, declared)
    reasons = found.reasons
    if declared is not None and at_least(declared, found.level) and declared != "LOW":
        reasons = (f"the agent declared {declared}", *reasons)
    denied = denied_by(config.deny, action)
    if denied is not None:
        reject = Decision("reject", f"deny:{denied}", f"matches the deny rule {denied!r}")
        return PolicyCheck(risk, reasons, False, reject.rule, found.always_ask(), reject)
    if REGISTRY.for_action(action).escalates:  # outside the sandbox: a person, every time
        rule = "escalation (runs outside the sandbox: always asked)"
        return PolicyCheck(risk, reasons, True, rule, found.always_ask())
    asked = denied_by(config.ask, action)
    if asked is not None:
        why = f"matches the ask rule {asked!r}"
        return PolicyCheck(risk, (*reasons, why), True, f"ask:{asked}", found.always_ask())
    policy = config.confirmation
    would_ask = policy == "always" or (policy == "risky" and at_least(risk, config.risk_threshold))
    allowed = allowed_by(config.allow, action)
    always = found.always_ask()
    if allowed and always and not all(map(_literal_rule, allowed)):
        # A pattern says "actions like this one"; it does not vouch for one the analyzer finds
        # dangerous (`run:npm test*` must not let `npm test > ~/.bashrc` through).
        exact = allowed_by(list(filter(_literal_rule, config.allow)), action)
        if not exact:
            names = ", ".join(repr(rule) for rule in allowed if not _literal_rule(rule))
            why = (
                f"the allow rule {names} is a pattern, and a pattern does not approve a "
                "HIGH-risk action of this kind"
            )
            reasons = (*reasons, why)
        allowed = exact
    if allowed:
        rule = ", ".join(f"allow:{name}" for name in allowed)
        names = ", ".join(map(repr, allowed))
        why = (
            f"matches the allow rule {names}"
            if len(allowed) == 1
            else f"each of its commands matches an allow rule ({names})"
        )
        # Recorded only where someone would have been asked: the log then says which rule
        # let a risky action through.
        approve = Decision("approve", rule, why) if would_ask else None
        return PolicyCheck(risk, reasons, False, rule, always, approve)
    if policy == "always":
        return PolicyCheck(risk, reasons, True, "confirmation=always", always)
    if would_ask:
        rule = f"confirmation=risky (risk {risk} >= {config.risk_threshold})"
        return PolicyCheck(risk, reasons, True, rule, always)
    return PolicyCheck(risk, reasons, False, f"confirmation={policy}", always)


def escalation_decision(action: AnyAction, config: SecurityConfig) -> Decision | None:
    """Headless, for a command that would run outside the sandbox: refused (or stopped, with
    `--on-confirm stop`) unless `--allow-escalation` lets `--on-confirm` decide; None for any
    other action, and for an escalation `--on-confirm` may decide."""
    if not REGISTRY.for_action(action).escalates or config.allow_escalation:
        return None
    if config.headless_on_confirm == "stop":
        return headless_decision("stop")
    return Decision(
        "reject",
        "headless:escalation",
        "rejected: running a command outside the sandbox needs a person's yes, and this "
        "headless run was not started with --allow-escalation",
    )


def headless_decision(verdict: Verdict) -> Decision:
    """The answer headless gives when nobody can be asked (`--on-confirm`)."""
    reasons = {
        "approve": "approved without asking (--on-confirm approve)",
        "reject": "rejected: nobody to ask in headless mode (--on-confirm reject)",
        "stop": "stopped: the action needs confirmation and headless has nobody to ask",
    }
    return Decision(verdict, f"headless:on-confirm={verdict}", reasons[verdict])
