"""`workbench replay SESSION|FILE`: a recorded session watched, re-run or continued.

- `recording.py`: what is replayed (a saved session by id or prefix, a session `.jsonl`, or an
  OpenHands trajectory) as one list of our events, and the steps they fall in;
- `openhands.py`: OpenHands V0 trajectories read into our events; `openhands_export.py`
  writes ours out as one;
- `watch.py`: the events printed again as a live run prints them (no LLM, no sandbox);
- `normalise.py`: what always differs between two runs, masked before comparing;
- `compare.py`: how one re-run result is judged against the recorded one, and why (text
  masked, images by content, an OpenHands edit by the file it left);
- `start_state.py`: an empty re-run workspace filled with the session's checkpoint 0;
- `rerun.py`: the recorded actions run again in a fresh sandbox, results compared;
  `report.py` prints how each step went (a diff, or a JSON line per difference);
- `resume.py`: `--continue-from N`, the first N steps re-run, then a live model goes on;
- `timeline.py`: a player's position (by event, by step, by jump), for the TUI;
- the command line is `workbench/cli/replay.py`.

The TUI's player is `workbench/tui/replay.py` and its re-run view `workbench/tui/rerun.py`;
neither imports the headless printers.

Imports: agent, checkpoints, config, headless, llm, security, session, tools.
"""
