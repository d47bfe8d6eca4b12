"""What the agent reads when an action was not run: who or what refused it, the risk and the
analyzer's reasons, the rule that decided, and what it can do instead.

The model cannot adapt to "rejected" alone: told that `.git/config` is protected it can ask
the person; told that a path lies outside the workspace it can pick one inside. The same text
is the observation in the log, so headless output and the TUI show it too.
"""

from __future__ import annotations

from workbench.security.policy import Decision, PolicyCheck

# A fragment of an analyzer reason, and what the agent can do instead (first match wins per
# fragment; at most `_MAX_HINTS` are given, in the order the reasons came).
_HINTS: tuple[tuple[str, str], ...] = (
    (
        "outside the sandbox",
        "do it inside the sandbox if you can; if it truly needs the host, finish and tell the "
        "person the exact command and why, so they can run it themselves",
    ),
    (
        "names it writes are not known",
        "unpack into a new folder of its own (unzip -d DIR, tar -C DIR -xf), look at what it "
        "holds, then move what you need",
    ),
    (
        "protected path",
        "protected paths (.git/config, .git/hooks/, .git/info/, .gitmodules, .workbench/) are "
        "the person's to change: ask them to make that change on the host, and leave those "
        "paths alone",
    ),
    ("outside the workspace", "use a path inside the workspace instead"),
    ("recursive forced delete", "delete the files you mean by name, without -rf"),
    ("do not parse", "write the command so that every part parses, or split it into simpler ones"),
    (
        "known only when it runs",
        "write the command out in full, without $(…) or variables where a command name or a "
        "path belongs",
    ),
    ("piped into", "save the code to a file in the workspace, read it, then run that file"),
    ("downloaded from the network", "download to a file in the workspace, read it, then run it"),
    ("credentials", "do not read secrets; ask the person for what you need from them"),
    ("environment", "do not read or send environment variables; they hold secrets"),
    (
        "git run a program",
        "run git without settings that start programs (core.pager, core.fsmonitor, hooks, "
        "diff.external, include.path)",
    ),
    ("global git config", "leave the global git config alone; use options on the command"),
    ("publish", "publishing is the person's decision: say what is ready and how to publish it"),
    ("signal", "stop only processes you started yourself (kill %1, kill $!)"),
    ("root", "run it without sudo or su; if it really needs root, say so to the person"),
    ("persistence", "do not change files that make things run later (rc files, cron, hooks)"),
    ("upload", "do not send files out of the workspace"),
    ("another machine", "do not copy files to or from other machines"),
    ("network", "do not open network connections of your own"),
    ("host", "leave the host's services, mounts and containers alone"),
    ("installs packages", "if the package is needed, say which and why"),
)
_MAX_HINTS = 3


def refusal_text(verdict: PolicyCheck, decision: Decision) -> str:
    """The observation for an action `decision` refused after the policy said `verdict`."""
    lines = [f"This action was not run: {decision.reason or decision.rule}."]
    reasons = [r for r in verdict.reasons if not r.startswith(("matches the", "the allow rule"))]
    if reasons:
        lines.append(f"Risk {verdict.risk}: {'; '.join(reasons)}.")
    lines.append(f"Decided by: {_decided_by(verdict, decision)}.")
    lines.append(f"What you can do: {_what_next(verdict, decision)}")
    return "\n".join(lines)


def _decided_by(verdict: PolicyCheck, decision: Decision) -> str:
    """The rule that decided, and why anyone was asked."""
    if decision.rule.startswith("deny:"):
        return f"the deny rule {decision.rule[5:]!r} in the security config"
    rule = f"the ask rule {verdict.rule[4:]!r}" if verdict.rule.startswith("ask:") else verdict.rule
    asked = f"{rule}, so it needed a yes"
    pattern = [r for r in verdict.reasons if r.startswith("the allow rule")]
    if pattern:  # an allow rule matched, but a pattern does not approve a HIGH action
        asked += f" ({pattern[0]})"
    if decision.rule.startswith("headless:"):
        return f"{asked}, and headless answers {decision.rule.partition('=')[2]!r} (--on-confirm)"
    if decision.rule == "user":
        return f"{asked}, and the person said no"
    return f"{asked}; {decision.rule}"


def _what_next(verdict: PolicyCheck, decision: Decision) -> str:
    """Advice: from the analyzer's reasons, then by who refused."""
    hints: list[str] = []
    for reason in verdict.reasons:
        for fragment, hint in _HINTS:
            if fragment in reason.lower() and hint not in hints:
                hints.append(hint)
                break
    if any(r.startswith("the agent declared") for r in verdict.reasons) and len(hints) == 0:
        hints.append(
            "you declared this risky yourself; if it only reads or changes files in the "
            "workspace, declare security_risk LOW"
        )
    said = decision.reason.partition("the person said: ")[2]
    if decision.rule.startswith("deny:"):
        who = "a deny rule refuses this every time: do not send it again; do it another way"
    elif decision.rule.startswith("headless:"):
        who = (
            "nobody can approve it in this run: do not send it again; do it another way, or "
            "finish and tell the person what to run"
        )
    elif said:
        who = f"do what the person said ({said})"
    else:
        who = (
            "do not send it again as it is: ask the person (reply without a tool call) what "
            "they want instead, or do it another way"
        )
    return "; ".join([*hints[:_MAX_HINTS], who]) + "."
