"""The LLM client through litellm's real HTTP path against the scripted server."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import SecretStr

from workbench.config.schema import LLMConfig
from workbench.llm import LLMClient, LLMError, load_litellm
from workbench.testing.llm_server import ScriptedLLMServer

Start = Callable[..., ScriptedLLMServer]
KEY = "sk-test-SECRET-0123456789abcdef"
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a test."},
    {"role": "user", "content": "Say hi."},
]
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "execute_bash",
            "description": "Run a command.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}},
                "required": ["command"],
            },
        },
    }
]


@pytest.fixture(scope="module", autouse=True)
def _litellm_once() -> None:
    load_litellm()  # ~6 s of CPU, once per test process


def client_for(server: ScriptedLLMServer, **settings: Any) -> LLMClient:
    values: dict[str, Any] = {
        "model": "openai/test-model",
        "base_url": server.base_url,
        "api_key": SecretStr(KEY),
        "timeout_s": 10.0,
        "num_retries": 3,
        "retry_min_wait_s": 0.01,
        "retry_max_wait_s": 0.04,
        **settings,
    }
    return LLMClient(LLMConfig(**values))


def assert_no_key(error: LLMError) -> None:
    shown = [str(error), repr(error), "".join(traceback.format_exception(error))]
    for text in shown:
        assert KEY not in text
    assert error.__cause__ is None and error.__context__ is None


async def test_plain_text(llm_server: Start) -> None:
    server = llm_server(
        [{"text": "hi there", "usage": {"prompt_tokens": 21, "completion_tokens": 3}}]
    )
    client = client_for(server)
    seen: list[str] = []
    response = await client.complete(MESSAGES, TOOLS, on_text=seen.append)
    assert response.content == "hi there" and response.tool_calls == []
    assert (response.prompt_tokens, response.completion_tokens) == (21, 3)
    assert response.retries == 0 and response.latency_ms > 0
    assert response.finish_reason == "stop"
    assert seen == ["hi there"]
    request = server.requests[0]
    assert request["model"] == "test-model"
    assert request["messages"] == MESSAGES
    assert request["tools"] == TOOLS
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"


async def test_tool_calls_and_malformed_arguments(llm_server: Start) -> None:
    server = llm_server(
        [
            {
                "tool_calls": [
                    {"name": "execute_bash", "arguments": {"command": "ls -la"}},
                    {"name": "execute_bash", "arguments": '{"command": "ls", oops'},
                ]
            }
        ]
    )
    response = await client_for(server).complete(MESSAGES, TOOLS)
    first, second = response.tool_calls
    assert first.name == "execute_bash" and json.loads(first.arguments) == {"command": "ls -la"}
    assert second.arguments == '{"command": "ls", oops'
    assert first.id and second.id and first.id != second.id
    assert response.finish_reason == "tool_calls"


async def test_streamed_text(llm_server: Start) -> None:
    text = "Streaming works, piece by piece."
    server = llm_server([{"stream": True, "text": text, "chunk_chars": 3}])
    seen: list[str] = []
    response = await client_for(server, stream=True).complete(MESSAGES, TOOLS, on_text=seen.append)
    assert response.content == text
    assert "".join(seen) == text and len(seen) >= 5
    assert server.requests[0]["stream"] is True
    assert response.prompt_tokens > 0 and response.completion_tokens > 0


async def test_streamed_tool_calls(llm_server: Start) -> None:
    calls = [
        {"name": "execute_bash", "arguments": {"command": "echo one && echo two"}},
        {"name": "think", "arguments": {"thought": "a second call"}},
        {"name": "execute_bash", "arguments": "{not json"},
    ]
    server = llm_server([{"stream": True, "text": "Let me run it.", "tool_calls": calls}])
    response = await client_for(server, stream=True).complete(MESSAGES, TOOLS)
    assert response.content == "Let me run it."
    assert [c.name for c in response.tool_calls] == ["execute_bash", "think", "execute_bash"]
    assert json.loads(response.tool_calls[0].arguments) == calls[0]["arguments"]
    assert json.loads(response.tool_calls[1].arguments) == calls[1]["arguments"]
    assert response.tool_calls[2].arguments == "{not json"
    assert len({c.id for c in response.tool_calls}) == 3


async def test_rate_limit_twice_then_success(llm_server: Start) -> None:
    server = llm_server([{"error": 429, "repeat": 2}, {"text": "finally"}])
    seen: list[tuple[str, int, float]] = []
    client = client_for(server)
    client.on_retry = lambda error, number, wait: seen.append((error.kind, number, wait))
    response = await client.complete(MESSAGES, TOOLS)
    assert response.content == "finally"
    assert response.retries == 2 and client.retries == 2
    assert [(kind, number) for kind, number, _ in seen] == [("rate_limit", 1), ("rate_limit", 2)]
    assert seen[0][2] == pytest.approx(0.01) and seen[1][2] == pytest.approx(0.02)
    assert len(server.requests) == 3


async def test_retry_after_header_is_honoured_up_to_the_max(llm_server: Start) -> None:
    server = llm_server([{"error": 503, "headers": {"Retry-After": "30"}}, {"text": "ok"}])
    waits: list[float] = []
    client = client_for(server)
    client.on_retry = lambda error, number, wait: waits.append(wait)
    assert (await client.complete(MESSAGES, TOOLS)).content == "ok"
    assert waits == [pytest.approx(0.04)]  # capped at retry_max_wait_s


async def test_server_error_forever_gives_up(llm_server: Start) -> None:
    server = llm_server({"default": {"error": 500}})
    with pytest.raises(LLMError) as caught:
        await client_for(server, num_retries=2).complete(MESSAGES, TOOLS)
    error = caught.value
    assert error.kind == "server" and error.status == 500 and error.retries == 2
    assert "gave up after 2 retries" in str(error)
    assert len(server.requests) == 3
    assert_no_key(error)


async def test_dropped_connection_is_retried(llm_server: Start) -> None:
    server = llm_server([{"disconnect": True}, {"text": "back"}])
    response = await client_for(server).complete(MESSAGES, TOOLS)
    assert response.content == "back" and response.retries == 1


async def test_a_reply_that_is_not_a_completion_is_retried(llm_server: Start) -> None:
    # An event stream to a request that did not ask for one: not JSON, so a server fault.
    server = llm_server([{"stream": True, "text": "garbled"}, {"text": "back"}])
    response = await client_for(server).complete(MESSAGES, TOOLS)
    assert response.content == "back" and response.retries == 1


async def test_auth_error_is_not_retried_and_never_shows_the_key(llm_server: Start) -> None:
    body = {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
    server = llm_server([{"error": 401, "body": body}])
    with pytest.raises(LLMError) as caught:
        await client_for(server).complete(MESSAGES, TOOLS)
    error = caught.value
    assert error.kind == "auth" and error.retries == 0 and len(server.requests) == 1
    assert "LLM_API_KEY" in str(error) and "[redacted]" in str(error)
    assert_no_key(error)


@pytest.mark.parametrize(
    ("step", "kind"),
    [
        ({"error": 400, "body": {"error": {"message": "bad tools"}}}, "bad_request"),
        ({"error": 404}, "config"),
        (
            {
                "error": 400,
                "body": {"error": {"message": "This model's maximum context length is 10 tokens."}},
            },
            "context_window",
        ),
        ({"error": 429, "body": {"error": {"message": "You exceeded your current quota"}}}, "auth"),
    ],
)
async def test_errors_that_are_not_retried(
    llm_server: Start, step: dict[str, Any], kind: str
) -> None:
    server = llm_server({"default": step})
    with pytest.raises(LLMError) as caught:
        await client_for(server).complete(MESSAGES, TOOLS)
    assert caught.value.kind == kind and not caught.value.retryable
    assert len(server.requests) == 1
    assert_no_key(caught.value)


async def test_timeout_and_unreachable_server(llm_server: Start) -> None:
    server = llm_server([{"delay_s": 2.0, "text": "too late"}])
    with pytest.raises(LLMError) as caught:
        await client_for(server, timeout_s=0.3, num_retries=0).complete(MESSAGES, TOOLS)
    assert caught.value.kind == "timeout" and "llm.timeout_s" in str(caught.value)

    gone = llm_server([])
    gone.stop()
    with pytest.raises(LLMError) as caught:
        await client_for(gone, connect_retries=1, connect_retry_wait_s=0).complete(MESSAGES, TOOLS)
    assert caught.value.kind == "refused" and caught.value.retries == 1
    assert gone.base_url in str(caught.value)
    assert "(connection refused: nothing is listening there" in str(caught.value)
    assert "ssl:" not in str(caught.value) and " object at 0x" not in str(caught.value)
    assert_no_key(caught.value)


async def test_accounting_per_call_and_per_session(llm_server: Start) -> None:
    server = llm_server(
        [
            {"text": "a", "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
            {"stream": True, "text": "b", "usage": {"prompt_tokens": 200, "completion_tokens": 20}},
        ]
    )
    client = client_for(server)
    first = await client.complete(MESSAGES, TOOLS)
    client.config = client.config.model_copy(update={"stream": True})
    second = await client.complete(MESSAGES, TOOLS)
    assert (second.prompt_tokens, second.completion_tokens) == (200, 20)
    assert first.cost == 0.0 and second.cost == 0.0  # litellm has no price for test-model
    assert client.totals == (300, 30, 0.0) and client.calls == 2
    prompt, completion, cost = client.totals
    assert (prompt, completion, cost) == (300, 30, 0.0)


async def test_cost_of_a_model_litellm_knows(llm_server: Start) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 1000}
    server = llm_server(
        [{"text": "x", "usage": usage}, {"stream": True, "text": "y", "usage": usage}]
    )
    client = client_for(server, model="openai/gpt-4o")
    whole = await client.complete(MESSAGES, TOOLS)  # priced by litellm as it returns
    client.config = client.config.model_copy(update={"stream": True})
    streamed = await client.complete(MESSAGES, TOOLS)  # priced by us from the usage chunk
    prompt_cost, completion_cost = load_litellm().cost_per_token(
        model="openai/gpt-4o", prompt_tokens=1000, completion_tokens=1000
    )
    assert whole.cost > 0
    assert whole.cost == pytest.approx(prompt_cost + completion_cost)
    assert streamed.cost == pytest.approx(whole.cost)
    assert client.totals.cost == pytest.approx(2 * whole.cost)


async def test_no_model_is_a_config_error() -> None:
    with pytest.raises(LLMError) as caught:
        await LLMClient(LLMConfig()).complete(MESSAGES, TOOLS)
    assert caught.value.kind == "config" and "LLM_MODEL" in str(caught.value)


async def test_litellm_prints_nothing(llm_server: Start, capfd: pytest.CaptureFixture[str]) -> None:
    server = llm_server([{"text": "quiet"}, {"error": 400}, {"error": 500}])
    client = client_for(server, num_retries=0)
    await client.complete(MESSAGES, TOOLS)
    for _ in range(2):
        with pytest.raises(LLMError):
            await client.complete(MESSAGES, TOOLS)
    out, err = capfd.readouterr()
    assert out == "" and err == ""


async def test_openai_models_skip_the_openai_sdk(llm_server: Start) -> None:
    # litellm's own HTTP handler: the SDK's per-request walk of the whole history is avoided.
    server = llm_server([{"text": "direct"}])
    await client_for(server).complete(MESSAGES, TOOLS)
    assert not [name for name in server.headers[0] if name.startswith("x-stainless")]


_PRIMED_FIRST_CALL = """
import asyncio, sys
from workbench.config.schema import LLMConfig
from workbench.llm import LLMClient, prime_litellm
from workbench.testing.llm_server import ScriptedLLMServer

