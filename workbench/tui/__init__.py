"""The Textual front end (the only package that imports Textual).

- `app.py`: `WorkbenchApp` (composition and key bindings), `create_app` (used by the CLI, tests
  and the benchmark), `run_tui`. What the app does, one module a job, each taking the app as
  `host.Host`: `routing.py`, `saved_sessions.py`, `branching.py`, `tool_layout.py`,
  `agent_controls.py`, `answers.py`, `input_box.py`, `dialogs.py`, `palette.py`,
  `key_groups.py`, `hangup.py`; `start_flow.py`, `rewind_flow.py`, `slash_run.py`.
- `backend.py`: the `Backend` protocol the app drives; `bridge.py`: the real one (controller,
  runtime and LLM client) with `confirmations.py`; `commands.py`: the command palette's entries.
- `cells.py`: events as compact cells (no Textual); `messages.py`: the app's messages.
- `themes.py`: theme files (TOML) to Textual themes; `app.tcss`: the app's CSS.
- `widgets/`: panes, status bar, input box, confirmation panel; `screens/`: settings, sessions.

Imports: checkpoints, config, controller, eval, llm, replay, security, session, tools.

"""
