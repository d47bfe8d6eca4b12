"""Confirming risky actions: our risk analysis (`analyzer`) and the policy (`policy`).

The controller calls `policy.check()` for each action; when it says `needs_confirmation`, the
confirmation hook (the TUI's panel, or headless's `--on-confirm`) returns a `Decision`. Each
tool says what rules match for its actions and which analysis applies (`workbench.tools`).
The tools import the analyzer, and the policy imports the tools. `home_guard` says what of a
home-like workspace the agent must not change; `net_gate` is the app's side of the sandbox's
network proxy (who may be reached).

Imports: config, tools.
"""
