"""Confirming risky actions: our risk analysis (`analyzer`) and the policy (`policy`).

The controller calls `policy.check()` for each action; when it says `needs_confirmation`, the
confirmation hook (the TUI's panel, or headless's `--on-confirm`) returns a `Decision`. Each
tool says what rules match for its actions and which analysis applies (`workbench.tools`).
This package imports nothing itself: the tools import the analyzer, and the policy imports
the tools.
"""
