"""Confirming risky actions: our risk analysis (`analyzer`) and the policy (`policy`).

The controller calls `check()` for each action; when it says `needs_confirmation`, the
confirmation hook (the TUI's panel, or headless's `--on-confirm`) returns a `Decision`.
"""

from workbench.security.analyzer import Assessment, analyze, at_least, higher
from workbench.security.policy import Decision, PolicyCheck, Verdict, check, headless_decision

__all__ = [
    "Assessment",
    "Decision",
    "PolicyCheck",
    "Verdict",
    "analyze",
    "at_least",
    "check",
    "headless_decision",
    "higher",
]
