"""One LLM call of the agent loop, shown live: streamed text, retries, and a notice while the
model takes long (`LLMWaitEvent`, first after `llm.wait_notice_s`, then each time the wait
doubles)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from workbench.config.schema import Config
from workbench.controller.event_hub import EventHub
from workbench.events import LLMActivity, LLMRetryEvent, LLMWaitEvent

if TYPE_CHECKING:
    from workbench.llm import ChatModel, LLMError, LLMResponse

T = TypeVar("T")
Guard = Callable[[Awaitable[Any]], Awaitable[Any]]


class LLMTurn:
    """Asks the model for the next reply on behalf of one controller's event hub."""

    def __init__(self, hub: EventHub, config: Config, guard: Guard) -> None:
        self._hub = hub
        self._config = config
        self._guard = guard

    async def ask(
        self, llm: ChatModel, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> LLMResponse:
        """One LLM call, cut short by the guard (stop, wall-time budget)."""
        hub = self._hub
        notice = self._config.llm.wait_notice_s
        watcher = asyncio.ensure_future(self._announce_wait(notice)) if notice > 0 else None
        model = self._config.llm.model
        started = time.monotonic()
        streamed: list[str] = []

        def on_text(text: str) -> None:
            streamed.append(text)
            hub._activity(LLMActivity("text", model, started, "".join(streamed)))

        def on_retry(error: LLMError, retry: int, wait_s: float) -> None:
            streamed.clear()
            hub._emit(
                LLMRetryEvent(
                    id=hub._next_id(),
                    model=model,
                    retry=retry,
                    wait_s=round(wait_s, 2),
                    error_kind=error.kind,
                    message=str(error),
                )
            )
            hub._activity(LLMActivity("retry", model, started))

        hub._activity(LLMActivity("start", model, started))
        try:
            response: LLMResponse = await self._guard(
                llm.complete(messages, tools, on_text, on_retry)
            )
            return response
        finally:
            if watcher is not None:
                watcher.cancel()
            hub._activity(LLMActivity("end", model, started))

    async def _announce_wait(self, first_s: float) -> None:
        started = time.monotonic()
        at = first_s
        while True:
            await asyncio.sleep(max(0.0, at - (time.monotonic() - started)))
            self._hub._emit(
                LLMWaitEvent(
                    id=self._hub._next_id(),
                    model=self._config.llm.model,
                    waited_s=round(time.monotonic() - started, 1),
                    deadline_s=self._config.llm.deadline_s,
                )
            )
            at *= 2
