"""The `workbench` command: the argument parser and one module per subcommand.

- `main.py`: the entry point and its parser: the TUI (opened by name, so a headless run never
  loads Textual), `--headless`, and the subcommands below;
- `sessions.py` (+ `transcript.py`): `workbench sessions list|show|delete|export`;
- `replay.py`: `workbench replay`; `policy.py`: `workbench policy`;
- `checkpoints.py`, `rewind.py`, `diff.py` (+ `checkpoint_common.py`): a session's steps,
  undone.

Imports: agent, checkpoints, config, eval, headless, replay, security, session, tools.

"""
