"""workbench: the app around the sandbox (docs/architecture.md is the map).

Packages by capability, each saying in its docstring what it owns and what it may import
(`tests/test_package_rules.py` holds them to it):

- `session/`: opening a session, its log, finding, stats, resume; `controller/`: the agent
  loop; `checkpoints/`: the workspace's files over a session; `config/`: settings;
- the agent: `tools/` (one module per tool, and the registry the rest asks), `agent/` (parsing
  tool calls, the system prompt, events -> chat messages), `llm/` (the litellm client),
  `security/` (risk analysis and the confirmation policy);
- front ends, which never import each other: `cli/` (the entry point and its subcommands),
  `headless/`, and `tui/` (the only package that imports Textual); `replay/` watches, re-runs
  and continues recorded sessions;
- `testing/`: the scripted LLM server, an in-process fake LLM client and a fake TUI backend.

What everything shares stays at the top: `events` (what a session is made of), `paths`,
`exit_codes`, `display` and `event_lines` (how an event looks, as plain data), `safe_text`.
"""
