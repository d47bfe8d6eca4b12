"""The Textual front end (the only package that imports Textual).

- `app.py`: `WorkbenchApp`, `create_app` (used by the CLI, tests and the benchmark), `run_tui`.
- `backend.py`: the `Backend` protocol the app drives; `bridge.py`: the real one (controller,
  runtime and LLM client); `commands.py`: the command palette's entries.
- `cells.py`: events as compact cells (no Textual); `messages.py`: the app's messages.
- `themes.py`: theme files (TOML) to Textual themes; `app.tcss`: the app's CSS.
- `widgets/`: panes, status bar, input box, confirmation panel; `screens/`: settings, sessions.

Imports: checkpoints, config, controller, eval, llm, replay, security, session, tools.

"""
