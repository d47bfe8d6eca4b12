"""The agent loop and its parts: one controller runs one session's agent.

- `loop.py`: `Controller`: ask the LLM, turn its tool calls into actions, run them, record
  everything; `event_hub.py`: events numbered, logged, then handed to subscribers;
- `llm_turn.py`: one LLM call shown live; `tool_calls.py`: a reply's calls read into actions;
  `confirming.py`: whether an action may run; `action_output.py`: an action cut short recorded
  as it was;
- `condenser.py`: each request kept under the model's context window; `budget.py`,
  `stuck.py` + `stuck_watch.py`, `run_stop.py`: what ends a run.

UI-free: front ends subscribe to it. Never imports a front end.

Imports: agent, checkpoints, config, llm, security, session, tools.
"""
