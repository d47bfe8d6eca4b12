"""Condensation end to end: long sessions against a scripted server that refuses requests over
its context length as OpenAI does, through the real `workbench --headless` and real bash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.workbench.headless_harness import bash, cli_env, finish, json_lines, run_cli
from workbench.testing.llm_server import ScriptedLLMServer

TASK = "Print the forty status reports, one per step, then finish. (task-marker-7f3a)"
STEPS = 40
LIMIT = 16_000


def report(step: int) -> str:
    """A command printing about 5 kB: 90 lines naming the step."""
    return f'yes "report {step}: the quick brown fox jumps over the lazy dog" | head -n 90'


def long_script(**extra: Any) -> dict[str, Any]:
    steps = [bash(report(step)) for step in range(1, STEPS + 1)]
    return {
        "steps": [*steps, finish("all reports printed")],
        "max_prompt_tokens": LIMIT,
        "without_tools": {"text": "Summary: reports were printed, one per step."},
        **extra,
    }


def run_long(tmp_path: Path, server: ScriptedLLMServer, **env: str) -> tuple[int, list[Any]]:
    """Run the long session headless; (exit code, the log's events)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    extra = {
        "WORKBENCH_CHECKPOINTS_ENABLED": "false",
        "WORKBENCH_AGENT_MAX_ITERATIONS": "60",
        **env,
    }
    result = run_cli(
        ["--headless", "--json", "-t", TASK],
        cli_env(tmp_path, server.base_url, **extra),
        workspace,
        timeout=120,
    )
    lines = json_lines(result.stdout)
    summary = lines[-1]
    assert summary["type"] == "summary", result.stderr[-2000:]
    log = Path(summary["log"]).read_text().splitlines()[1:]
    return result.returncode, [json.loads(line) for line in log]


def carries_task(request: dict[str, Any]) -> bool:
    return any(TASK in str(message.get("content")) for message in request["messages"])


def test_a_long_session_stays_under_the_window(tmp_path: Path) -> None:
    """Acceptance 1: 40 steps of ~5 kB, window 16 000: no request refused, all carry the task."""
    with ScriptedLLMServer(long_script()) as server:
        code, events = run_long(tmp_path, server, WORKBENCH_LLM_MAX_INPUT_TOKENS=str(LIMIT))
    assert code == 0
    assert server.refused == []
    assert max(server.tokens) <= LIMIT
    assert len(server.requests) >= STEPS + 1
    assert all(carries_task(request) for request in server.requests)
    condensations = [e for e in events if e["kind"] == "condensation"]
    assert condensations and all(e["reason"] == "threshold" for e in condensations)
    for event in condensations:
        assert event["tokens_after"] < event["tokens_before"]
        assert event["elided"] or event["summary"]
    # Without condensation the requests would have grown to ~50 000 tokens.
    assert server.tokens[-1] < LIMIT * 0.75
    assert sum(1 for e in events if e["kind"] == "observation") >= STEPS


def test_a_refusal_for_length_condenses_and_retries(tmp_path: Path) -> None:
    """Acceptance 2: the window configured far too large; the first refusal condenses, the
    request is retried, and the run finishes."""
    with ScriptedLLMServer(long_script()) as server:
        code, events = run_long(tmp_path, server, WORKBENCH_LLM_MAX_INPUT_TOKENS="1000000")
    assert code == 0
    assert len(server.refused) == 1  # the window the refusal named was learned
    refused = server.refused[0]
    assert refused < len(server.requests)
    retried = server.tokens[refused]  # the request right after the refusal
    assert retried <= LIMIT and retried < server.tokens[refused - 1]
    assert all(carries_task(request) for request in server.requests)
    condensations = [e for e in events if e["kind"] == "condensation"]
    assert condensations[0]["reason"] == "refused"
    assert condensations[0]["window"] == LIMIT
    assert not any(e["kind"] == "error" for e in events)


