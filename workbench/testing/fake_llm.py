"""`FakeLLM`: an in-process stand-in for `LLMClient` that answers from a script at once.

For tests and benchmarks that drive the real `Controller` without litellm or HTTP. A reply has
the scripted server's step shape, limited to what needs no wire (`text`, `tool_calls` with
`name`, `arguments` as an object or raw text, optional `id`; `usage`), so one script serves
both; an `LLMError` in the script is raised by its call. Missing token counts are estimated as
characters / 4, as the server does (from the messages' text here, not their JSON).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from workbench.llm import LLMError, LLMResponse, LLMTotals, RetryHook, ToolCall
from workbench.testing.scripts import ScriptError, ToolCallSpec, Usage

if TYPE_CHECKING:
    from workbench.llm import ChatModel

Reply = Mapping[str, Any] | LLMError
_KEYS = frozenset({"text", "tool_calls", "usage"})


class FakeLLMExhausted(RuntimeError):
    """A call came after the last scripted reply and there is no default."""


@dataclass(frozen=True)
class FakeRequest:
    """One `complete()` call as the fake received it."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


@dataclass(frozen=True)
class _Planned:
    content: str
    calls: list[ToolCallSpec]
    usage: Usage


class FakeLLM:
    """Answers each `complete()` with the next scripted reply, at once; records every call."""

    def __init__(
        self,
        replies: Iterable[Reply],
        *,
        default: Reply | None = None,
        model: str = "fake/model",
    ) -> None:
        self.model = model
        self.requests: list[FakeRequest] = []
        self.calls = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._replies = [_plan(reply, f"reply {n}") for n, reply in enumerate(replies, 1)]
        self._default = None if default is None else _plan(default, "the default reply")

    @property
    def totals(self) -> LLMTotals:
        """(prompt_tokens, completion_tokens, cost) summed over the answered calls; cost is 0."""
        return LLMTotals(self._prompt_tokens, self._completion_tokens, 0.0)

    @property
    def remaining(self) -> int:
        """Scripted replies not used yet (the default not counted)."""
        return max(0, len(self._replies) - len(self.requests))

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: Callable[[str], None] | None = None,
        on_retry: RetryHook | None = None,
    ) -> LLMResponse:
        """The next reply (its LLMError raised, never retried); FakeLLMExhausted after the
        last one."""
        self.requests.append(FakeRequest(list(messages), tools))
        number = len(self.requests)
        await asyncio.sleep(0)  # a real call yields to the loop; so does this one
        reply = self._replies[number - 1] if number <= len(self._replies) else self._default
        if reply is None:
            raise FakeLLMExhausted(_exhausted(number, len(self._replies), messages))
        if isinstance(reply, LLMError):
            raise LLMError(reply.kind, str(reply), status=reply.status)
        calls = [
            ToolCall(spec.id or f"call_{number}_{i}", spec.name, spec.arguments_text())
            for i, spec in enumerate(reply.calls)
        ]
        prompt = reply.usage.prompt_tokens
        if prompt is None:
            prompt = max(1, sum(len(str(m.get("content") or "")) for m in messages) // 4)
        completion = reply.usage.completion_tokens
        if completion is None:
            produced = reply.content + "".join(c.name + c.arguments for c in calls)
            completion = max(1, len(produced) // 4)
        if on_text is not None and reply.content:
            on_text(reply.content)
        self.calls += 1
        self._prompt_tokens += prompt
        self._completion_tokens += completion
        return LLMResponse(
            content=reply.content,
            tool_calls=calls,
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=0.0,
            latency_ms=0.0,
            retries=0,
            finish_reason="tool_calls" if calls else "stop",
        )


def _plan(reply: Reply, where: str) -> _Planned | LLMError:
    """Check one scripted reply and parse it once, before any call."""
    if isinstance(reply, LLMError):
        return reply
    if not isinstance(reply, Mapping):
        raise ScriptError(f"{where}: a reply is a mapping or an LLMError, not {reply!r}")
    unknown = set(reply) - _KEYS
    if unknown:
        raise ScriptError(
            f"{where}: FakeLLM takes only {sorted(_KEYS)}; not {sorted(unknown)} (errors, "
            "delays and streaming need the scripted server, workbench.testing.llm_server)"
        )
    try:
        calls = [ToolCallSpec.model_validate(call) for call in reply.get("tool_calls", [])]
        usage = Usage.model_validate(reply.get("usage", {}))
    except ValidationError as exc:
        raise ScriptError(f"{where}: {exc}") from None
    return _Planned(str(reply.get("text") or ""), calls, usage)


def _exhausted(number: int, scripted: int, messages: list[dict[str, Any]]) -> str:
    last = messages[-1] if messages else {}
    said = str(last.get("content") or "")[:200]
    return (
        f"FakeLLM got call {number}, but its script has {scripted} replies and no default; "
        f"the last message ({last.get('role', '?')}) was {said!r}"
    )


if TYPE_CHECKING:
    _satisfies_the_protocol: ChatModel = FakeLLM([])
