"""Session events -> the chat messages sent to the LLM.

Tool calls of one LLM reply form one assistant message; each is answered by a `tool` message
with the same `tool_call_id` (an observation, or the error text of a malformed call). A call
left without an answer (the session stopped in between) gets a short placeholder, because
providers reject a conversation with an unanswered call. Long results keep head and tail.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
    SetEnvAction,
    SetEnvObservation,
)
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    AnyAction,
    AnyObservation,
    Event,
    FinishAction,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    RejectedObservation,
    ThinkAction,
    ThinkObservation,
)

Message = dict[str, Any]
NOT_ANSWERED = "(This call was not carried out: the session stopped before it ran.)"


def truncate(text: str, limit: int) -> str:
    """`text` cut to about `limit` characters, keeping its head and tail around a marker."""
    if limit <= 0 or len(text) <= limit:
        return text
    cut = len(text) - limit
    marker = f"\n[... {cut} characters cut from the middle of this output ...]\n"
    head = max(limit // 2, 1)
    tail = max(limit - head, 1)
    return text[:head] + marker + text[-tail:]


def observation_text(obs: AnyObservation) -> str:
    """What the agent reads as the result of an action."""
    if isinstance(obs, CmdOutputObservation):
        state = "still running" if obs.running else f"exit code {obs.exit_code}"
        meta = f"[{state}" + (f", cwd {obs.cwd}" if obs.cwd else "") + "]"
        parts = [obs.content.rstrip("\n"), meta]
        if obs.note:
            parts.append(f"[{obs.note}]")
        return "\n".join(p for p in parts if p)
    if isinstance(obs, IPythonObservation):
        parts = [obs.content.rstrip("\n")]
        parts += [f"[image saved: {name}]" for name in obs.images]
        if obs.note:
            parts.append(f"[{obs.note}]")
        return "\n".join(p for p in parts if p) or "[no output]"
    if isinstance(obs, BrowseObservation):
        if obs.error:
            return f"[browser error] {obs.error}\nURL: {obs.url}"
        return (
            f"URL: {obs.url}\nTitle: {obs.title}\n\n{obs.content}\n\n"
            f"Accessibility tree:\n{obs.axtree}"
        )
    if isinstance(obs, ErrorObservation):
        return f"ERROR: {obs.content}"
    if isinstance(obs, SetEnvObservation):
        return obs.content or f"Set: {', '.join(obs.names)}"
    if isinstance(obs, FileEditObservation | ThinkObservation | RejectedObservation):
        return obs.content
    raise TypeError(f"unknown observation {type(obs).__name__}")


def tool_arguments(action: AnyAction, risk: str | None) -> dict[str, Any]:
    """The arguments of the tool call that produced `action` (for the assistant message)."""
    args: dict[str, Any]
    if isinstance(action, CmdRunAction):
        args = {"command": action.command}
        if action.is_input:
            args["is_input"] = "true"
        if action.timeout is not None:
            args["timeout"] = action.timeout
    elif isinstance(action, FileEditAction):
        args = action.model_dump(exclude={"kind"}, exclude_none=True)
    elif isinstance(action, IPythonAction):
        args = {"code": action.code}
    elif isinstance(action, BrowseAction):
        args = {"code": action.action}
    elif isinstance(action, ThinkAction):
        return {"thought": action.thought}
    elif isinstance(action, FinishAction):
        return {"message": action.message, "outcome": action.outcome}
    elif isinstance(action, SetEnvAction):  # not offered as a tool; only the user sets env
        return {"env": sorted(action.env)}
    if risk:
        args["security_risk"] = risk
    return args


TextCache = dict[int, tuple[Event, str]]
"""Texts already made from events (tool-call arguments, observation texts), by event id; the
event itself is kept too, so that an id seen again with another event is not mistaken."""


def _arguments_text(action: AnyAction, risk: str | None) -> str:
    return json.dumps(tool_arguments(action, risk))


def _result_text(observation: AnyObservation, limit: int) -> str:
    return truncate(observation_text(observation), limit)


def _cached(cache: TextCache | None, event: Event, make: Callable[[], str]) -> str:
    if cache is None:
        return make()
    hit = cache.get(event.id)
    if hit is not None and hit[0] is event:
        return hit[1]
    text = make()
    cache[event.id] = (event, text)
    return text


def _tool_call(event: ActionEvent | AgentErrorEvent, cache: TextCache | None = None) -> Message:
    if isinstance(event, ActionEvent):
        make = partial(_arguments_text, event.action, event.security_risk)
        arguments = _cached(cache, event, make)
    else:
        arguments = event.arguments
    return {
        "id": event.tool_call_id,
        "type": "function",
        "function": {"name": event.tool_name, "arguments": arguments},
    }


def _tool_result(call_id: str, text: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def build_messages(
    system: str,
    events: Iterable[Event],
    max_observation_chars: int = 0,
    cache: TextCache | None = None,
) -> list[Message]:
    """The conversation for the next LLM call, from the system prompt and the events so far.

    With a `cache` (one per conversation and limit, kept between calls) each event's text is
    made once instead of at every step. Fresh dicts are built every time all the same: the
    caller (litellm) may change the messages it is given.
    """
    messages: list[Message] = [{"role": "system", "content": system}]
    group: Message | None = None  # the assistant message collecting this reply's tool calls
    deferred: list[Message] = []  # answers to malformed calls, placed after the group

    def close_group() -> None:
        nonlocal group
        if group is not None:
            messages.extend(deferred)
            deferred.clear()
            group = None

    for event in events:
        if isinstance(event, ActionEvent | AgentErrorEvent):
            if group is None:
                group = {"role": "assistant", "content": None, "tool_calls": []}
                messages.append(group)
            if isinstance(event, ActionEvent) and event.thought and not group["content"]:
                group["content"] = event.thought
            group["tool_calls"].append(_tool_call(event, cache))
            if isinstance(event, AgentErrorEvent):
                text = f"ERROR: {event.content}"
                deferred.append(_tool_result(event.tool_call_id, text))
        elif isinstance(event, ObservationEvent):
            close_group()
            make = partial(_result_text, event.observation, max_observation_chars)
            text = _cached(cache, event, make)
            messages.append(_tool_result(event.tool_call_id, text))
        elif isinstance(event, MessageEvent):
            close_group()
            role = "assistant" if event.source == "agent" else "user"
            messages.append({"role": role, "content": event.text})
        elif isinstance(event, LLMCallEvent):
            close_group()  # a new reply starts a new assistant message
    close_group()
    return _pair_results(messages)


def _pair_results(messages: list[Message]) -> list[Message]:
    """Give every tool call an answer right after its assistant message; drop orphans."""
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message["role"] == "tool":
            continue  # an answer with no call before it
        out.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            continue
        answers: dict[str, Message] = {}
        # Answers may come after other messages (user notes); collect them up to the next
        # assistant message, which is where the provider needs them all.
        j = i
        between: list[Message] = []
        while j < len(messages) and messages[j]["role"] != "assistant":
            if messages[j]["role"] == "tool":
                answers.setdefault(messages[j]["tool_call_id"], messages[j])
            else:
                between.append(messages[j])
            j += 1
        for call in calls:
            out.append(answers.get(call["id"]) or _tool_result(call["id"], NOT_ANSWERED))
        out.extend(between)
        i = j
    return out