def test_condensation_off_fails_on_the_refusal(tmp_path: Path) -> None:
    """The control: with condensation off the same session ends with the provider's refusal."""
    with ScriptedLLMServer(long_script()) as server:
        code, events = run_long(
            tmp_path,
            server,
            WORKBENCH_LLM_MAX_INPUT_TOKENS="1000000",
            WORKBENCH_CONDENSE_ENABLED="false",
        )
    assert code != 0
    assert len(server.refused) == 1
    errors = [e for e in events if e["kind"] == "error"]
    assert errors and errors[-1]["error_kind"] == "llm_context_window"


@pytest.mark.parametrize("body_message", ["Input is too long.", "prompt is too long"])
def test_context_length_code_is_a_length_refusal(body_message: str) -> None:
    """OpenAI's error code alone (a BadRequestError to litellm) counts as a length refusal."""
    from workbench.llm.errors import classify

    class BadRequestError(Exception):
        status_code = 400

    body = {"error": {"message": body_message, "code": "context_length_exceeded"}}
    error = classify(
        BadRequestError(json.dumps(body)), model="m", base_url="", timeout_s=1, secrets=[]
    )
    assert error.kind == "context_window"


def _paired(messages: list[dict[str, Any]]) -> bool:
    """Every tool call is answered right after its assistant message, and every answer has
    its call: what providers check."""
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            calls = []
            for earlier in reversed(messages[:index]):
                if earlier["role"] == "assistant":
                    calls = [call["id"] for call in earlier.get("tool_calls") or []]
                    break
                if earlier["role"] != "tool":
                    return False
            if message["tool_call_id"] not in calls:
                return False
        for call in message.get("tool_calls") or []:
            answers = messages[index + 1 : index + 1 + len(message["tool_calls"])]
            if call["id"] not in [a.get("tool_call_id") for a in answers]:
                return False
    return True


def test_a_summary_replaces_the_oldest_steps(tmp_path: Path) -> None:
    """With a window too small for elision alone, the model summarises the oldest part in one
    call without tools; the task stays first, the summary right after it, pairs stay valid."""
    script = {
        "steps": [*(bash(report(step)) for step in range(1, 13)), finish("done")],
        "max_prompt_tokens": 7000,
        "without_tools": {"text": "SUMMARY-MARKER: reports 1 to N were printed."},
    }
    env = {"WORKBENCH_LLM_MAX_INPUT_TOKENS": "7000", "WORKBENCH_CONDENSE_KEEP_RECENT_STEPS": "2"}
    with ScriptedLLMServer(script) as server:
        code, events = run_long(tmp_path, server, **env)
    assert code == 0 and server.refused == []
    summaries = [r for r in server.requests if not r.get("tools")]
    assert summaries and all(carries_task(r) for r in summaries)
    assert "report 1:" in str(summaries[0]["messages"])  # what it was asked to summarise
    agent = [r for r in server.requests if r.get("tools")]
    assert all(_paired(r["messages"]) for r in agent)
    last = agent[-1]["messages"]
    assert TASK in last[1]["content"] and "SUMMARY-MARKER" in last[2]["content"]
    assert not any("report 1:" in str(m.get("content")) for m in last)
    condensed = [e for e in events if e["kind"] == "condensation" and e["summary"]]
    assert condensed and condensed[0]["summarized_from"] > 1
    assert condensed[0]["prompt_tokens"] > 0  # the summary call's cost is recorded


def test_resume_starts_from_the_condensed_history(tmp_path: Path) -> None:
    """A resumed session's first request carries the condensed view, not the raw history."""
    script = {
        "steps": [*(bash(report(step)) for step in range(1, 13)), finish("done")],
        "without_tools": {"text": "SUMMARY-MARKER: reports were printed."},
    }
    env = {"WORKBENCH_LLM_MAX_INPUT_TOKENS": "7000", "WORKBENCH_CONDENSE_KEEP_RECENT_STEPS": "2"}
    with ScriptedLLMServer(script) as server:
        code, events = run_long(tmp_path, server, **env)
    assert code == 0 and any(e["kind"] == "condensation" for e in events)
    session_id = (tmp_path / "data" / "sessions").glob("*.jsonl").__next__().stem
    with ScriptedLLMServer([finish("still done")]) as server:
        result = run_cli(
            ["--headless", "--json", "--resume", session_id, "-t", "anything left?"],
            cli_env(tmp_path, server.base_url, WORKBENCH_CHECKPOINTS_ENABLED="false"),
            tmp_path / "ws",
        )
        assert result.returncode == 0, result.stderr[-2000:]
        first = server.requests[0]["messages"]
    assert _paired(first)
    assert "SUMMARY-MARKER" in first[2]["content"]
    assert not any("report 1:" in str(m.get("content")) for m in first)
    assert "report 12:" in str(first)  # the latest steps stay verbatim


