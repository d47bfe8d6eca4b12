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
    print("tokens per request:", server.tokens)
    print("condensations:", [(e["tokens_before"], e["tokens_after"]) for e in condensations])
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
