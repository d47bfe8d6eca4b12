"""The system prompt: who the agent is, where it works, its tools (each tool gives its line, and
the IPython tool the skills in its kernel) and the rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.tools.base import Tool

_INTRO = """\
You are an engineer working in a sandbox on the user's behalf. You act only through the tools \
you are given; the user sees each call you make and its result.

Your workspace is {workspace}. Create and edit files there and use absolute paths with the \
editor. Work step by step: look before you change things, make one change at a time, and check \
the result by running it. When the task is done and checked, call `finish` with a short account \
of what you did. If you cannot go on, call `finish` with outcome "gave_up" and say why; do not \
stop with a plain reply, because nobody may be there to answer it."""

_RULES = """\
Rules:
* Declare `security_risk` honestly on every call that has it; risky calls may need the \
user's approval, and a refused call is not run.
* Stay inside the workspace unless the task needs otherwise; do not delete what you did not \
create.
* Do not print or store secrets such as API keys; do not push, publish or upload anything \
unless asked.
* If the same attempt fails twice, change your approach instead of repeating it."""


_PROJECT = """\
Project instructions (from the repository; follow them unless they conflict with the rules \
above or the user's request):

{text}"""


def system_prompt(
    workspace: str, tools: Sequence[Tool[Any, Any]], instructions: str = "", world: str = ""
) -> str:
    """The system prompt for an agent in `workspace` offered `tools`, with what its sandbox
    allows (`world`, `workbench.agent.world`) and the project's `instructions`
    (`workbench.agent.instructions`) last."""
    parts = [_INTRO.format(workspace=workspace)]
    lines = [f"* {tool.prompt_line or f'`{tool.name}`'}" for tool in tools]
    parts.append("Your tools:\n" + "\n".join(lines))
    parts += [extra for tool in tools if (extra := tool.prompt_extra())]
    if world:
        parts.append(world)
    parts.append(_RULES)
    if instructions:
        parts.append(_PROJECT.format(text=instructions))
    return "\n\n".join(parts)
