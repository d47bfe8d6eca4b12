"""Session events -> the chat messages sent to the LLM.

Tool calls of one LLM reply form one assistant message; each is answered by a `tool` message
with the same `tool_call_id` (an observation, or the error text of a malformed call). A call
left without an answer (the session stopped in between) gets a short placeholder, because
providers reject a conversation with an unanswered call. Long results keep head and tail
(`sandbox.truncate.truncate_middle`, the one truncation the sandbox uses too). Condensation
events are applied (`workbench.agent.condense`): elided outputs become a stub, and a summary
stands, right after the task, for the events it covers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from itertools import pairwise
from typing import Any

from sandbox.truncate import truncate_middle
from workbench.agent.condense import ELIDED, SUMMARY_INTRO, CondensedView
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    AnyAction,
    AnyObservation,
    CondensationEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
)
from workbench.tools.registry import REGISTRY

Message = dict[str, Any]
NOT_ANSWERED = "(This call was not carried out: the session stopped before it ran.)"
INVALID_NAME = "invalid_tool_name"
"""Stands in for a malformed call's name that providers refuse to see in the history (OpenAI:
"messages[N].tool_calls[0].function.name: string does not match pattern"); the call's answer
still quotes the name the model wrote."""
_FUNCTION_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def observation_text(obs: AnyObservation) -> str:
    """What the agent reads as the result of an action (its tool words it)."""
    return REGISTRY.for_observation(obs).observation_text(obs)


def tool_arguments(action: AnyAction, risk: str | None) -> dict[str, Any]:
    """The arguments of the tool call that produced `action` (for the assistant message)."""
    tool = REGISTRY.for_action(action)
    args = tool.arguments(action)
    if risk and tool.declares_risk:
        args["security_risk"] = risk
    return args


def _arguments_text(action: AnyAction, risk: str | None) -> str:
    return json.dumps(tool_arguments(action, risk))


def _tool_call(event: ActionEvent | AgentErrorEvent) -> Message:
    name = event.tool_name
    if isinstance(event, ActionEvent):
        arguments = _arguments_text(event.action, event.security_risk)
    else:
        arguments = event.arguments
        if not _FUNCTION_NAME.fullmatch(name):  # providers reject the whole request for it
            name = INVALID_NAME
    return {
        "id": event.tool_call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def _tool_result(call_id: str, text: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


class _Unpaired:
    """Events -> messages in event order, one event at a time; tool answers are paired later.

    The assistant message of the reply being read stays open for more tool calls; answers to
    its malformed calls wait in `deferred` until it closes.
    """

    def __init__(
        self,
        system: str,
        max_observation_chars: int,
        scrub: Callable[[str], str] = str,
        view: CondensedView | None = None,
    ) -> None:
        self.messages: list[Message] = [{"role": "system", "content": system}]
        self._scrub = scrub
        self.assistant_at: list[int] = []  # where in `messages` each assistant message is
        self.group: Message | None = None  # the open assistant message collecting tool calls
        self.deferred: list[Message] = []
        self._limit = max_observation_chars
        self._view = view if view is not None and not view.empty else None
        self._task_seen = False

    def closed(self) -> list[Message]:
        """The messages as they are once the open assistant message closes."""
        return self.messages + self.deferred if self.deferred else self.messages

    def add(self, event: Event) -> None:
        """Take one more event."""
        view = self._view
        if view is not None and self._task_seen and event.id <= view.summarized_to:
            return  # the summary stands for it
        if isinstance(event, ActionEvent | AgentErrorEvent):
            if self.group is None:
                self.group = {"role": "assistant", "content": None, "tool_calls": []}
                self._append_assistant(self.group)
            if isinstance(event, ActionEvent) and event.thought and not self.group["content"]:
                self.group["content"] = event.thought
            self.group["tool_calls"].append(_tool_call(event))
            if isinstance(event, AgentErrorEvent):
                self.deferred.append(_tool_result(event.tool_call_id, f"ERROR: {event.content}"))
        elif isinstance(event, ObservationEvent):
            self._close_group()
            text = observation_text(event.observation)
            if view is not None and event.id in view.elided:
                text = ELIDED.format(chars=len(text))
            # A secret the agent got hold of anyway never goes to the model.
            text = self._scrub(truncate_middle(text, self._limit))
            self.messages.append(_tool_result(event.tool_call_id, text))
        elif isinstance(event, MessageEvent):
            self._close_group()
            if event.source == "agent":
                self._append_assistant({"role": "assistant", "content": event.text})
            else:
                self.messages.append({"role": "user", "content": event.text})
                if event.source == "user" and not self._task_seen:
                    self._task_seen = True
                    if view is not None and view.summary:
                        summary = SUMMARY_INTRO + self._scrub(view.summary)
                        self.messages.append({"role": "user", "content": summary})
        elif isinstance(event, LLMCallEvent):
            self._close_group()  # a new reply starts a new assistant message

    def _append_assistant(self, message: Message) -> None:
        self.assistant_at.append(len(self.messages))
        self.messages.append(message)

    def _close_group(self) -> None:
        if self.group is not None:
            self.messages.extend(self.deferred)
            self.deferred.clear()
            self.group = None


def build_messages(
    system: str,
    events: Iterable[Event],
    max_observation_chars: int = 0,
    scrub: Callable[[str], str] = str,
    view: CondensedView | None = None,
) -> list[Message]:
    """The conversation for the next LLM call, from the system prompt and the events so far
    (condensed as their condensation events say, or as `view` says when given).

    `MessageBuilder` gives the same for a growing event list without going over the old events
    again (each event's text is made once).
    """
    events = list(events)
    view = view if view is not None else CondensedView.of(events)
    unpaired = _Unpaired(system, max_observation_chars, scrub, view)
    for event in events:
        unpaired.add(event)
    return _pair_results(unpaired.closed())


class MessageBuilder:
    """`build_messages` for one conversation whose events only grow.

    Each call takes only the new events and pairs again only the messages from the last
    assistant message on (before it, nothing can change any more). A list that is not the old
    one grown, or new events with a condensation among them, is built from scratch (with the
    condensations applied). Fresh dicts are returned every time: the caller (litellm)
    may change the messages it is given.
    """

    def __init__(
        self, system: str, max_observation_chars: int = 0, scrub: Callable[[str], str] = str
    ) -> None:
        self.system = system
        self.max_observation_chars = max_observation_chars
        self.scrub = scrub
        self._reset()

    def _reset(self, view: CondensedView | None = None) -> None:
        self.view = view or CondensedView()
        """The condensations applied so far."""
        self._unpaired = _Unpaired(self.system, self.max_observation_chars, self.scrub, self.view)
        self._taken = 0  # events taken so far
        self._last: Event | None = None  # the last of them, to tell the same list grown
        self._paired: list[Message] = []  # the paired messages before `_paired_to`
        self._paired_to = 0  # where the part still paired at each call starts
        self._starts_seen = 0  # assistant messages already counted in `_paired_to`

    def build(self, events: list[Event]) -> list[Message]:
        """The conversation for the next LLM call (equal to `build_messages` of `events`)."""
        taken = self._taken
        if len(events) < taken or (taken and events[taken - 1] is not self._last):
            self._reset(CondensedView.of(events))
            taken = 0
        elif any(isinstance(event, CondensationEvent) for event in events[taken:]):
            self._reset(CondensedView.of(events))  # earlier messages change: build again
            taken = 0
        for event in events[taken:]:
            self._unpaired.add(event)
        self._taken = len(events)
        self._last = events[-1] if events else None
        messages = self._unpaired.closed()
        # Every part that ends before the last assistant message is final: pair it once.
        starts = self._unpaired.assistant_at[self._starts_seen :]
        self._starts_seen += len(starts)
        bounds = [self._paired_to, *starts]
        for start, end in pairwise(bounds):
            self._paired.extend(_pair_part(messages[start:end]))
        self._paired_to = bounds[-1]
        return [_fresh(m) for m in (*self._paired, *_pair_part(messages[self._paired_to :]))]


def _fresh(message: Message) -> Message:
    calls = message.get("tool_calls")
    if not calls:
        return dict(message)
    copied = [{**call, "function": dict(call["function"])} for call in calls]
    return {**message, "tool_calls": copied}


def _pair_results(messages: list[Message]) -> list[Message]:
    """Give every tool call an answer right after its assistant message; drop orphans."""
    starts = [i for i, message in enumerate(messages) if message["role"] == "assistant"]
    bounds = [0, *starts, len(messages)]
    out: list[Message] = []
    for start, end in pairwise(bounds):
        out.extend(_pair_part(messages[start:end]))
    return out


def _pair_part(part: list[Message]) -> list[Message]:
    """One assistant message and what follows it up to the next one (or what precedes the
    first): its calls' answers right after it, in call order (a placeholder for a call left
    unanswered), then the other messages; answers with no call before them are dropped."""
    if not part:
        return []
    head = part[0]
    calls = (head.get("tool_calls") or []) if head["role"] == "assistant" else []
    if not calls:
        return [message for message in part if message["role"] != "tool"]
    answers: dict[str, Message] = {}
    others: list[Message] = []
    for message in part[1:]:
        if message["role"] == "tool":
            answers.setdefault(message["tool_call_id"], message)
        else:
            others.append(message)
    paired = [answers.get(call["id"]) or _tool_result(call["id"], NOT_ANSWERED) for call in calls]
    return [head, *paired, *others]
