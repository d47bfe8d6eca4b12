"""Budgets and waits against the scripted server: a reply without usage still counts (an
estimate, marked as such), a model that never answers meets `llm.deadline_s` with waiting
notices meanwhile, and a refused connection gives up after its own, short retry policy."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from headless_harness import bash, cli_env, finish, json_lines, make_config, run_cli
from test_llm import MESSAGES, TOOLS, Start, client_for

from workbench.events import LLMCallEvent, LLMWaitEvent
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.llm import LLMError, load_litellm
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer


@pytest.fixture(scope="module", autouse=True)
def _litellm_once() -> None:
    load_litellm()  # seconds of CPU, once per test process: not inside a timed call


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_without_usage_is_estimated_and_marked(
    llm_server: Start, stream: bool
) -> None:
    server = llm_server(
        [
            {"text": "no usage here", "usage": None},
            {"text": "counted", "usage": {"prompt_tokens": 40, "completion_tokens": 2}},
        ]
    )
    client = client_for(server, stream=stream)
    guessed = await client.complete(MESSAGES, TOOLS)
    # A stream's missing usage is counted by litellm itself, indistinguishable from a report.
    assert guessed.estimated is not stream
    assert guessed.prompt_tokens >= 8 and guessed.completion_tokens >= 2
    reported = await client.complete(MESSAGES, TOOLS)
    assert not reported.estimated
    assert (reported.prompt_tokens, reported.completion_tokens) == (40, 2)
    assert client.totals.prompt_tokens == guessed.prompt_tokens + 40


async def test_the_token_budget_ends_a_run_whose_provider_reports_no_usage(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    step = {**bash("echo still going"), "usage": None}
    out = io.StringIO()
    async with ScriptedLLMServer({"steps": [], "default": step}) as server:
        config = make_config(
            tmp_path,
            server.base_url,
            workspace,
            budget__max_tokens=1500,
            agent__max_iterations=8,
            agent__stuck_threshold=20,
        )
        summary = await run_session(config, "go", HumanPrinter(out, out, all_events=True))
    assert summary["status"] == "budget", out.getvalue()
    assert "token budget used up" in summary["reason"]
    assert "some estimated: the provider reported no usage" in summary["reason"]
    assert summary["tokens"] >= 1500
    assert len(server.requests) < 8
    assert "(estimated: no usage reported)" in out.getvalue()
    calls = [e for e in read(Path(summary["log"])).events if isinstance(e, LLMCallEvent)]
    assert calls and all(call.estimated and call.prompt_tokens > 0 for call in calls)


def test_a_model_that_never_answers_meets_the_deadline_with_notices(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedLLMServer({"steps": [], "default": {"hang": True}}) as server:
        env = cli_env(
            tmp_path,
            server.base_url,
            WORKBENCH_LLM_TIMEOUT_S="60",
            WORKBENCH_LLM_DEADLINE_S="2.5",
            WORKBENCH_LLM_WAIT_NOTICE_S="0.5",
        )
        result = run_cli(["--headless", "--json", "-t", "go"], env, workspace, timeout=120)
    assert result.returncode == 7, result.stderr
    lines = json_lines(result.stdout)
    events = [line["event"] for line in lines if line["type"] == "event"]
    # From the task to the error: the deadline, not 785 s as under the defaults before.
    took = events[-1]["timestamp"] - events[0]["timestamp"]
    assert events[-1]["kind"] == "error" and 2.5 <= took < 5, took
    waits = [
        line["event"]
        for line in lines
        if line["type"] == "event" and line["event"]["kind"] == "llm_wait"
    ]
    # After 0.5 s, then as the wait doubles: 1 s, 2 s; the deadline cuts it at 2.5 s.
    assert [round(w["waited_s"]) for w in waits] == [0, 1, 2], waits
    assert all(w["deadline_s"] == 2.5 and w["model"] == "openai/test-model" for w in waits)
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["status"] == "llm_error"
    assert "within the deadline of 2.5 s" in summary["reason"]
    assert "llm.deadline_s" in summary["reason"]
    assert len(server.requests) == 1  # one attempt, cut by the deadline, not retried

    log = read(Path(summary["log"]))
    assert sum(isinstance(e, LLMWaitEvent) for e in log.events) == 3
    assert not log.bad_lines and not log.truncated


def test_the_human_output_shows_the_waiting_notice(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script: dict[str, Any] = {"steps": [{"delay_s": 1.2, **finish()}]}
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url, WORKBENCH_LLM_WAIT_NOTICE_S="0.4")
        result = run_cli(["--headless", "-t", "go"], env, workspace, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "-- waiting for openai/test-model: no answer after 0.4 s, gives up at 300 s" in (
        result.stderr
    )


async def test_a_refused_connection_has_its_own_short_retry_policy(llm_server: Start) -> None:
    gone = llm_server([])
    gone.stop()
    # The rate-limit policy would wait 1 + 2 + 4 + 8 + 16 s here.
    client = client_for(
        gone,
        num_retries=5,
        retry_min_wait_s=1.0,
        retry_max_wait_s=60.0,
        connect_retries=2,
        connect_retry_wait_s=0.05,
    )
    notices: list[tuple[str, int, float]] = []
    client.on_retry = lambda error, n, wait: notices.append((error.kind, n, wait))
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        await client.complete(MESSAGES, TOOLS)
    assert time.monotonic() - started < 3.0
    error = caught.value
    assert error.kind == "refused" and error.retries == 2 and error.retryable
    assert "gave up after 2 retries" in str(error)
    assert "connection refused: nothing is listening there" in str(error)
    assert notices == [("refused", 1, 0.05), ("refused", 2, 0.1)]
    assert error.retry_notice(1, 0.05).startswith("LLM connection refused, retry 1 in 0.1 s:")


async def test_other_failures_keep_the_longer_policy(llm_server: Start) -> None:
    server = llm_server([{"error": 503}, {"error": 503}, {"error": 503}, {"text": "back"}])
    client = client_for(server, num_retries=3, connect_retries=0)
    response = await client.complete(MESSAGES, TOOLS)
    assert response.content == "back" and response.retries == 3


async def test_the_deadline_counts_retries_and_their_waits(llm_server: Start) -> None:
    server = llm_server({"default": {"error": 500}})
    client = client_for(
        server, num_retries=50, retry_min_wait_s=0.2, retry_max_wait_s=0.2, deadline_s=1.0
    )
    started = time.monotonic()
    with pytest.raises(LLMError) as caught:
        await client.complete(MESSAGES, TOOLS)
    assert time.monotonic() - started < 2.5
    error = caught.value
    assert error.kind == "timeout" and 2 <= error.retries <= 6
    assert "within the deadline of 1 s" in str(error)
    assert "the last attempt failed: The LLM server failed" in str(error)
