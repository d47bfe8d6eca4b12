"""The agent side of a session: what the LLM is offered and how its replies are read.

- `tools`: the tool schemas (function calling) with their descriptions.
- `parse`: a tool call -> an action, or an error text the agent can act on.
- `prompt`: the system prompt (workspace, tools, agent skills in the kernel).
- `messages`: session events -> the chat messages sent to the LLM.
"""
