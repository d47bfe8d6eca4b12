"""The scripted OpenAI-compatible server, spoken to over plain HTTP (no litellm here)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from waiting import wait_until

from workbench.testing.llm_server import ScriptedLLMServer, ScriptError

Start = Callable[..., ScriptedLLMServer]


def post(
    server: ScriptedLLMServer, body: dict[str, Any], path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        payload = json.dumps(body)
        headers = {"Content-Type": "application/json", "Authorization": "Bearer test-key"}
        connection.request("POST", path, payload, headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def chat(server: ScriptedLLMServer, **extra: Any) -> tuple[int, Any]:
    body = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}], **extra}
    status, _, data = post(server, body)
    return status, json.loads(data)


def sse_events(data: bytes) -> list[Any]:
    lines = [line for line in data.decode().split("\n") if line.startswith("data: ")]
    return [line[6:] if line == "data: [DONE]" else json.loads(line[6:]) for line in lines]


def test_text_reply_and_recorded_request(llm_server: Start) -> None:
    server = llm_server([{"text": "hello", "usage": {"prompt_tokens": 11}}])
    status, body = chat(server, tools=[{"type": "function", "function": {"name": "t"}}])
    assert status == 200
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"]["prompt_tokens"] == 11
    assert body["usage"]["total_tokens"] == 11 + body["usage"]["completion_tokens"]
    assert server.requests[0]["tools"][0]["function"]["name"] == "t"
    assert server.headers[0]["authorization"] == "Bearer test-key"


def test_tool_calls_objects_and_raw_strings(llm_server: Start) -> None:
    server = llm_server(
        [
            {
                "tool_calls": [
                    {"name": "execute_bash", "arguments": {"command": "ls"}},
                    {"name": "think", "arguments": '{"thought": broken', "id": "mine"},
                ]
            }
        ]
    )
    _, body = chat(server)
    calls = body["choices"][0]["message"]["tool_calls"]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert json.loads(calls[0]["function"]["arguments"]) == {"command": "ls"}
    assert calls[1]["function"]["arguments"] == '{"thought": broken'
    assert calls[1]["id"] == "mine" and calls[0]["id"] != calls[1]["id"]


def test_errors_repeat_default_and_exhaustion(llm_server: Start) -> None:
    server = llm_server(
        {
            "steps": [
                {"error": 429, "repeat": 2, "headers": {"Retry-After": "0"}},
                {"error": 500, "body": {"error": {"message": "boom"}}},
                {"text": "ok"},
            ],
            "default": {"text": "again"},
        }
    )
    assert server.remaining == 4
    status, _, data = post(server, {"messages": []})
    assert status == 429 and json.loads(data)["error"]["code"] == "rate_limit_exceeded"
    assert chat(server)[0] == 429
    assert chat(server) == (500, {"error": {"message": "boom"}})
    assert chat(server)[1]["choices"][0]["message"]["content"] == "ok"
    assert server.remaining == 0
    for _ in range(3):
        assert chat(server)[1]["choices"][0]["message"]["content"] == "again"
    assert len(server.requests) == 7

    exhausted = llm_server([{"text": "only"}])
    chat(exhausted)
    status, body = chat(exhausted)
    assert status == 400 and "exhausted" in body["error"]["message"]


def test_streamed_text_and_tool_calls(llm_server: Start) -> None:
    step = {
        "stream": True,
        "text": "hello streaming world",
        "tool_calls": [{"name": "execute_bash", "arguments": {"command": "echo hi"}}],
    }
    server = llm_server([step, step])
    status, headers, data = post(
        server,
        {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True}},
    )
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = sse_events(data)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "hello streaming world"
    assert sum(1 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")) > 3
    deltas = [
        tc for c in chunks if c["choices"] for tc in c["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert deltas[0]["function"]["name"] == "execute_bash" and deltas[0]["id"]
    arguments = "".join(d["function"]["arguments"] for d in deltas)
    assert json.loads(arguments) == {"command": "echo hi"} and len(deltas) > 2
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
    # Without include_usage there is no usage chunk.
    _, _, data = post(server, {"model": "m", "messages": [], "stream": True})
    assert all(event == "[DONE]" or event["choices"] for event in sse_events(data))


def test_delay_disconnect_models_and_bad_requests(llm_server: Start) -> None:
    server = llm_server([{"delay_s": 0.3, "text": "slow"}, {"disconnect": True}])
    started = time.monotonic()
    assert chat(server)[0] == 200
    assert time.monotonic() - started >= 0.3
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        chat(server)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/v1/models")
    models = json.loads(connection.getresponse().read())
    assert models["data"][0]["id"]
    connection.request("POST", "/v1/chat/completions", b"{not json", {"Content-Length": "9"})
    assert connection.getresponse().status == 400
    connection.close()
    assert post(server, {}, path="/v2/other")[0] == 404
    assert post(server, {"messages": []}, path="/chat/completions")[0] == 400  # exhausted


def test_a_held_step_answers_when_released_and_not_after_a_stop(llm_server: Start) -> None:
    server = llm_server({"steps": [{"held": True, "text": "now"}, {"held": True, "text": "x"}]})
    answers: list[tuple[int, Any]] = []
    waiting = threading.Thread(target=lambda: answers.append(chat(server)))
    waiting.start()
    wait_until(lambda: len(server.requests) == 1, what="the request")
    waiting.join(0.3)
    assert answers == []  # held
    server.release()
    waiting.join(10)
    assert answers[0][0] == 200 and answers[0][1]["choices"][0]["message"]["content"] == "now"
    assert chat(server)[1]["choices"][0]["message"]["content"] == "x"  # released stays released

    stopped = llm_server({"steps": [{"held": True, "text": "never"}]})
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            chat(stopped)
        except (http.client.HTTPException, ConnectionError) as exc:
            failed.append(exc)

    waiting = threading.Thread(target=ask)
    waiting.start()
    wait_until(lambda: len(stopped.requests) == 1, what="the request")
    stopped.stop()
    waiting.join(10)
    assert not waiting.is_alive() and failed  # closed without an answer


def test_bad_scripts_are_refused() -> None:
    for script in ([{"txt": "typo"}], [{"error": 200}], [{"error": 500, "text": "x"}], "nope"):
        with pytest.raises(ScriptError):
            ScriptedLLMServer(script)


async def test_works_inside_a_running_event_loop() -> None:
    async with (
        ScriptedLLMServer([{"text": "from the loop"}]) as server,
        aiohttp.ClientSession() as session,
    ):
        url = f"{server.base_url}/chat/completions"
        async with session.post(url, json={"model": "m", "messages": []}) as response:
            body = await response.json()
    assert body["choices"][0]["message"]["content"] == "from the loop"


def test_command_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "from the cli"}]))
    process = subprocess.Popen(
        [sys.executable, "-m", "workbench.testing.llm_server", str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("LLM SERVER http://127.0.0.1:") and line.rstrip().endswith("/v1")
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("POST", "/v1/chat/completions", json.dumps({"messages": []}))
        body = json.loads(connection.getresponse().read())
        assert body["choices"][0]["message"]["content"] == "from the cli"
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0

    bad = tmp_path / "bad.json"
    bad.write_text('[{"txt": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "workbench.testing.llm_server", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "txt" in result.stderr
