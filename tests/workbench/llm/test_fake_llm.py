"""FakeLLM: scripted replies in order, requests recorded, a clear error past the script's end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from headless_harness import KEY, MODEL, bash, finish, make_config

from sandbox.runtimes.local import LocalRuntime
from workbench.controller.loop import Controller
from workbench.events import ObservationEvent
from workbench.llm import LLMError
from workbench.session.log import SessionLog, make_header, new_session_id
from workbench.testing.fake_llm import FakeLLM, FakeLLMExhausted
from workbench.testing.scripts import ScriptError

TOOLS = [{"type": "function", "function": {"name": "think", "parameters": {}}}]


async def test_replies_in_order_and_requests_recorded() -> None:
    call = {"name": "think", "arguments": '{"thought": "hm"', "id": "mine"}  # raw, broken JSON
    fake = FakeLLM(
        [
            {"text": "hello", "usage": {"prompt_tokens": 7, "completion_tokens": 3}},
            {"tool_calls": [call, {"name": "finish", "arguments": {"message": "ok"}}]},
            LLMError("rate_limit", "slow down", status=429),
        ]
    )
    streamed: list[str] = []
    first = await fake.complete([{"role": "user", "content": "hi"}], TOOLS, streamed.append)
    assert (first.content, first.tool_calls, first.finish_reason) == ("hello", [], "stop")
    assert (first.prompt_tokens, first.completion_tokens, streamed) == (7, 3, ["hello"])
    messages = [{"role": "user", "content": "x" * 40}]
    second = await fake.complete(messages)
    assert [(c.id, c.name, c.arguments) for c in second.tool_calls] == [
        ("mine", "think", '{"thought": "hm"'),
        ("call_2_1", "finish", json.dumps({"message": "ok"})),
    ]
    assert second.prompt_tokens == 10 and second.finish_reason == "tool_calls"
    with pytest.raises(LLMError) as raised:
        await fake.complete(messages)
    assert (raised.value.kind, raised.value.status) == ("rate_limit", 429)
    assert [r.tools for r in fake.requests] == [TOOLS, None, None]
    assert fake.requests[1].messages == messages and fake.remaining == 0
    assert fake.calls == 2 and fake.totals.prompt_tokens == 17


async def test_a_call_past_the_script_says_so() -> None:
    fake = FakeLLM([{"text": "only one"}])
    await fake.complete([{"role": "user", "content": "first"}])
    with pytest.raises(FakeLLMExhausted, match=r"call 2, but its script has 1 replies.*'again'"):
        await fake.complete([{"role": "user", "content": "again"}])
    looping = FakeLLM([], default={"text": "again and again"})
    for _ in range(3):
        assert (await looping.complete([])).content == "again and again"


def test_a_reply_it_cannot_play_is_refused_up_front() -> None:
    with pytest.raises(ScriptError, match=r"reply 2: .*not \['delay_s'\].*scripted server"):
        FakeLLM([{"text": "ok"}, {"text": "late", "delay_s": 1}])
    with pytest.raises(ScriptError, match="reply 1: "):
        FakeLLM([{"tool_calls": [{"arguments": {}}]}])  # no name


async def test_the_controller_runs_on_it_against_a_local_sandbox(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", workspace)  # never called
    fake = FakeLLM([bash("echo from-the-sandbox"), finish("said it")])
    runtime = LocalRuntime(workspace, disable=("browser", "jupyter"), warm_up=False)
    await runtime.start()
    header = make_header(new_session_id(), workspace, MODEL, config.redacted_dict())
    session = SessionLog.create(tmp_path / "sessions", header, secrets=[KEY])
    try:
        # Controller is annotated with LLMClient; FakeLLM has the part of it the loop uses.
        controller = Controller(config, runtime, fake, session)
        result = await controller.run("say something")
    finally:
        await runtime.close()
        session.close()
    assert (result.status, result.steps, result.reason) == ("success", 2, "said it")
    observation = next(e for e in controller.events if isinstance(e, ObservationEvent))
    assert observation.observation.content.strip() == "from-the-sandbox"
    answer = fake.requests[1].messages[-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == "call_1_0"
    assert "from-the-sandbox" in answer["content"]
