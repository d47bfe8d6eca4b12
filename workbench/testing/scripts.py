"""Scripts for the scripted LLM server: the step model and the OpenAI-shaped replies it yields.

The format is documented in `workbench/testing/llm_server.py`. This module only validates
steps and turns one step into a chat-completion body or a list of SSE chunks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class ScriptError(ValueError):
    """A script that does not follow the documented format."""


class ToolCallSpec(BaseModel):
    """One tool call the model "makes": `arguments` as an object, or raw (maybe broken) text."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        """The arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments)


class Usage(BaseModel):
    """Token counts to report; missing ones are estimated (characters / 4)."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)


class Step(BaseModel):
    """One reply of the script (used for `repeat` requests in a row)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    error: int | None = Field(default=None, ge=400, le=599)
    body: Any = None
    headers: dict[str, str] = Field(default_factory=dict)
    stream: bool = False
    chunk_chars: int = Field(default=4, ge=1)
    chunk_delay_s: float = Field(default=0.0, ge=0)
    delay_s: float = Field(default=0.0, ge=0)
    disconnect: bool = False
    usage: Usage | None = Field(default_factory=Usage)
    hang: bool = False
    held: bool = False
    finish_reason: str | None = None
    repeat: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _one_kind(self) -> Step:
        if self.error is not None and (self.text is not None or self.tool_calls):
            raise ValueError("a step with 'error' cannot also have 'text' or 'tool_calls'")
        return self


class Route(BaseModel):
    """A script of its own for the conversations whose first user message holds `match`."""

    model_config = ConfigDict(extra="forbid")

    match: str = Field(min_length=1)
    steps: list[Step] = Field(default_factory=list)
    default: Step | None = None


class Script(BaseModel):
    """Steps consumed in order, then `default` for every further request (if given)."""

    model_config = ConfigDict(extra="forbid")

    routes: list[Route] = Field(default_factory=list)
    """Conversations (told apart by their first two messages) whose first user message holds
    a route's `match` each take that route's steps from its first: many sessions at once."""
    steps: list[Step] = Field(default_factory=list)
    default: Step | None = None
    without_tools: Step | None = None
    """Answers every request that offers no tools (a summary call), out of turn."""
    max_prompt_tokens: int | None = Field(default=None, ge=1)
    """Refuse any request over this many tokens (`prompt_tokens`) as OpenAI does."""


def conversation_of(request: Mapping[str, Any]) -> tuple[str, str]:
    """(the first user message's text, a key for the conversation: its first two messages)."""
    messages = [m for m in request.get("messages") or [] if isinstance(m, Mapping)]
    texts = [_text(m.get("content")) for m in messages[:2]]
    user = next((_text(m.get("content")) for m in messages if m.get("role") == "user"), "")
    return user, "\0".join(texts)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def parse_script(data: Any) -> Script:
    """A script from a list of steps or {"steps": [...], "default": {...}}; ScriptError if bad."""
    if isinstance(data, Script):
        return data
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, Mapping):
        raise ScriptError("a script is a list of steps or an object with 'steps' and 'default'")
    try:
        return Script.model_validate(data)
    except ValueError as exc:
        raise ScriptError(f"bad script: {exc}") from None


_encoding: Any = None


def _tokenizer() -> Any:
    """tiktoken's cl100k_base, from the copy litellm ships (no network, no litellm import)."""
    global _encoding
    if _encoding is None:
        import importlib.util
        import os

        spec = importlib.util.find_spec("litellm")
        if spec is not None and spec.submodule_search_locations:
            folder = os.path.join(
                next(iter(spec.submodule_search_locations)), "litellm_core_utils", "tokenizers"
            )
            os.environ.setdefault("TIKTOKEN_CACHE_DIR", folder)
        import tiktoken

        _encoding = tiktoken.get_encoding("cl100k_base")
    return _encoding


def prompt_tokens(request: Mapping[str, Any]) -> int:
    """The request's tokens counted as OpenAI counts them for chat models (cl100k_base): each
    message's strings plus 3, 3 for the reply, and the tool schemas as JSON."""
    encode = _tokenizer().encode
    total = 3
    for message in request.get("messages") or []:
        total += 3
        for key in ("role", "content", "name", "tool_call_id"):
            value = message.get(key) if isinstance(message, Mapping) else None
            if isinstance(value, str):
                total += len(encode(value, disallowed_special=()))
        for call in (message.get("tool_calls") or []) if isinstance(message, Mapping) else []:
            function = call.get("function") or {}
            for value in (function.get("name"), function.get("arguments")):
                if isinstance(value, str):
                    total += len(encode(value, disallowed_special=()))
    if request.get("tools"):
        total += len(encode(json.dumps(request["tools"]), disallowed_special=()))
    return total


def too_long_body(tokens: int, limit: int) -> dict[str, Any]:
    """OpenAI's answer (HTTP 400) to a request over the model's context length."""
    return {
        "error": {
            "message": f"This model's maximum context length is {limit} tokens. However, your "
            f"messages resulted in {tokens} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _estimate(text: str) -> int:
    return max(1, len(text) // 4)


def usage_for(step: Step, request: Mapping[str, Any]) -> dict[str, int] | None:
    """The usage block of a reply to `request` (None: the step reports no usage)."""
    if step.usage is None:
        return None
    prompt = step.usage.prompt_tokens
    if prompt is None:
        prompt = _estimate(json.dumps(request.get("messages", [])))
    completion = step.usage.completion_tokens
    if completion is None:
        produced = (step.text or "") + "".join(c.name + c.arguments_text() for c in step.tool_calls)
        completion = _estimate(produced)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _finish_reason(step: Step) -> str:
    return step.finish_reason or ("tool_calls" if step.tool_calls else "stop")


def _call_id(step: Step, number: int, index: int) -> str:
    return step.tool_calls[index].id or f"call_{number}_{index}"


def completion_body(step: Step, request: Mapping[str, Any], number: int) -> dict[str, Any]:
    """A non-streamed `chat.completion` answering request `number` (1-based)."""
    message: dict[str, Any] = {"role": "assistant", "content": step.text}
    if step.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(step, number, i),
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_text()},
            }
            for i, call in enumerate(step.tool_calls)
        ]
    body = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(request.get("model", "scripted")),
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(step)}],
    }
    usage = usage_for(step, request)
    if usage is not None:
        body["usage"] = usage
    return body


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_chunks(step: Step, request: Mapping[str, Any], number: int) -> list[dict[str, Any]]:
    """The `chat.completion.chunk` objects of a streamed reply, split as OpenAI splits them."""
    base = {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": str(request.get("model", "scripted")),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _pieces(step.text or "", step.chunk_chars)]
    for i, call in enumerate(step.tool_calls):
        head = {
            "index": i,
            "id": _call_id(step, number, i),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [head]}))
        for piece in _pieces(call.arguments_text(), step.chunk_chars):
            chunks.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, _finish_reason(step)))
    options = request.get("stream_options")
    usage = usage_for(step, request)
    if isinstance(options, Mapping) and options.get("include_usage") and usage is not None:
        chunks.append({**base, "choices": [], "usage": usage})
    return chunks


def error_body(step: Step) -> Any:
    """The body of a scripted HTTP error (OpenAI's error shape unless `body` is given)."""
    if step.body is not None:
        return step.body
    kind = {429: "rate_limit_exceeded", 401: "invalid_api_key"}.get(step.error or 0, "error")
    return {
        "error": {
            "message": f"scripted error {step.error}",
            "type": kind,
            "param": None,
            "code": kind,
        }
    }
