"""A session as a thing that is kept: opening one, its log, finding it, its figures and title.

- `opening.py`: opening a session for both front ends (runtime, log, LLM client, controller),
  and reopening a saved one; the only module that creates them.
- `log.py`: the append-only JSONL log, readable after a crash; `steps.py`: the one step
  numbering read from it; `find.py`: a saved session from what a person types; `summaries.py`
  (a log's header, first task, end and damage), `index.py` (those kept in `.index.json`, so a
  list reads only the logs that changed), `stats.py` and `title.py`: what a list of sessions
  shows; `resume.py`: a saved session read back into a conversation (`--resume`, `--last`,
  branching).
- `start_checks.py`: what is settled before a session starts (the workspace of a resumed
  session, a home-like workspace, the project config's trust); `python_env_store.py`: where
  the workspace's agent Python env is kept.

Never imports a front end (`cli`, `headless`, `tui`) nor `replay`.

Imports: agent, checkpoints, config, controller, llm, security, tools.
"""