def test_the_builder_applies_condensations_as_a_full_build_does() -> None:
    """The incremental builder, fed a growing list with condensations among the events, gives
    what a build from scratch gives, and the condensed view pairs every call."""
    from sandbox.protocol import CmdOutputObservation, CmdRunAction
    from workbench.agent.messages import MessageBuilder, build_messages
    from workbench.events import (
        ActionEvent,
        CondensationEvent,
        Event,
        LLMCallEvent,
        MessageEvent,
        ObservationEvent,
    )

    events: list[Event] = [MessageEvent(id=1, source="user", text=TASK)]
    builder = MessageBuilder("SYS", 30_000)
    for step in range(1, 9):
        base = len(events) + 1
        call = f"c{step}"
        events += [
            LLMCallEvent(
                id=base, model="m", prompt_tokens=1, completion_tokens=1, cost=0, latency_ms=1
            ),
            ActionEvent(
                id=base + 1,
                tool_name="execute_bash",
                tool_call_id=call,
                action=CmdRunAction(command=f"echo {step}"),
            ),
            ObservationEvent(
                id=base + 2,
                cause=base + 1,
                tool_call_id=call,
                observation=CmdOutputObservation(
                    content=f"out {step} " * 100, command=f"echo {step}", exit_code=0
                ),
            ),
        ]
        if step == 4:
            events.append(
                CondensationEvent(
                    id=len(events) + 1,
                    reason="threshold",
                    elided=[4, 7],
                    tokens_before=9,
                    tokens_after=5,
                    window=10,
                )
            )
        if step == 7:
            events.append(
                CondensationEvent(
                    id=len(events) + 1,
                    reason="manual",
                    summary="SUMMARY",
                    summarized_from=2,
                    summarized_to=10,
                    tokens_before=9,
                    tokens_after=5,
                    window=10,
                )
            )
        built = builder.build(events)
        assert built == build_messages("SYS", events, 30_000)
        assert _paired(built)
    contents = [str(m.get("content")) for m in built]
    assert contents[1] == TASK and "SUMMARY" in contents[2]
    assert not any("out 1 " in c or "out 3 " in c for c in contents)  # summarised
    assert "out 4 " in str(contents) and "out 8 " in str(contents)


def test_the_window_comes_from_config_then_litellm_then_the_default() -> None:
    from workbench.config.schema import LLMConfig
    from workbench.llm import load_litellm
    from workbench.llm.tokens import DEFAULT_WINDOW, TokenCounter, context_window

    litellm = load_litellm()
    assert context_window(LLMConfig(model="openai/scripted"), litellm) == DEFAULT_WINDOW
    assert context_window(LLMConfig(model="gpt-4o"), litellm) == 128_000
    assert context_window(LLMConfig(model="gpt-4o", max_input_tokens=900), litellm) == 900
    assert context_window(LLMConfig(model=""), litellm) == DEFAULT_WINDOW
    # Counted one message at a time, a request adds up to litellm's count of the whole.
    counter = TokenCounter("openai/scripted", litellm)
    messages = [
        {"role": "system", "content": "You are an engineer."},
        {"role": "user", "content": "list the files " * 50},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt\nb.txt\n" * 100},
    ]
    whole = litellm.token_counter(model="openai/scripted", messages=messages)
    assert abs(counter.request(messages) - whole) <= 2