with ScriptedLLMServer([{"text": "primed"}]) as server:
    config = LLMConfig(model="openai/test-model", base_url=server.base_url, api_key="k")
    prime_litellm(config, TOOLS)
    assert not server.requests  # priming is offline
    before = set(sys.modules)
    reply = asyncio.run(LLMClient(config).complete([{"role": "user", "content": "hi"}], TOOLS))
    assert reply.content == "primed"
    late = sorted(name for name in set(sys.modules) - before if name.startswith(("lite", "tik")))
    assert not late, late
"""


def test_priming_leaves_the_first_call_no_imports() -> None:
    code = f"TOOLS = {json.dumps(TOOLS)}\n{_PRIMED_FIRST_CALL}"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_importing_the_package_does_not_import_litellm() -> None:
    code = "import sys, workbench.llm, workbench.config.load; assert 'litellm' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_litellm_is_kept_out_of_full_garbage_collections() -> None:
    # Each full collection would otherwise walk litellm's ~300 000 objects (0.2-0.3 s here).
    code = (
        "import gc\n"
        "from workbench.llm import load_litellm\n"
        "load_litellm()\n"
        "assert gc.get_freeze_count() > 100_000, gc.get_freeze_count()\n"
        "assert len(gc.get_objects()) < 20_000, len(gc.get_objects())\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_connection_errors_read_without_aiohttp_internals() -> None:
    from workbench.llm.errors import classify

    class APIConnectionError(Exception):
        pass

    def message(text: str, kind: str = "connection") -> str:
        error = classify(
            APIConnectionError(text),
            model="openai/m",
            base_url="https://llm.example/v1",
            timeout_s=5,
            secrets=[],
        )
        assert error.kind == kind
        return str(error)

    dns = message(
        "litellm.APIConnectionError: Cannot connect to host llm.example:443 ssl:default "
        "[Name or service not known]"
    )
    assert "(Cannot connect to host llm.example:443 [Name or service not known])" in dns
    refused = message(
        "Cannot connect to host 127.0.0.1:8799 ssl:<ssl.SSLContext object at 0x7fb157da9640> "
        "[Connect call failed ('127.0.0.1', 8799)]",
        kind="refused",
    )
    assert "(connection refused: nothing is listening there; is the server running?)" in refused


async def test_a_whole_reply_litellm_cannot_decode_is_a_bad_reply_not_retried(
    llm_server: Start,
) -> None:
    deep = '{"command": ' + "[" * 100_000 + "]" * 100_000 + "}"
    long_int = '{"command": ' + "9" * 5000 + "}"
    for arguments, cause in ((deep, "RecursionError"), (long_int, "ValueError: Exceeds")):
        server = llm_server([{"tool_calls": [{"name": "execute_bash", "arguments": arguments}]}])
        with pytest.raises(LLMError) as caught:
            await client_for(server).complete(MESSAGES, TOOLS)
        error = caught.value
        assert error.kind == "bad_reply" and not error.retryable and len(server.requests) == 1
        assert f"could not be read ({cause}" in str(error)
        assert_no_key(error)


def test_an_unreadable_completion_for_another_cause_is_a_server_error() -> None:
    from workbench.llm.errors import classify

    class APIConnectionError(Exception):
        pass

    error = classify(
        APIConnectionError(
            "APIConnectionError: OpenAIException - Invalid response object KeyError"
        ),
        model="openai/m",
        base_url="",
        timeout_s=5,
        secrets=[],
    )
    assert error.kind == "server" and "not a chat completion" in str(error)
