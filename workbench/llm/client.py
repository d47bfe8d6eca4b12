"""The LLM client: one `complete()` call per agent step, on litellm, with our own retry loop.

litellm is imported lazily and quietly (`litellm_load.py`); `prime_litellm()` does the lazy
imports of a first call ahead of time.
OpenAI-style models (`openai/...`) go through litellm's own HTTP handler, as most other
providers do, instead of the OpenAI SDK: the SDK walks every request's whole message history
against its type hints (`_transform_recursive`), which cost 10-25 ms per call by step 50 of a
session and grows with every step. `EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER=false` in the
environment restores the SDK path.
Retries (429, 5xx, timeouts, dropped connections) are ours, with exponential backoff, so they
are counted per call (`LLMResponse.retries`) and can be shown as they happen (`on_retry`). A
refused connection has its own, shorter policy (`connect_retries`), and `deadline_s` bounds a
whole call, retries and waits included. A reply without usage (or with none worth the name)
is counted by litellm's tokenizer, or at four characters a token, and marked `estimated`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from workbench.config.schema import LLMConfig
from workbench.llm.errors import LLMError, classify, retry_after_s
from workbench.llm.litellm_load import (
    SDK_PROVIDERS,
    import_openai_resources,
    load_litellm,
    loaded_litellm,
    warm_up,
)

__all__ = [
    "LLMClient",
    "LLMResponse",
    "LLMTotals",
    "RetryHook",
    "ToolCall",
    "load_litellm",
    "prime_litellm",
    "warm_up",
]

RetryHook = Callable[[LLMError, int, float], None]
"""Called before each retry with the error, the retry number (1-based) and the wait in s."""


# litellm reads this on every call: `openai/` models skip the OpenAI SDK (see above).
def prime_litellm(config: LLMConfig, tools: list[dict[str, Any]] | None = None) -> None:
    """Do the lazy imports of litellm's first call now (blocking: call from a thread).

    One offline mock completion with the client's own arguments (and `tools`, which pull in
    more), then the tokenizer litellm's HTTP handler loads on its first request, and for the
    providers that still use the OpenAI SDK (Azure) its chat resources. Without this the first
    real call pays up to ~1 s. Failures are ignored: this is an optimisation only.
    """
    litellm = load_litellm()
    try:
        kwargs = LLMClient(config)._kwargs([{"role": "user", "content": "warm-up"}], tools)
        kwargs["model"] = kwargs.get("model") or "openai/warm-up"
        litellm.completion(**kwargs, mock_response="ok")
        importlib.import_module("litellm._service_logger")
        _ = importlib.import_module("litellm.main").encoding  # loads and caches the tokenizer
        if config.model.split("/", 1)[0] in SDK_PROVIDERS:
            import_openai_resources()
    except Exception:
        logging.getLogger(__name__).debug("priming litellm failed", exc_info=True)


@dataclass(frozen=True)
class ToolCall:
    """One function call the model asked for; `arguments` is the raw JSON text, unparsed."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class LLMResponse:
    """One completed call: the reply, its tokens, cost and time (retries included)."""

    content: str
    tool_calls: list[ToolCall]
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    latency_ms: float
    retries: int
    finish_reason: str = ""
    estimated: bool = False
    """True when the provider reported no usage and the tokens are our estimate."""


class LLMTotals(NamedTuple):
    """Session totals over every successful call."""

    prompt_tokens: int
    completion_tokens: int
    cost: float


@dataclass
class _Attempts:
    """The retries of one call so far, by policy, and the last failure."""

    others: int = 0
    refusals: int = 0
    last: LLMError | None = None

    @property
    def retries(self) -> int:
        """All retries so far."""
        return self.others + self.refusals


@dataclass
class _Reply:
    content: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = ""
    cost: float | None = None  # litellm's own price of this reply, when it computed one


class ChatModel(Protocol):
    """What the controller calls: `LLMClient`, or `workbench.testing.fake_llm.FakeLLM`."""

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: Callable[[str], None] | None = None,
        on_retry: RetryHook | None = None,
    ) -> LLMResponse:
        """One chat completion with tools. Raises LLMError."""
        ...


