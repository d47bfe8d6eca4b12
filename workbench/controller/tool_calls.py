"""A reply's tool calls read into actions: each call parsed against the offered tools, a call
that cannot be read answered with an `AgentErrorEvent`, ids made unique."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench.agent.boundary import echo
from workbench.agent.parse import ToolCallError, parse_tool_call
from workbench.controller.event_hub import EventHub
from workbench.events import ActionEvent, AgentErrorEvent, MessageEvent

if TYPE_CHECKING:
    from workbench.llm import ToolCall
    from workbench.tools.registry import AnyTool


def read_tool_calls(
    hub: EventHub,
    content: str,
    calls: list[ToolCall],
    tools: list[AnyTool],
    soft_timeout_s: float,
) -> tuple[list[ActionEvent], list[bool]]:
    """Emit an action (or an error) per call; return the actions and, per call, whether it
    could be read. The reply's text is the first action's thought, or a message of its own
    when no call could be read."""
    thought = content
    actions: list[ActionEvent] = []
    readable: list[bool] = []
    seen: set[str] = set()
    for index, call in enumerate(calls):
        call_id = call.id
        if not call_id or call_id in seen:  # both sides of the pair must carry one unique id
            call_id = f"{call_id or 'call'}_{hub._next_id()}_{index}"
        seen.add(call_id)
        try:
            parsed = parse_tool_call(call.name, call.arguments, tools, soft_timeout_s)
        except ToolCallError as exc:
            readable.append(False)
            hub._emit(
                AgentErrorEvent(
                    id=hub._next_id(),
                    tool_name=call.name,
                    tool_call_id=call_id,
                    arguments=echo(call.arguments),
                    content=str(exc),
                )
            )
            continue
        readable.append(True)
        event = ActionEvent(
            id=hub._next_id(),
            tool_name=call.name,
            tool_call_id=call_id,
            action=parsed.action,
            thought=thought,
            security_risk=parsed.security_risk,
        )
        thought = ""
        actions.append(event)
        hub._emit(event)
    if thought and not actions:  # only malformed calls: keep the text the agent wrote
        hub._emit(MessageEvent(id=hub._next_id(), source="agent", text=thought))
    return actions, readable
