"""Counting a request's tokens with litellm's counter, and the model's context window.

`TokenCounter` counts each message once: the controller's messages grow by a few per step and
keep their text objects, so a cache keyed on them makes a step's count cost only its new
messages (litellm takes ~1 ms for a 5 kB message here). Call from code that has litellm loaded
(`load_litellm()`); both fall back to an estimate when litellm cannot count for a model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from workbench.config.schema import LLMConfig

__all__ = ["DEFAULT_WINDOW", "TokenCounter", "context_window"]

DEFAULT_WINDOW = 32_000
"""The window assumed for a model litellm does not know (conservative for today's models; a
refusal for length teaches the controller a smaller one)."""
_REQUEST_BASE = 3  # litellm adds these once per request (the reply's priming)

log = logging.getLogger(__name__)


def context_window(config: LLMConfig, litellm: Any) -> int:
    """`llm.max_input_tokens`, else what litellm knows of the model, else `DEFAULT_WINDOW`."""
    if config.max_input_tokens:
        return config.max_input_tokens
    try:
        info = litellm.get_model_info(config.model)
        known = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:  # an unknown model (e.g. a local server's): litellm raises
        known = None
    return int(known) if isinstance(known, int) and known > 0 else DEFAULT_WINDOW


def _key(message: dict[str, Any]) -> tuple[Any, ...]:
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        content = json.dumps(content, sort_keys=True)
    calls = tuple(
        (call.get("id"), call["function"].get("name"), call["function"].get("arguments"))
        for call in message.get("tool_calls") or ()
    )
    return (message.get("role"), content, message.get("tool_call_id"), calls)


class TokenCounter:
    """Tokens of a request (messages plus tool schemas) as litellm counts them for `model`."""

    def __init__(self, model: str, litellm: Any) -> None:
        self.model = model
        self._litellm = litellm
        self._cache: dict[tuple[Any, ...], int] = {}
        self._tools: tuple[int, int] | None = None  # (id of the schema list, its tokens)

    def _count(self, **what: Any) -> int:
        try:
            return int(self._litellm.token_counter(model=self.model, **what))
        except Exception:  # a tokenizer litellm cannot load: four characters a token
            log.debug("token_counter failed for %s", self.model, exc_info=True)
            return max(1, len(json.dumps(what, default=str)) // 4)

    def message(self, message: dict[str, Any]) -> int:
        """Tokens one message adds to a request."""
        key = _key(message)
        tokens = self._cache.get(key)
        if tokens is None:
            tokens = max(1, self._count(messages=[message]) - _REQUEST_BASE)
            self._cache[key] = tokens
        return tokens

    def tools(self, tools: list[dict[str, Any]] | None) -> int:
        """Tokens the tool schemas add to a request."""
        if not tools:
            return 0
        if self._tools is None or self._tools[0] != id(tools):
            probe = [{"role": "user", "content": "."}]
            extra = self._count(messages=probe, tools=tools) - self._count(messages=probe)
            self._tools = (id(tools), max(0, extra))
        return self._tools[1]

    def request(
        self, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int:
        """Tokens of the whole request."""
        return _REQUEST_BASE + self.tools(tools) + sum(self.message(m) for m in messages)

    def forget_unused(self, messages: Sequence[dict[str, Any]]) -> None:
        """Drop the counts of messages no longer sent (after a condensation)."""
        keep = {_key(m) for m in messages}
        self._cache = {key: n for key, n in self._cache.items() if key in keep}