class LLMClient:
    """Calls one configured model through litellm and keeps the session's accounting."""

    def __init__(self, config: LLMConfig, *, on_retry: RetryHook | None = None) -> None:
        self.config = config
        self.on_retry = on_retry
        self.calls = 0
        self.retries = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._cost = 0.0
        self._priced = True  # False once litellm said it has no price for this model

    @property
    def model(self) -> str:
        """The configured model name."""
        return self.config.model

    @property
    def totals(self) -> LLMTotals:
        """(prompt_tokens, completion_tokens, cost) summed over this client's calls."""
        return LLMTotals(self._prompt_tokens, self._completion_tokens, self._cost)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        on_text: Callable[[str], None] | None = None,
        on_retry: RetryHook | None = None,
    ) -> LLMResponse:
        """One chat completion with tools; `on_text` gets text as it arrives. Raises LLMError.

        Streamed text of an attempt that then fails is not taken back: `on_retry` (this
        call's, after the client's own) runs before the next attempt streams again, so a UI
        can clear what it showed.
        """
        if not self.config.model:
            raise LLMError(
                "config",
                "No LLM model is set. Fix: set LLM_MODEL (e.g. openai/gpt-4o), llm.model in "
                "the config file, or pass --model.",
            )
        litellm = loaded_litellm() or await asyncio.to_thread(load_litellm)
        started = time.perf_counter()
        attempts = _Attempts()
        deadline = self.config.deadline_s or None
        try:
            async with asyncio.timeout(deadline):
                reply = await self._attempt_until_done(
                    litellm, messages, tools, on_text, attempts, on_retry
                )
        except TimeoutError:
            raise self._past_deadline(attempts) from None
        return self._account(litellm, messages, reply, started, attempts.retries)

    async def _attempt_until_done(
        self,
        litellm: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: Callable[[str], None] | None,
        attempts: _Attempts,
        on_retry: RetryHook | None = None,
    ) -> _Reply:
        """Attempts and retries, until a reply or an error not worth (or out of) retries."""
        config = self.config
        while True:
            try:
                if config.stream:
                    return await self._streamed(litellm, messages, tools, on_text)
                return await self._whole(litellm, messages, tools, on_text)
            except Exception as exc:  # every failure becomes an LLMError below
                cause = exc
                failure = exc if isinstance(exc, LLMError) else self._classify(exc)
            attempts.last = failure
            refused = failure.kind == "refused"
            done = attempts.refusals if refused else attempts.others
            limit = config.connect_retries if refused else config.num_retries
            if not failure.retryable or done >= limit:
                failure.retries = attempts.retries
                if failure.retryable and attempts.retries:
                    failure.args = (f"{failure} (gave up after {attempts.retries} retries)",)
                raise failure  # outside the except block: no litellm exception attached
            if refused:
                wait = min(config.retry_max_wait_s, config.connect_retry_wait_s * 2.0**done)
                attempts.refusals += 1
            else:
                wait = self._backoff(done, cause)
                attempts.others += 1
            self.retries += 1
            for hook in (self.on_retry, on_retry):
                if hook is not None:
                    hook(failure, attempts.retries, wait)
            await asyncio.sleep(wait)

    def _past_deadline(self, attempts: _Attempts) -> LLMError:
        where = f" at {self.config.base_url}" if self.config.base_url else ""
        last = f"; the last attempt failed: {attempts.last}" if attempts.last else ""
        tries = attempts.retries + 1
        return LLMError(
            "timeout",
            f"No answer from model {self.model}{where} within the deadline of "
            f"{self.config.deadline_s:g} s ({tries} attempt{'s' if tries > 1 else ''}{last}). "
            "Raise llm.deadline_s (and llm.timeout_s) if the model is that slow.",
            retries=attempts.retries,
        )

    # -- one attempt

    def _kwargs(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        config = self.config
        kwargs: dict[str, Any] = {
            "model": config.model,
            "messages": messages,
            "timeout": config.timeout_s,
            "temperature": config.temperature,
            "drop_params": config.drop_params,
            "num_retries": 0,  # the retry loop is ours
            "max_retries": 0,
        }
        if tools:
            kwargs["tools"] = tools
            # Our tools are plain functions, never MCP servers; without this flag litellm imports
            # its MCP gateway (~0.5 s) on the first request to check. It strips the flag itself.
            kwargs["_skip_mcp_handler"] = True
        if config.base_url:
            kwargs["api_base"] = config.base_url
        if key := config.api_key.get_secret_value():
            kwargs["api_key"] = key
        if config.max_output_tokens:
            kwargs["max_tokens"] = config.max_output_tokens
        return kwargs

    async def _whole(
        self,
        litellm: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: Callable[[str], None] | None,
    ) -> _Reply:
        async with asyncio.timeout(self.config.timeout_s + 5):  # if the HTTP timeout misses
            response = await litellm.acompletion(**self._kwargs(messages, tools))
        if not response.choices:
            raise LLMError("server", f"The provider sent a reply with no choices ({self.model}).")
        choice = response.choices[0]
        message = choice.message
        reply = _Reply(content=message.content or "", finish_reason=choice.finish_reason or "")
        for index, call in enumerate(message.tool_calls or []):
            function = call.function
            reply.calls.append(
                ToolCall(
                    id=call.id or f"call_{index}",
                    name=function.name or "",
                    arguments=function.arguments or "",
                )
            )
        usage = getattr(response, "usage", None)
        if usage is not None:
            reply.prompt_tokens = usage.prompt_tokens
            reply.completion_tokens = usage.completion_tokens
            # litellm prices every whole reply as it returns it; pricing it again costs a
            # second lookup in its model map on each step.
            priced = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
            if isinstance(priced, int | float) and not isinstance(priced, bool):
                reply.cost = float(priced)
        if on_text is not None and reply.content:
            on_text(reply.content)
        return reply

    async def _streamed(
        self,
        litellm: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        on_text: Callable[[str], None] | None,
    ) -> _Reply:
        kwargs = self._kwargs(messages, tools)
        kwargs.update(stream=True, stream_options={"include_usage": True})
        async with asyncio.timeout(self.config.timeout_s + 5):
            stream = await litellm.acompletion(**kwargs)
        reply = _Reply()
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        chunks = aiter(stream)
        try:
            while True:
                try:  # the timeout is per chunk: a long answer may take longer in all
                    chunk = await asyncio.wait_for(anext(chunks), self.config.timeout_s)
                except StopAsyncIteration:
                    break
                usage = getattr(chunk, "usage", None)
                if usage is not None and usage.prompt_tokens is not None:
                    reply.prompt_tokens = usage.prompt_tokens
                    reply.completion_tokens = usage.completion_tokens
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta.content:
                        text.append(delta.content)
                        if on_text is not None:
                            on_text(delta.content)
                    for call in delta.tool_calls or []:
                        _merge_call_delta(calls, call)
                    if choice.finish_reason:
                        reply.finish_reason = choice.finish_reason
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:
                    logging.getLogger(__name__).debug("closing the stream failed", exc_info=True)
        reply.content = "".join(text)
        reply.calls = [
            ToolCall(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments="".join(slot["arguments"]),
            )
            for index, slot in sorted(calls.items())
        ]
        return reply

    # -- errors, waits, accounting

    def _classify(self, exc: BaseException) -> LLMError:
        secrets = [self.config.api_key.get_secret_value()]
        return classify(
            exc,
            model=self.model,
            base_url=self.config.base_url,
            timeout_s=self.config.timeout_s,
            secrets=secrets,
        )

    def _backoff(self, retries: int, exc: BaseException) -> float:
        config = self.config
        wait = min(config.retry_max_wait_s, config.retry_min_wait_s * 2.0**retries)
        asked = retry_after_s(exc)
        if asked is not None:
            wait = min(config.retry_max_wait_s, max(wait, asked))
        return wait

    def _account(
        self,
        litellm: Any,
        messages: list[dict[str, Any]],
        reply: _Reply,
        started: float,
        retries: int,
    ) -> LLMResponse:
        prompt, completion = _tokens(reply.prompt_tokens), _tokens(reply.completion_tokens)
        # No usage, or litellm's usage of zeros for a reply that had none: count ourselves.
        estimated = False
        if prompt is None or completion is None or not (prompt or completion):
            estimated = True
            produced = reply.content + "".join(c.name + c.arguments for c in reply.calls)
            prompt = _count(litellm, self.model, messages=messages)
            completion = _count(litellm, self.model, text=produced)
        cost = reply.cost if not estimated else None
        if cost is None or not math.isfinite(cost) or cost < 0:
            cost = self._price(litellm, prompt, completion)
        self.calls += 1
        self._prompt_tokens += prompt
        self._completion_tokens += completion
        self._cost += cost
        return LLMResponse(
            content=reply.content,
            tool_calls=reply.calls,
            model=self.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=cost,
            latency_ms=(time.perf_counter() - started) * 1000,
            retries=retries,
            finish_reason=reply.finish_reason,
            estimated=estimated,
        )

    def _price(self, litellm: Any, prompt: int, completion: int) -> float:
        if not self._priced:
            return 0.0
        try:
            prompt_cost, completion_cost = litellm.cost_per_token(
                model=self.model, prompt_tokens=prompt, completion_tokens=completion
            )
            cost = float(prompt_cost) + float(completion_cost)
            return cost if math.isfinite(cost) and cost >= 0 else 0.0
        except Exception:  # a model litellm has no price for costs 0.0, not a crash
            self._priced = False
            return 0.0


def _merge_call_delta(calls: dict[int, dict[str, Any]], delta: Any) -> None:
    """Add one streamed tool-call fragment to the call it continues (by index, else by id)."""
    index = delta.index if isinstance(delta.index, int) else len(calls)
    slot = calls.get(index)
    if slot is not None and delta.id and slot["id"] and delta.id != slot["id"]:
        index, slot = max(calls) + 1, None  # a provider that reuses index 0 for every call
    if slot is None:
        slot = calls[index] = {"id": "", "name": "", "arguments": []}
    if delta.id:
        slot["id"] = delta.id
    function = getattr(delta, "function", None)
    if function is None:
        return
    if function.name and function.name != slot["name"]:
        slot["name"] += function.name
    if function.arguments:
        slot["arguments"].append(function.arguments)


_MAX_TOKENS = 10**9
"""More tokens than any reply or context has: a usage past it is no count."""


def _tokens(value: Any) -> int | None:
    """A provider's token count when it is a whole number in range, else None (estimate)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or not 0 <= value <= _MAX_TOKENS or value != int(value):
        return None
    return int(value)


def _count(litellm: Any, model: str, **what: Any) -> int:
    try:
        return int(litellm.token_counter(model=model, **what))
    except Exception:  # an unknown tokenizer: a rough estimate beats none
        text = str(what.get("text") or what.get("messages") or "")
        return max(1, len(text) // 4)
