"""The controller in-process: scripted LLM over HTTP (through litellm) and a real local sandbox."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from headless_harness import KEY, bash, create, finish, harness, seed_script, until

from sandbox.protocol import CmdRunAction, StreamEvent
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    MessageEvent,
    ObservationEvent,
    RejectedObservation,
    StateChangedEvent,
    event_to_json,
    parse_event,
)
from workbench.llm import load_litellm
from workbench.security.policy import Decision
from workbench.session.log import read


@pytest.fixture(scope="module", autouse=True)
def _litellm_once() -> None:
    load_litellm()  # seconds of CPU, once per test process: not inside the tests' time limits


def kinds(events: list[Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def states(events: list[Event]) -> list[str]:
    return [e.state for e in events if isinstance(e, StateChangedEvent)]


async def test_seed_task_end_to_end(tmp_path: Path) -> None:
    async with harness(tmp_path, seed_script) as h:
        seen: list[Event] = []
        h.controller.subscribe(seen.append)
        result = await h.controller.run("write a bash script that prints hi")
    assert (result.status, result.exit_code, result.steps) == ("success", 0, 3)
    assert result.reason == "hi.sh prints hi" and result.tokens > 0
    assert (h.workspace / "hi.sh").read_text() == "#!/bin/bash\necho hi\n"
    assert seen == h.controller.events
    run_obs = kinds(seen, ObservationEvent)[1].observation
    assert run_obs.kind == "run" and run_obs.exit_code == 0 and run_obs.content.strip() == "hi"
    assert states(seen) == ["running", "finished"]
    # The second request carries the first call and its answer, paired by id.
    second = h.server.requests[1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "tool"]
    assert second[3]["tool_call_id"] == second[2]["tool_calls"][0]["id"]
    assert str(h.workspace) in second[0]["content"]
    tools = [t["function"]["name"] for t in h.server.requests[0]["tools"]]
    assert tools == ["execute_bash", "str_replace_editor", "think", "finish"]
    # The log holds exactly the events, and no key.
    loaded = read(h.session.path)
    assert loaded.events == h.controller.events and not loaded.truncated
    assert KEY not in h.session.path.read_text()


async def test_hundred_malformed_calls_each_answered_then_stop(tmp_path: Path) -> None:
    bad = [
        {"tool_calls": [{"name": "execute_bash", "arguments": '{"command": "ls"'}]},
        {"tool_calls": [{"name": "no_such_tool", "arguments": "{}"}]},
        {"tool_calls": [{"name": "execute_bash", "arguments": {"command": "ls"}}]},
        {
            "tool_calls": [
                {"name": "execute_bash", "arguments": {"command": 5, "security_risk": "LOW"}}
            ]
        },
    ]
    script = [bad[i % 4] for i in range(100)]
    async with harness(tmp_path, script, agent__max_malformed_calls=100) as h:
        result = await h.controller.run("go")
    assert (result.status, result.exit_code, result.steps) == ("malformed", 9, 100)
    errors = kinds(h.controller.events, AgentErrorEvent)
    assert len(errors) == 100
    assert "not valid JSON" in errors[0].content and "no tool named" in errors[1].content
    assert "missing the required argument 'security_risk'" in errors[2].content
    assert "must be a string" in errors[3].content
    last = h.server.requests[-1]["messages"]
    answers = [m for m in last if m["role"] == "tool"]
    assert len(answers) == 99 and all(a["content"].startswith("ERROR: ") for a in answers)


async def test_many_malformed_calls_in_one_reply_are_all_answered(tmp_path: Path) -> None:
    calls = [{"name": "nope", "arguments": "{}", "id": f"c{i}"} for i in range(30)]
    async with harness(tmp_path, [{"tool_calls": calls}]) as h:
        result = await h.controller.run("go")
    assert result.status == "malformed" and result.steps == 1
    assert [e.tool_call_id for e in kinds(h.controller.events, AgentErrorEvent)] == [
        f"c{i}" for i in range(30)
    ]


async def test_a_valid_call_resets_the_malformed_run(tmp_path: Path) -> None:
    bad = {"tool_calls": [{"name": "nope", "arguments": "{}"}]}
    think = {"tool_calls": [{"name": "think", "arguments": {"thought": "ok"}}]}
    script = [bad, bad, think, bad, bad, finish()]
    async with harness(tmp_path, script, agent__max_malformed_calls=3) as h:
        result = await h.controller.run("go")
    assert result.status == "success"


async def test_max_iterations(tmp_path: Path) -> None:
    script = {
        "steps": [],
        "default": {"tool_calls": [{"name": "think", "arguments": {"thought": "again"}}]},
    }
    async with harness(tmp_path, script, agent__max_iterations=3, agent__stuck_threshold=10) as h:
        result = await h.controller.run("loop forever")
    assert (result.status, result.exit_code, result.steps) == ("max_iterations", 3, 3)
    assert len(h.server.requests) == 3


async def test_stuck_warns_first_then_stops(tmp_path: Path) -> None:
    step = {"tool_calls": [{"name": "str_replace_editor", "arguments": {}}]}
    script = {"steps": [], "default": step}

    def view_missing(ws: Path) -> Any:
        args = {"command": "view", "path": str(ws / "missing.txt")}
        step["tool_calls"][0]["arguments"] = args
        return script

    async with harness(tmp_path, view_missing, agent__stuck_threshold=4) as h:
        result = await h.controller.run("read it")
    assert (result.status, result.exit_code) == ("stuck", 5)
    assert result.steps == 5  # warned after 4 repeats, stopped at the 5th
    notes = [e for e in kinds(h.controller.events, MessageEvent) if e.source == "environment"]
    assert len(notes) == 1 and "stuck" in notes[0].text
    fifth = h.server.requests[4]["messages"]
    assert fifth[-1]["role"] == "user" and "stuck" in fifth[-1]["content"]


async def test_alternating_loop_is_stuck(tmp_path: Path) -> None:
    a = {"tool_calls": [{"name": "think", "arguments": {"thought": "A"}}]}
    b = {"tool_calls": [{"name": "think", "arguments": {"thought": "B"}}]}
    async with harness(tmp_path, [a, b] * 10, agent__stuck_threshold=4) as h:
        result = await h.controller.run("go")
    assert result.status == "stuck" and "alternated" in result.reason
    assert result.steps == 7  # A B A B A B -> warning, then the 7th step is still the loop


async def test_llm_rate_limit_retried_then_success(tmp_path: Path) -> None:
    script = [{"error": 429, "repeat": 3}, finish("ok")]
    async with harness(tmp_path, script, llm__num_retries=3) as h:
        result = await h.controller.run("go")
    assert result.status == "success"
    assert len(h.server.requests) == 4
    assert kinds(h.controller.events, ErrorEvent) == []


async def test_llm_server_error_forever(tmp_path: Path) -> None:
    script = {"steps": [], "default": {"error": 500}}
    async with harness(tmp_path, script, llm__num_retries=2) as h:
        result = await h.controller.run("go")
    assert (result.status, result.exit_code) == ("llm_error", 7)
    assert len(h.server.requests) == 3
    assert kinds(h.controller.events, ErrorEvent)[0].error_kind == "llm_server"
    assert states(h.controller.events)[-1] == "error"


async def test_token_budget(tmp_path: Path) -> None:
    think = {"tool_calls": [{"name": "think", "arguments": {"thought": "x"}}]}
    usage = {"usage": {"prompt_tokens": 600, "completion_tokens": 10}}
    script = {"steps": [], "default": {**think, **usage}}
    async with harness(tmp_path, script, budget__max_tokens=1000, agent__stuck_threshold=10) as h:
        result = await h.controller.run("go")
    assert (result.status, result.exit_code, result.steps) == ("budget", 4, 2)
    assert "token budget" in result.reason


async def test_wall_time_budget_cuts_a_slow_call(tmp_path: Path) -> None:
    async with harness(tmp_path, [{"text": "slow", "delay_s": 20}], budget__max_wall_s=1) as h:
        result = await h.controller.run("go")
    assert result.status == "budget" and "wall-time" in result.reason


async def test_rejected_action_never_reaches_the_sandbox(tmp_path: Path) -> None:
    asked: list[ConfirmationRequestEvent] = []

    async def refuse(action: ActionEvent, request: ConfirmationRequestEvent) -> Decision:
        asked.append(request)
        return Decision("reject", "test", "not today")

    def script(ws: Path) -> Any:
        return [create(ws / "a.txt", "x"), finish("gave up", "gave_up")]

    async with harness(tmp_path, script, confirm=refuse, security__confirmation="always") as h:
        result = await h.controller.run("go")
    assert (result.status, result.exit_code) == ("gave_up", 1)
    assert not (h.workspace / "a.txt").exists()
    assert len(asked) == 1 and asked[0].risk == "LOW"
    obs = kinds(h.controller.events, ObservationEvent)[0].observation
    assert isinstance(obs, RejectedObservation) and "not today" in obs.content
    assert "awaiting_confirmation" in states(h.controller.events)
    assert "not today" in h.server.requests[1]["messages"][-1]["content"]


async def test_an_allow_rule_lets_a_risky_action_through_and_the_log_says_which(
    tmp_path: Path,
) -> None:
    asked: list[ConfirmationRequestEvent] = []

    async def ask(action: ActionEvent, request: ConfirmationRequestEvent) -> Decision:
        asked.append(request)
        return Decision("reject", "test", "should not be asked")

    script = [bash("rm -rf build && echo cleaned", "HIGH"), bash("echo ok"), finish()]
    allow = ["run:rm -rf build", "run:echo cleaned"]  # a HIGH line needs rules without wildcards
    async with harness(tmp_path, script, confirm=ask, security__allow=allow) as h:
        result = await h.controller.run("go")
    assert result.status == "success" and not asked
    decisions = kinds(h.controller.events, ConfirmationDecisionEvent)
    rule = "allow:run:rm -rf build, allow:run:echo cleaned"  # each command of the line, its rule
    assert [(d.approved, d.rule) for d in decisions] == [(True, rule)]
    assert decisions[0].cause == kinds(h.controller.events, ActionEvent)[0].id
    assert ConfirmationDecisionEvent in {type(e) for e in read(h.session.path).events}


async def test_stop_verdict_ends_the_run_as_rejected(tmp_path: Path) -> None:
    script = [bash("rm -rf /tmp/nothing-here", "LOW"), finish()]
    async with harness(tmp_path, script, security__headless_on_confirm="stop") as h:
        result = await h.controller.run("go")
    assert (result.status, result.exit_code) == ("rejected", 6)
    request = kinds(h.controller.events, ConfirmationRequestEvent)[0]
    assert request.risk == "HIGH" and "rm -rf" in request.reason


async def test_reply_without_tool_call_waits_for_the_user(tmp_path: Path) -> None:
    script = [{"text": "Which file?"}, finish("thanks")]
    async with harness(tmp_path, script) as h:
        task = asyncio.create_task(h.controller.run("edit the file"))
        await until(lambda: h.controller.state == "awaiting_user")
        h.controller.send_message("a.txt")
        result = await asyncio.wait_for(task, 30)
    assert result.status == "success"
    last = h.server.requests[1]["messages"]
    assert last[-2] == {"role": "assistant", "content": "Which file?"}
    assert last[-1] == {"role": "user", "content": "a.txt"}


async def test_queued_message_reaches_the_next_call_and_pause_resume(tmp_path: Path) -> None:
    slow = {"tool_calls": [{"name": "think", "arguments": {"thought": "hm"}}], "held": True}
    async with harness(tmp_path, [slow, finish()]) as h:
        task = asyncio.create_task(h.controller.run("go"))
        await until(lambda: len(h.server.requests) == 1)  # the slow first call is in flight
        h.controller.send_message("also add a README")
        h.controller.pause()
        h.server.release()
        await until(lambda: h.controller.state == "paused")
        assert len(h.server.requests) == 1
        h.controller.resume()
        result = await asyncio.wait_for(task, 30)
    assert result.status == "success"
    assert h.server.requests[1]["messages"][-1] == {"role": "user", "content": "also add a README"}
    assert "paused" in states(h.controller.events)


async def test_stop_cancels_a_slow_llm_call(tmp_path: Path) -> None:
    async with harness(tmp_path, [{"text": "slow", "delay_s": 30}]) as h:
        task = asyncio.create_task(h.controller.run("go"))
        await until(lambda: len(h.server.requests) == 1)  # the slow call is in flight
        h.controller.stop("user pressed stop")
        result = await asyncio.wait_for(task, 5)
    assert (result.status, result.exit_code) == ("interrupted", 130)
    assert states(h.controller.events)[-1] == "stopped"
    assert read(h.session.path).events[-1] == h.controller.events[-1]


async def test_stop_interrupts_the_running_command(tmp_path: Path) -> None:
    async with harness(tmp_path, [bash("echo started; sleep 30; touch late"), finish()]) as h:
        h.controller.config.sandbox.soft_timeout_s = 25
        seen: list[StreamEvent] = []
        h.controller.subscribe_output(seen.append)
        task = asyncio.create_task(h.controller.run("go"))
        await until(lambda: any("started" in e.data for e in seen if e.kind == "output"))
        h.controller.stop("user pressed stop")
        result = await asyncio.wait_for(task, 10)
        assert result.status == "interrupted"
        after = await h.runtime.execute(CmdRunAction(command="echo free"))
    assert after.kind == "run" and after.content.strip() == "free", after
    assert not (h.workspace / "late").exists()


async def test_sandbox_lost_for_good(tmp_path: Path) -> None:
    async with harness(tmp_path, [bash("echo hi"), finish()]) as h:
        h.runtime.max_restarts = 0
        assert h.runtime.pid is not None
        server = psutil.Process(h.runtime.pid)
        os.kill(h.runtime.pid, signal.SIGKILL)
        await until(lambda: not server.is_running() or server.status() == psutil.STATUS_ZOMBIE)
        result = await h.controller.run("go")
    assert (result.status, result.exit_code) == ("sandbox_error", 8)
    assert kinds(h.controller.events, ErrorEvent)[0].error_kind == "sandbox"


async def test_live_output_is_forwarded(tmp_path: Path) -> None:
    script = [bash("for i in 1 2 3; do echo line$i; sleep 0.1; done"), finish()]
    async with harness(tmp_path, script) as h:
        chunks: list[StreamEvent] = []
        h.controller.subscribe_output(chunks.append)
        result = await h.controller.run("go")
    assert result.status == "success"
    text = "".join(c.data for c in chunks if c.kind == "output")
    assert "line1" in text and "line3" in text


async def test_output_that_trails_the_last_result_still_reaches_the_pane(tmp_path: Path) -> None:
    """Output comes on its own connection and may arrive after the run has ended on the
    command's result: forwarding goes on until the shell reports the command's end."""
    script = [bash("for i in 1 2 3; do echo line$i; sleep 0.1; done; echo last-line"), finish()]
    async with harness(tmp_path, script) as h:
        stream = h.runtime.stream

        async def late_stream() -> AsyncIterator[StreamEvent]:
            async for event in stream():
                await asyncio.sleep(0.15)  # scripted delay: a slow connection, each event late
                yield event

        h.runtime.stream = late_stream  # type: ignore[method-assign]
        events: list[StreamEvent] = []
        h.controller.subscribe_output(events.append)
        result = await h.controller.run("go")
        assert result.status == "success"
        await until(lambda: any(e.kind == "finished" for e in events), 30)
    text = "".join(e.data for e in events if e.kind == "output")
    assert "last-line" in text


async def test_events_are_json_round_trippable(tmp_path: Path) -> None:
    async with harness(tmp_path, seed_script) as h:
        await h.controller.run("write a bash script that prints hi")
    lines = h.session.path.read_text().splitlines()[1:]
    parsed = [parse_event(line) for line in lines]
    assert [json.loads(event_to_json(event)) for event in parsed] == [json.loads(x) for x in lines]
    assert parsed == h.controller.events  # what was lived is what is read back
    assert {type(event).__name__ for event in parsed} >= {"ActionEvent", "ObservationEvent"}


async def test_missing_or_repeated_call_ids_are_made_unique(tmp_path: Path) -> None:
    think = {"name": "think", "arguments": {"thought": "t"}, "id": "same"}
    async with harness(tmp_path, [{"tool_calls": [think, think]}, finish()]) as h:
        result = await h.controller.run("go")
    assert result.status == "success"
    ids = [e.tool_call_id for e in kinds(h.controller.events, ActionEvent)][:2]
    assert ids[0] == "same" and ids[1] != "same"
    answered = [m["tool_call_id"] for m in h.server.requests[1]["messages"] if m["role"] == "tool"]
    assert answered == ids


PNG_CELL = (
    "import base64\nfrom IPython.display import Image, display\n"
    "display(Image(data=base64.b64decode('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==')))"
)


async def test_images_are_kept_with_the_session(tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "execute_ipython_cell", "arguments": {"code": PNG_CELL}}]},
        finish("drew it"),
    ]
    async with harness(tmp_path, script, disable=("browser",), agent__enable_jupyter=True) as h:
        result = await h.controller.run("draw a dot")
    assert result.status == "success"
    observation = kinds(h.controller.events, ObservationEvent)[0].observation
    assert observation.kind == "ipython" and len(observation.images) == 1
    kept = h.session.payload_dir / observation.images[0]
    assert kept.read_bytes().startswith(b"\x89PNG")


async def test_after_a_cd_in_the_shell_the_model_reads_where_the_kernel_is(tmp_path: Path) -> None:
    cell = {"tool_calls": [{"name": "execute_ipython_cell", "arguments": {"code": "print(6*7)"}}]}
    script = [bash("mkdir -p sub && cd sub"), cell, finish()]
    async with harness(tmp_path, script, disable=("browser",), agent__enable_jupyter=True) as h:
        result = await h.controller.run("where is the kernel")
        assert result.status == "success"
        answer = h.server.requests[2]["messages"][-1]["content"]
    assert answer.splitlines()[0] == "42"
    assert f"[Jupyter current working directory: {h.workspace / 'sub'}]" in answer
    assert "[Jupyter Python interpreter: " in answer


async def test_a_secret_in_an_observation_never_reaches_the_model(tmp_path: Path) -> None:
    script = [bash("echo the key is $(cat leak.txt)"), finish()]
    async with harness(tmp_path, script) as h:
        (h.workspace / "leak.txt").write_text(KEY)
        result = await h.controller.run("find the key")
        assert result.status == "success"
        sent = json.dumps(h.server.requests[1]["messages"])
    assert KEY not in sent
    assert "the key is ***" in sent
