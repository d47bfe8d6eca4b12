"""The agent side of a session: how the LLM is talked to and how its replies are read.

- `parse`: a tool call -> an action (checked against the tool's schema), or an error text the
  agent can act on.
- `prompt`: the system prompt (workspace, the offered tools' lines and sections).
- `messages`: session events -> the chat messages sent to the LLM.

The tools themselves live in `workbench.tools`, one module each.

Imports: config, llm, tools.
"""
