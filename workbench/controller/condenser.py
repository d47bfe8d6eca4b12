"""The controller's side of condensation: every request kept under the model's context window.

Before each LLM call `Condenser.messages` builds the conversation and counts its tokens
(litellm's counter, each message once: `workbench.llm.tokens`). Past `condense.threshold` of
the window (or when asked: the TUI's "condense now"), older history is condensed down to
`condense.target`: first the outputs of old observations are elided (no LLM call), then, if that
is not enough, the model summarises the oldest part in one extra call with no tools. The task
and the latest `keep_recent_steps` steps stay verbatim; if still too long, the same is tried
keeping only the latest step. A refusal for length (`after_refusal`) teaches the window (the
one the provider names, else 90 % of what was sent) and condenses before the retry.
Each condensation is a `CondensationEvent`; the message builder applies it from then on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from sandbox.truncate import truncate_middle
from workbench.agent.condense import (
    SUMMARY_SYSTEM,
    CondensedView,
    elidable,
    tail_start,
    task_index,
    transcript,
)
from workbench.agent.messages import Message, MessageBuilder, build_messages
from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    CondensationEvent,
    Event,
    MessageEvent,
    ObservationEvent,
)

if TYPE_CHECKING:
    from workbench.llm import LLMError, LLMResponse
    from workbench.llm.tokens import TokenCounter

Reason = Literal["threshold", "refused", "manual"]
Ask = Callable[[list[Message]], Awaitable["LLMResponse"]]
"""One LLM call without tools (the controller's, so stop() and the budget can cut it)."""
_SUMMARY_SHARE = 0.5  # the most of the window a summary request may take
_SUMMARY_CAP_SHARE = 0.15  # the most of the window a summary itself may take
_SUMMARY_PAUSE_EVENTS = 20  # after a failed summary call, events to go before another
_LEARN_FROM_SENT = 0.9  # a refusal naming no window: assume 90 % of what was sent fits


class Condenser:
    """Counts each request's tokens and condenses the history when it nears the window."""

    def __init__(
        self,
        config: Config,
        builder: MessageBuilder,
        tools: list[dict[str, Any]],
        ask: Ask,
        next_id: Callable[[], int],
        emit: Callable[[CondensationEvent], None],
    ) -> None:
        self.settings = config.condense
        self.llm_config = config.llm
        self.builder = builder
        self.tools = tools
        self._ask = ask
        self._next_id = next_id
        self._emit = emit
        self.window = 0
        """The context window in tokens (known after the first request)."""
        self.last_tokens = 0
        """Tokens of the last request built."""
        self.count_s = 0.0
        """Seconds spent counting tokens so far (the per-step overhead of condensation)."""
        self._counter: TokenCounter | None = None
        self._requested = False
        self._task = ""
        self._learned_from_log = False
        self._no_summary_before = 0
        """After a failed summary call: no other one before the history has this many events
        (a summary call that hangs once cost its whole timeout at every step)."""

    def request_now(self) -> None:
        """Condense before the next LLM call, whatever the size of the request."""
        self._requested = True

    async def _ready(self) -> TokenCounter:
        if self._counter is None:
            from workbench.llm import load_litellm
            from workbench.llm.tokens import TokenCounter, context_window

            litellm = await asyncio.to_thread(load_litellm)
            self.window = context_window(self.llm_config, litellm)
            self._counter = TokenCounter(self.llm_config.model, litellm)
        return self._counter

    def _count(self, counter: TokenCounter, messages: Sequence[Message]) -> int:
        started = time.perf_counter()
        tokens = counter.request(messages, self.tools)
        self.count_s += time.perf_counter() - started
        return tokens

    async def messages(self, events: Sequence[Event]) -> list[Message]:
        """The conversation for the next LLM call, condensed first if it is too long."""
        messages = self.builder.build(list(events))
        if not self.settings.enabled:
            return messages
        counter = await self._ready()
        if not self._learned_from_log:  # a continued session keeps the window it learned
            self._learned_from_log = True
            for event in events:
                if isinstance(event, CondensationEvent) and event.reason == "refused":
                    self.window = min(self.window, event.window)
        self.last_tokens = self._count(counter, messages)
        over = self.last_tokens > self.settings.threshold * self.window
        if over or self._requested:
            reason: Reason = "manual" if self._requested and not over else "threshold"
            self._requested = False
            if await self._condense(events, reason, force_event=reason == "manual"):
                messages = self.builder.build(list(events))
                counter.forget_unused(messages)
                self.last_tokens = self._count(counter, messages)
        return messages

    async def after_refusal(self, events: Sequence[Event], error: LLMError) -> list[Message] | None:
        """The provider refused the last request for its length: learn the window, condense,
        and return the messages to retry with (None: condensation is off or cut nothing)."""
        from workbench.llm.errors import stated_window

        if not self.settings.enabled:
            return None
        counter = await self._ready()
        stated = stated_window(error)
        learned = stated if stated else int(self.last_tokens * _LEARN_FROM_SENT)
        if learned > 0:
            self.window = min(self.window, learned)
        if not await self._condense(events, "refused"):
            return None
        messages = self.builder.build(list(events))
        counter.forget_unused(messages)
        self.last_tokens = self._count(counter, messages)
        return messages

    async def _condense(
        self, events: Sequence[Event], reason: Reason, force_event: bool = False
    ) -> bool:
        """Condense towards the target; emit the event. False when nothing could be cut."""
        counter = await self._ready()
        events = list(events)
        before = self.last_tokens
        target = min(self.settings.target, self.settings.threshold) * self.window
        base = self.builder.view
        view = CondensedView(set(base.elided), base.summary, base.summarized_to)
        elided: list[int] = []
        summary = (0, 0)
        usage = [0, 0, 0.0]
        notes: list[str] = []
        tokens = before
        task = task_index(events)
        for keep in sorted({self.settings.keep_recent_steps, 1}, reverse=True):
            end = tail_start(events, keep)
            ids = elidable(events, end, view)
            if ids:
                elided += ids
                view.elided.update(ids)
                tokens = self._tokens(counter, events, view)
                if tokens <= target:
                    break
            if not self.settings.summarize or task is None:
                continue
            if len(events) < self._no_summary_before:
                notes.append("no summary: the last summary call failed a few steps ago")
                break
            covered = [e for e in events[task + 1 : end] if e.id > view.summarized_to]
            if not any(isinstance(e, _SUMMARISED) for e in covered):
                continue
            self._task = getattr(events[task], "text", "")
            text, note = await self._summarise(counter, covered, view.summary, usage)
            if note:
                notes.append(note)
                self._no_summary_before = len(events) + _SUMMARY_PAUSE_EVENTS
                break
            text = truncate_middle(text, max(400, int(self.window * _SUMMARY_CAP_SHARE * 4)))
            prior, unsummarised = (view.summary, view.summarized_to), tokens
            view.summary, view.summarized_to = text, covered[-1].id
            tokens = self._tokens(counter, events, view)
            if tokens >= unsummarised:  # a junk summary once made the request 16 times larger
                view.summary, view.summarized_to = prior
                tokens = unsummarised
                notes.append("the summary was no shorter than what it stood for: not used")
                self._no_summary_before = len(events) + _SUMMARY_PAUSE_EVENTS
                break
            summary = (summary[0] or covered[0].id, covered[-1].id)
            if tokens <= target:
                break
        changed = bool(elided) or summary != (0, 0)
        if not changed and not force_event and not notes:
            return False
        if not changed and not notes:
            notes.append("nothing could be condensed: only the task and the latest steps remain")
        self._emit(
            CondensationEvent(
                id=self._next_id(),
                reason=reason,
                elided=elided,
                summary=view.summary if summary != (0, 0) else "",
                summarized_from=summary[0],
                summarized_to=summary[1],
                tokens_before=before,
                tokens_after=tokens,
                window=self.window,
                prompt_tokens=int(usage[0]),
                completion_tokens=int(usage[1]),
                cost=float(usage[2]),
                note="; ".join(notes),
            )
        )
        return changed

    def _tokens(self, counter: TokenCounter, events: list[Event], view: CondensedView) -> int:
        builder = self.builder
        messages = build_messages(
            builder.system, events, builder.max_observation_chars, builder.scrub, view
        )
        return self._count(counter, messages)

    async def _summarise(
        self,
        counter: TokenCounter,
        covered: list[Event],
        previous: str,
        usage: list[float],
    ) -> tuple[str, str]:
        """(summary, "") from one LLM call without tools, or ("", why not)."""
        from workbench.llm import LLMError

        budget = int(self.window * _SUMMARY_SHARE)
        # What the agent saw is scrubbed of secrets before the model sees it again.
        text = self.builder.scrub(transcript(covered, previous, budget * 4))
        task = f"The task the agent works on:\n{self._task}\n\nEvents to summarise:\n"
        for _ in range(3):  # shrink until the request fits its share of the window
            request: list[Message] = [
                {"role": "system", "content": SUMMARY_SYSTEM},
                {"role": "user", "content": task + text},
            ]
            tokens = counter.request(request)
            if tokens <= budget:
                break
            text = truncate_middle(text, max(200, int(len(text) * budget / tokens * 0.9)))
        try:
            response = await self._ask(request)
        except LLMError as exc:
            return "", f"the summary call failed ({exc.kind}): {exc}"
        usage[0] += response.prompt_tokens
        usage[1] += response.completion_tokens
        usage[2] += response.cost
        summary = response.content.strip()
        if not summary:
            return "", "the summary call returned no text"
        return summary, ""


_SUMMARISED = (ActionEvent, AgentErrorEvent, MessageEvent, ObservationEvent)
"""Events that reach the model, so a summary of them is worth a call."""
