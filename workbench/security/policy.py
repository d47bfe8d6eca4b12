"""When an action needs a person's yes, and what headless answers when nobody is there.

Order: a `deny` rule rejects without asking; an `allow` rule runs without asking; otherwise
`security.confirmation` decides ("always", "risky" at or above `risk_threshold`, "never").
A rule is a glob on the action's text, optionally limited to one kind with a prefix:
`run:git status*` (shell command), `edit:/work/*` (editor path), `ipython:*`, `browse:*`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from sandbox.protocol import BrowseAction, CmdRunAction, FileEditAction, IPythonAction
from workbench.config_schema import SecurityConfig
from workbench.events import AnyAction, FinishAction, RiskLevel, ThinkAction
from workbench.security.analyzer import analyze, at_least, higher

Verdict = Literal["approve", "reject", "stop"]
RULE_KINDS = ("run", "edit", "ipython", "browse")


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
    reason: str
    needs_confirmation: bool
    rule: str
    """The rule or policy that decided, e.g. `deny:rm *` or `confirmation=risky (HIGH)`."""
    decision: Decision | None = None
    """Set when a rule decided without asking (a deny rule rejects)."""


def action_text(action: AnyAction) -> tuple[str, str]:
    """(kind, text) that rules match against; kind "" for actions that run nothing."""
    if isinstance(action, CmdRunAction):
        return "run", action.command
    if isinstance(action, FileEditAction):
        return "edit", action.path
    if isinstance(action, IPythonAction):
        return "ipython", action.code
    if isinstance(action, BrowseAction):
        return "browse", action.action
    return "", ""


def rule_matches(rule: str, action: AnyAction) -> bool:
    """True when the `[kind:]glob` rule matches `action`."""
    kind, text = action_text(action)
    if not kind:
        return False
    prefix, sep, pattern = rule.partition(":")
    if sep and prefix in RULE_KINDS:
        if prefix != kind:
            return False
    else:
        pattern = rule
    return fnmatchcase(text.strip(), pattern.strip())


def first_match(rules: Iterable[str], action: AnyAction) -> str | None:
    """The first rule that matches `action`, if any."""
    return next((rule for rule in rules if rule_matches(rule, action)), None)


def check(
    action: AnyAction, declared: RiskLevel | None, config: SecurityConfig, workspace: str
) -> PolicyCheck:
    """Assess `action` (higher of declared and analysed risk) and decide whether to ask."""
    if isinstance(action, ThinkAction | FinishAction):
        return PolicyCheck("LOW", "", False, "nothing runs")
    found = analyze(action, workspace)
    risk = higher(found.level, declared)
    reasons = list(found.reasons)
    if declared is not None and at_least(declared, found.level) and declared != "LOW":
        reasons.insert(0, f"the agent declared {declared}")
    reason = "; ".join(reasons)
    denied = first_match(config.deny, action)
    if denied is not None:
        decision = Decision("reject", f"deny:{denied}", f"matches the deny rule {denied!r}")
        return PolicyCheck(risk, reason, False, decision.rule, decision)
    allowed = first_match(config.allow, action)
    if allowed is not None:
        return PolicyCheck(risk, reason, False, f"allow:{allowed}")
    policy = config.confirmation
    if policy == "always":
        return PolicyCheck(risk, reason, True, "confirmation=always")
    if policy == "risky" and at_least(risk, config.risk_threshold):
        rule = f"confirmation=risky (risk {risk} >= {config.risk_threshold})"
        return PolicyCheck(risk, reason, True, rule)
    return PolicyCheck(risk, reason, False, f"confirmation={policy}")


def headless_decision(verdict: Verdict) -> Decision:
    """The answer headless gives when nobody can be asked (`--on-confirm`)."""
    reasons = {
        "approve": "approved without asking (--on-confirm approve)",
        "reject": "rejected: nobody to ask in headless mode (--on-confirm reject)",
        "stop": "stopped: the action needs confirmation and headless has nobody to ask",
    }
    return Decision(verdict, f"headless:on-confirm={verdict}", reasons[verdict])
