"""The system prompt: who the agent is, where it works, its tools and the skills in its kernel."""

from __future__ import annotations

from collections.abc import Sequence

_INTRO = """\
You are an engineer working in a sandbox on the user's behalf. You act only through the tools \
you are given; the user sees each call you make and its result.

Your workspace is {workspace}. Create and edit files there and use absolute paths with the \
editor. Work step by step: look before you change things, make one change at a time, and check \
the result by running it. When the task is done and checked, call `finish` with a short account \
of what you did. If you cannot go on, call `finish` with outcome "gave_up" and say why; do not \
stop with a plain reply, because nobody may be there to answer it."""

_TOOL_LINES = {
    "execute_bash": "`execute_bash`: one command at a time in a persistent bash shell.",
    "str_replace_editor": "`str_replace_editor`: view, create and edit files (absolute paths).",
    "execute_ipython_cell": "`execute_ipython_cell`: Python in a persistent IPython kernel.",
    "browser": "`browser`: drive a web browser with BrowserGym actions.",
    "think": "`think`: write down reasoning; nothing runs.",
    "finish": "`finish`: end the task with a message (outcome success or gave_up).",
}

_RULES = """\
Rules:
* Declare `security_risk` honestly on every call that has it; risky calls may need the \
user's approval, and a refused call is not run.
* Stay inside the workspace unless the task needs otherwise; do not delete what you did not \
create.
* Do not print or store secrets such as API keys; do not push, publish or upload anything \
unless asked.
* If the same attempt fails twice, change your approach instead of repeating it."""


def skills_text() -> str:
    """The documentation of the agent skills in the kernel, or "" when the sandbox has none."""
    try:
        from sandbox.skills import describe_skills  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return ""
    try:
        return str(describe_skills()).strip()
    except Exception:  # a broken skills module must not stop the agent from starting
        return ""


def system_prompt(workspace: str, tool_names: Sequence[str], skills: str | None = None) -> str:
    """The system prompt for an agent in `workspace` offered `tool_names`."""
    parts = [_INTRO.format(workspace=workspace)]
    lines = [f"* {_TOOL_LINES.get(name, f'`{name}`')}" for name in tool_names]
    parts.append("Your tools:\n" + "\n".join(lines))
    if "execute_ipython_cell" in tool_names:
        doc = skills_text() if skills is None else skills
        if doc:
            parts.append(
                "Agent skills: these helper functions are already imported in the IPython "
                "kernel (call them with `execute_ipython_cell`):\n" + doc
            )
    parts.append(_RULES)
    return "\n\n".join(parts)
