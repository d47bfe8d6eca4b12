"""workbench: the app around the sandbox (docs/architecture.md is the map).

- Sessions: `session` opens one (workspace, runtime, log, LLM client, controller) for either
  front end and reopens a saved one; `controller` runs the agent loop; `events` are what a
  session is made of; `session_log` writes and reads them; `event_hub` fans them out;
  `budget` and `stuck` bound a run; `exit_codes` says how it ended.
- The agent: `tools/` (one module per tool, and the registry the rest asks), `agent/` (parsing
  tool calls, the system prompt, events -> chat messages), `llm/` (the litellm client),
  `security/` (risk analysis and the confirmation policy).
- Settings: `config_schema`, `config`, `config_template`, `paths`.
- Front ends, which never import each other: `cli` (entry point), `headless` +
  `headless_output`, and `tui/` (the only package that imports Textual); `display` is the
  plain-data look of an event that both can use. `replay/` watches, re-runs and continues
  recorded sessions (`workbench replay`), and reads and writes OpenHands trajectories.
- `testing/`: the scripted LLM server, an in-process fake LLM client and a fake TUI backend.
"""
