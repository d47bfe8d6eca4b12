"""ATIF trajectories from real session logs (headless sessions with the scripted LLM and a
real local sandbox) validate; hand-broken ones fail with the error that names the fault."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from eval_fixtures import run_real_session

from workbench.eval.atif import write_trajectory
from workbench.eval.atif_schema import validate, validate_file


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A real session log and its trajectory."""
    tmp = tmp_path_factory.mktemp("busy")
    log = run_real_session(tmp)
    doc = write_trajectory(log, tmp / "out" / "trajectory.json", agent_version="9.9")
    assert json.loads((tmp / "out" / "trajectory.json").read_text()) == doc  # what it wrote
    return log, doc


def test_a_real_session_becomes_a_valid_trajectory(
    busy: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    log, doc = busy
    assert validate(doc) == []
    assert doc["schema_version"] == "ATIF-v1.8" and doc["session_id"] == log.stem
    assert doc["agent"] == {
        "name": "workbench",
        "version": "9.9",
        "model_name": "openai/test-model",
    }
    steps = doc["steps"]
    assert [s["step_id"] for s in steps] == list(range(1, len(steps) + 1))
    assert steps[0]["source"] == "user" and steps[0]["message"] == "say hello"
    # one reply, two calls, two results each naming its call
    first = steps[1]
    assert first["source"] == "agent" and first["message"] == "I will look around first."
    names = [call["function_name"] for call in first["tool_calls"]]
    assert names == ["execute_bash", "think"]
    assert first["tool_calls"][0]["arguments"]["command"] == "echo hello"
    results = first["observation"]["results"]
    ids = [call["tool_call_id"] for call in first["tool_calls"]]
    assert [r["source_call_id"] for r in results] == ids
    assert "hello" in results[0]["content"]
    assert first["metrics"]["prompt_tokens"] > 0 and first["llm_call_count"] == 1
    # the malformed call is a call answered by its error
    bad = steps[2]
    assert bad["tool_calls"][0]["function_name"] == "no_such_tool"
    assert bad["tool_calls"][0]["extra"]["malformed"] is True
    assert bad["observation"]["results"][0]["content"].startswith("ERROR:")
    # the plain reply, then headless mode's automatic reply in the user's place
    reply = next(s for s in steps if s["message"] == "Shall I go on?")
    nudge = steps[reply["step_id"]]
    assert nudge["source"] == "user" and nudge["message"].startswith("(automatic reply")
    # what the edit changed is on its step
    edit = next(s for s in steps if s["message"] == "Writing it.")
    assert edit["extra"]["checkpoints"][0]["added"] == ["hello.txt"]
    assert steps[-1]["tool_calls"][0]["function_name"] == "finish"
    # metrics and model only on agent steps; the totals add up
    agent = [s for s in steps if s["source"] == "agent"]
    assert all("metrics" not in s and "model_name" not in s for s in steps if s not in agent)
    final = doc["final_metrics"]
    assert final["total_steps"] == len(steps)
    assert final["total_prompt_tokens"] == sum(s["metrics"]["prompt_tokens"] for s in agent)
    assert final["extra"]["llm_calls"] == 5
    assert doc["extra"]["final_state"] == "finished"


def test_a_trajectory_file_is_checked_as_written(tmp_path: Path) -> None:
    path = tmp_path / "trajectory.json"
    path.write_text('{"schema_version": "ATIF-v1.8", "steps": [')
    assert "trajectory.json: not a readable JSON file (Expecting value" in validate_file(path)[0]
    path.write_text(json.dumps({"schema_version": "ATIF-v1.8", "steps": []}))
    assert validate_file(path) == [
        "$.agent: required field is missing",
        "$.steps: needs at least 1 item(s), got 0",
    ]


def test_a_log_cut_mid_line_still_converts_and_says_so(
    busy: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    log, whole = busy
    cut = tmp_path / log.name
    cut.write_bytes(log.read_bytes() + b'{"id": 999, "kind": "mess')
    doc = write_trajectory(cut, tmp_path / "t.json")
    assert validate(doc) == [] and "cut short" in doc["notes"]
    assert len(doc["steps"]) == len(whole["steps"])


def test_a_session_whose_sandbox_never_started_is_a_system_step(tmp_path: Path) -> None:
    log = run_real_session(tmp_path, [{"text": "unused"}], sandbox__runtime="remote")
    doc = write_trajectory(log, tmp_path / "t.json")
    assert validate(doc) == []
    assert [s["source"] for s in doc["steps"]] == ["system"]
    assert doc["steps"][0]["message"].startswith("error (")
    assert doc["final_metrics"]["total_prompt_tokens"] == 0


Mutation = Callable[[dict[str, Any]], None]


def _agent_step(doc: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in doc["steps"] if len(s.get("tool_calls", [])) == 2)


def _set(path: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        target[last] = value

    return mutate


BROKEN: list[tuple[str, Mutation, str]] = [
    ("unknown root field", _set("reward", 1), "$.reward: unknown field"),
    ("unknown step field", _set("steps.0.role", "user"), "$.steps[0].role: unknown field"),
    ("unknown agent field", _set("agent.temperature", 0), "$.agent.temperature: unknown field"),
    ("bad version", _set("schema_version", "ATIF-v2.0"), "$.schema_version: must be one of"),
    ("no steps", _set("steps", []), "$.steps: needs at least 1"),
    ("step id gap", _set("steps.1.step_id", 7), "$.steps[1].step_id: expected 2, got 7"),
    ("step id zero", _set("steps.0.step_id", 0), "$.steps[0].step_id: must be >= 1"),
    ("step id text", _set("steps.0.step_id", "1"), "$.steps[0].step_id: expected an integer"),
    ("bad source", _set("steps.0.source", "tool"), "$.steps[0].source: must be one of"),
    ("no message", _set("steps.0.message", None), "$.steps[0].message: required field"),
    ("message number", _set("steps.0.message", 3), "$.steps[0].message: expected a string or"),
    ("bad timestamp", _set("steps.0.timestamp", "yesterday"), "$.steps[0].timestamp: not an ISO"),
    (
        "model on user",
        _set("steps.0.model_name", "m"),
        "$.steps[0].model_name: only allowed on agent",
    ),
    ("metrics on user", _set("steps.0.metrics", {}), "$.steps[0].metrics: only allowed on agent"),
    (
        "calls on user",
        _set("steps.0.tool_calls", []),
        "$.steps[0].tool_calls: only allowed on agent",
    ),
    ("version missing", _set("agent.version", None), "$.agent.version: required field"),
    ("total steps < 0", _set("final_metrics.total_steps", -1), "total_steps: must be >= 0"),
    (
        "cost as text",
        _set("final_metrics.total_cost_usd", "0.1"),
        "total_cost_usd: expected a number",
    ),
    ("extra not object", _set("extra", []), "$.extra: expected an object"),
]


def _step_mutation(change: Callable[[dict[str, Any]], None]) -> Mutation:
    return lambda doc: change(_agent_step(doc))


def _other_steps_call(doc: dict[str, Any]) -> None:
    step = _agent_step(doc)
    other = next(s for s in doc["steps"] if s.get("tool_calls") and s is not step)
    step["observation"]["results"][0]["source_call_id"] = other["tool_calls"][0]["tool_call_id"]


STEP_BROKEN: list[tuple[str, Mutation, str]] = [
    ("result names another step's call", _other_steps_call, "names no tool call of this step"),
    (
        "arguments as text",
        _step_mutation(lambda s: s["tool_calls"][0].update(arguments='{"command": "ls"}')),
        ".tool_calls[0].arguments: expected an object",
    ),
    (
        "duplicate call id",
        _step_mutation(
            lambda s: s["tool_calls"][1].update(tool_call_id=s["tool_calls"][0]["tool_call_id"])
        ),
        ".tool_calls[1].tool_call_id:",
    ),
    (
        "tokens as text",
        _step_mutation(lambda s: s["metrics"].update(prompt_tokens="12")),
        ".metrics.prompt_tokens: expected an integer",
    ),
    (
        "tokens as bool",
        _step_mutation(lambda s: s["metrics"].update(completion_tokens=True)),
        ".metrics.completion_tokens: expected an integer, got a boolean",
    ),
    (
        "unknown metric",
        _step_mutation(lambda s: s["metrics"].update(latency_ms=3)),
        ".metrics.latency_ms: unknown field",
    ),
    (
        "no-LLM step with metrics",
        _step_mutation(lambda s: s.update(llm_call_count=0)),
        ".metrics: not allowed when llm_call_count is 0",
    ),
    (
        "image part without source",
        _step_mutation(
            lambda s: s["observation"]["results"][0].update(content=[{"type": "image"}])
        ),
        ".observation.results[0].content[0].source: required when type is 'image'",
    ),
    (
        "image part with an audio type",
        _step_mutation(
            lambda s: s.update(
                message=[{"type": "image", "source": {"media_type": "audio/wav", "path": "a"}}]
            )
        ),
        ".message[0].source.media_type: must be one of",
    ),
    (
        "results missing",
        _step_mutation(lambda s: s.update(observation={})),
        ".observation.results: required field",
    ),
    (
        "subagent ref that resolves to nothing",
        _step_mutation(
            lambda s: s["observation"]["results"][0].update(
                subagent_trajectory_ref=[{"session_id": "x"}]
            )
        ),
        "set trajectory_id or trajectory_path",
    ),
]


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [pytest.param(m, e, id=name) for name, m, e in BROKEN + STEP_BROKEN],
)
def test_a_broken_trajectory_fails_with_the_right_error(
    busy: tuple[Path, dict[str, Any]], mutate: Mutation, expected: str
) -> None:
    doc = copy.deepcopy(busy[1])
    mutate(doc)
    errors = validate(doc)
    assert any(expected in error for error in errors), errors


def test_multimodal_audio_and_embedded_subagents_of_v1_8_validate(
    busy: tuple[Path, dict[str, Any]],
) -> None:
    doc = copy.deepcopy(busy[1])
    sub = copy.deepcopy(doc)
    sub["trajectory_id"] = "sub-1"
    doc["subagent_trajectories"] = [sub]
    step = _agent_step(doc)
    step["observation"]["results"][0]["subagent_trajectory_ref"] = [{"trajectory_id": "sub-1"}]
    step["message"] = [
        {"type": "text", "text": "listen"},
        {
            "type": "audio",
            "source": {"media_type": "audio/mp3", "path": "a.mp3", "duration_sec": 2},
        },
    ]
    assert validate(doc) == []
    doc["subagent_trajectories"].append(copy.deepcopy(sub))
    assert any("'sub-1' is not unique" in e for e in validate(doc))
    step["observation"]["results"][0]["subagent_trajectory_ref"] = [{"trajectory_id": "nope"}]
    assert any("names no embedded subagent" in e for e in validate(doc))


def test_the_rarer_events_land_where_they_belong(tmp_path: Path) -> None:
    """A resumed session written with the real SessionLog: copied history, instructions,
    a refused action, a kept image, a retry, a proxied host, a condensation and an error."""
    from sandbox.protocol import CmdRunAction, IPythonAction, IPythonObservation
    from workbench.events import (
        ActionEvent,
        CondensationEvent,
        ConfirmationDecisionEvent,
        ConfirmationRequestEvent,
        ErrorEvent,
        InstructionsEvent,
        LLMCallEvent,
        LLMRetryEvent,
        MessageEvent,
        NetworkEvent,
        ObservationEvent,
        RejectedObservation,
    )
    from workbench.session.log import SessionLog, make_header

    header = make_header("20261126-000000-abcdef", "/ws", "m", parent_id="p", parent_event=3)
    log = SessionLog.create(tmp_path / "sessions", header)
    log.write_payload("plot.png", b"\x89PNG\r\n\x1a\n")

    def call(id: int) -> LLMCallEvent:
        return LLMCallEvent(
            id=id, model="m", prompt_tokens=10, completion_tokens=2, cost=0.5, latency_ms=5
        )

    events = [
        MessageEvent(id=1, source="user", text="old task"),
        call(2),
        MessageEvent(id=3, source="agent", text="old answer"),
        InstructionsEvent(id=4, files=["AGENTS.md"], chars=10),
        MessageEvent(id=5, source="environment", text="(resumed)"),
        LLMRetryEvent(id=6, model="m", retry=1, wait_s=0.1, error_kind="rate_limit", message="429"),
        call(7),
        ActionEvent(
            id=8,
            tool_name="execute_bash",
            tool_call_id="c1",
            action=CmdRunAction(command="rm -rf /"),
        ),
        ConfirmationRequestEvent(id=9, cause=8, risk="HIGH", reason="deletes everything"),
        ConfirmationDecisionEvent(id=10, cause=8, approved=False, rule="--on-confirm reject"),
        ObservationEvent(
            id=11, cause=8, tool_call_id="c1", observation=RejectedObservation(content="refused")
        ),
        call(12),
        ActionEvent(
            id=13,
            tool_name="execute_ipython_cell",
            tool_call_id="c2",
            action=IPythonAction(code="plot()"),
        ),
        NetworkEvent(id=14, cause=13, host="pypi.org", port=443, allowed=True, rule="net:pypi.org"),
        ObservationEvent(
            id=15,
            cause=13,
            tool_call_id="c2",
            observation=IPythonObservation(code="plot()", content="", images=["plot.png"]),
        ),
        CondensationEvent(
            id=16,
            reason="threshold",
            summary="so far: a plot",
            tokens_before=9,
            tokens_after=3,
            window=8,
            prompt_tokens=4,
            completion_tokens=1,
            cost=0.25,
        ),
        ErrorEvent(id=17, error_kind="llm_auth", message="bad key"),
    ]
    for event in events:
        log.append(event)
    log.close()
    out = tmp_path / "trial" / "trajectory.json"
    doc = write_trajectory(log.path, out)
    assert validate(doc) == []
    steps = doc["steps"]
    assert [s["source"] for s in steps] == [
        "user",
        "agent",
        "user",
        "agent",
        "agent",
        "system",
        "system",
    ]
    assert [s.get("is_copied_context", False) for s in steps[:3]] == [True, True, False]
    assert steps[2]["extra"] == {"origin": "workbench"}
    refused = steps[3]
    assert refused["extra"]["confirmations"] == [
        {"asked": True, "risk": "HIGH", "reason": "deletes everything"},
        {"approved": False, "rule": "--on-confirm reject", "reason": ""},
    ]
    assert refused["observation"]["results"] == [{"content": "refused", "source_call_id": "c1"}]
    image_step = steps[4]
    assert image_step["extra"]["network"][0]["host"] == "pypi.org"
    content = image_step["observation"]["results"][0]["content"]
    assert content[1]["source"]["media_type"] == "image/png"
    assert (out.parent / content[1]["source"]["path"]).resolve() == log.payload_dir / "plot.png"
    assert steps[5]["observation"]["results"][0]["content"] == "so far: a plot"
    assert steps[6]["message"] == "error (llm_auth): bad key"
    final = doc["final_metrics"]
    assert (final["total_prompt_tokens"], final["total_cost_usd"]) == (34, 1.75)
    assert final["extra"] == {"llm_calls": 3, "llm_retries": 1}
    assert doc["extra"]["instruction_files"] == ["AGENTS.md"]
    assert doc["extra"]["parent_session_id"] == "p"