def test_a_request_that_cannot_be_cut_enough_ends_with_a_clear_error(tmp_path: Path) -> None:
    """A window smaller than the task and the tools: one refusal, nothing to condense, the run
    ends as an LLM error naming the window (no retry loop)."""
    script = {"steps": [finish()], "max_prompt_tokens": 1000}
    with ScriptedLLMServer(script) as server:
        code, events = run_long(tmp_path, server)
    assert code == 7
    assert server.refused == [1] and len(server.requests) == 1
    errors = [e for e in events if e["kind"] == "error"]
    assert errors[-1]["error_kind"] == "llm_context_window"
    assert "maximum context length is 1000 tokens" in errors[-1]["message"]


def test_a_failed_summary_call_is_noted_and_the_run_goes_on(tmp_path: Path) -> None:
    script = {
        "steps": [*(bash(report(step)) for step in range(1, 13)), finish("done")],
        "without_tools": {"error": 500},
    }
    env = {
        "WORKBENCH_LLM_MAX_INPUT_TOKENS": "7000",
        "WORKBENCH_CONDENSE_KEEP_RECENT_STEPS": "2",
        "WORKBENCH_LLM_NUM_RETRIES": "0",
    }
    with ScriptedLLMServer(script) as server:
        code, events = run_long(tmp_path, server, **env)
    assert code == 0
    notes = [e["note"] for e in events if e["kind"] == "condensation" and e["note"]]
    assert notes and "the summary call failed (server)" in notes[0]


def test_continue_from_renumbers_what_a_condensation_names() -> None:
    """`replay --continue-from` renumbers the history from 1: a condensation's ids follow."""
    from sandbox.protocol import CmdOutputObservation, CmdRunAction
    from workbench.agent.messages import build_messages
    from workbench.events import ActionEvent, CondensationEvent, MessageEvent, ObservationEvent
    from workbench.replay.resume import rewritten

    history = [
        MessageEvent(id=10, source="user", text=TASK),
        ActionEvent(
            id=20, tool_name="execute_bash", tool_call_id="c", action=CmdRunAction(command="ls")
        ),
        ObservationEvent(
            id=30,
            cause=20,
            tool_call_id="c",
            observation=CmdOutputObservation(content="x" * 999, command="ls", exit_code=0),
        ),
        CondensationEvent(
            id=40,
            reason="threshold",
            elided=[30],
            summary="S",
            summarized_from=20,
            summarized_to=30,
            tokens_before=2,
            tokens_after=1,
            window=9,
        ),
    ]
    out = rewritten(history, [])
    condensation = out[-1]
    assert isinstance(condensation, CondensationEvent)
    assert (condensation.elided, condensation.summarized_from, condensation.summarized_to) == (
        [3],
        2,
        3,
    )
    assert build_messages("SYS", out)[2]["content"].endswith("S")


def test_a_summary_longer_than_what_it_stands_for_is_not_used(tmp_path: Path) -> None:
    """A junk summary once made the request 16 times larger than before condensing, and the
    next request was refused: it is cut, and one that does not shrink the history is dropped.
    After a failed summary the next ones wait (a hanging call cost its timeout every step)."""
    junk = " ".join(str(n) for n in range(40_000))
    script = {
        "steps": [*(bash(report(step)) for step in range(1, 13)), finish("done")],
        "without_tools": {"text": junk},
    }
    env = {
        "WORKBENCH_LLM_MAX_INPUT_TOKENS": "7000",
        "WORKBENCH_CONDENSE_KEEP_RECENT_STEPS": "2",
        "WORKBENCH_LLM_NUM_RETRIES": "0",
    }
    with ScriptedLLMServer(script) as server:
        code, events = run_long(tmp_path, server, **env)
        summary_calls = [r for r in server.requests if not r.get("tools")]
    assert code == 0
    condensed = [e for e in events if e["kind"] == "condensation"]
    assert condensed and all(e["tokens_after"] <= e["tokens_before"] for e in condensed)
    assert any("no shorter than what it stood for" in e["note"] for e in condensed)
    assert all(len(e["summary"]) < 7000 * 4 for e in condensed)
    assert len(summary_calls) <= 3, [e["note"] for e in condensed]
