"""The Textual front end (the only package that imports Textual).

- `app.py`: `WorkbenchApp`, `create_app` (used by the CLI, tests and the benchmark), `run_tui`.
- `bridge.py`: the `Backend` that drives the controller, the runtime and the LLM client.
- `cells.py`: events as compact cells (no Textual); `messages.py`: the app's messages.
- `themes.py`: theme files (TOML) to Textual themes; `app.tcss`: the app's CSS.
- `widgets/`: panes, status bar, input box, confirmation panel; `screens/`: settings, sessions.
"""
