"""Condensation, the pure part: which history a request still carries, and what to cut next.

A session's `CondensationEvent`s fold into a `CondensedView`: the observations whose output is
elided (a one-line stub is sent instead) and the summary that stands for the events after the
task up to `summarized_to`. `MessageBuilder` applies the view, so a resumed session's messages
start from the condensed history, not the raw one. The task (the first user message) and the
latest steps always stay verbatim; cuts fall on step boundaries (just before an `llm_call`
event), so every tool call keeps its answer. The controller's side (counting tokens, the summary
call, the event) is `workbench/controller/condenser.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sandbox.truncate import truncate_middle
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    CondensationEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
)
from workbench.tools.registry import REGISTRY

ELIDE_MIN_CHARS = 300
"""Outputs shorter than this are kept: their stub would save next to nothing."""
ELIDED = (
    "(workbench: this output, {chars} characters, was elided to keep the conversation inside "
    "the context window; run the action again if you need it.)"
)
SUMMARY_INTRO = (
    "(workbench: the conversation from here up to the latest steps was condensed to fit the "
    "context window. Summary of what happened:)\n\n"
)
SUMMARY_SYSTEM = (
    "You condense the history of a software agent's session so it can go on working. Write a "
    "concise summary of the events you are given: what was done, what was learned (paths, "
    "commands, results, errors and their causes), what is finished and what is still open. "
    "Keep exact names and values the agent will need. Write plain text, no preamble."
)
_TRANSCRIPT_OBS_CHARS = 2_000


@dataclass
class CondensedView:
    """What of a session's history is no longer sent verbatim (folded condensation events)."""

    elided: set[int] = field(default_factory=set)
    summary: str = ""
    summarized_to: int = 0

    def add(self, event: CondensationEvent) -> None:
        """Take one more condensation."""
        self.elided.update(event.elided)
        if event.summary:
            self.summary, self.summarized_to = event.summary, event.summarized_to

    @property
    def empty(self) -> bool:
        """True when nothing is condensed."""
        return not self.elided and not self.summary

    @classmethod
    def of(cls, events: Sequence[Event]) -> CondensedView:
        """The view the condensation events among `events` make."""
        view = cls()
        for event in events:
            if isinstance(event, CondensationEvent):
                view.add(event)
        return view


def task_index(events: Sequence[Event]) -> int | None:
    """Where the task (the first user message) is, if there is one."""
    for index, event in enumerate(events):
        if isinstance(event, MessageEvent) and event.source == "user":
            return index
    return None


def tail_start(events: Sequence[Event], keep_steps: int) -> int:
    """The index where the latest `keep_steps` steps begin (a step begins at its `llm_call`
    event); 0 when there are not that many."""
    seen = 0
    for index in range(len(events) - 1, -1, -1):
        if isinstance(events[index], LLMCallEvent):
            seen += 1
            if seen == keep_steps:
                return index
    return 0


def elidable(events: Sequence[Event], end: int, view: CondensedView) -> list[int]:
    """Ids of the observations before index `end` whose output is still sent and long enough
    to be worth eliding."""
    ids = []
    for event in events[:end]:
        if (
            isinstance(event, ObservationEvent)
            and event.id not in view.elided
            and event.id > view.summarized_to
            and len(REGISTRY.for_observation(event.observation).observation_text(event.observation))
            >= ELIDE_MIN_CHARS
        ):
            ids.append(event.id)
    return ids


def transcript(events: Sequence[Event], previous: str, max_chars: int) -> str:
    """The events to summarise as text for the summary call (long outputs cut, the whole at
    most `max_chars`), after the summary they extend."""
    lines = [f"Summary so far:\n{previous}\n"] if previous else []
    for event in events:
        if isinstance(event, MessageEvent):
            lines.append(f"[{event.id}] {event.source}: {event.text}")
        elif isinstance(event, ActionEvent):
            args = REGISTRY.for_action(event.action).arguments(event.action)
            thought = f" ({event.thought})" if event.thought else ""
            lines.append(f"[{event.id}] agent calls {event.tool_name}{thought}: {args}")
        elif isinstance(event, ObservationEvent):
            obs = event.observation
            text = REGISTRY.for_observation(obs).observation_text(obs)
            lines.append(f"[{event.id}] result: {truncate_middle(text, _TRANSCRIPT_OBS_CHARS)}")
        elif isinstance(event, AgentErrorEvent):
            lines.append(f"[{event.id}] malformed call to {event.tool_name}: {event.content}")
    return truncate_middle("\n".join(lines), max_chars)
