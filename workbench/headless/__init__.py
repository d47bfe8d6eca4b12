"""Headless mode, a front end: one task run with no one watching (`workbench --headless`).

- `runner.py`: the run, its signals and its exit code;
- `output.py`: what it prints, as human-readable progress or versioned JSON lines
  (docs/headless.md).

Never imports the TUI, and the TUI never imports it.

Imports: agent, config, controller, llm, session, tools.
"""
