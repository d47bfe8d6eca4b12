"""BrowserGym tasks as eval tasks, end to end in one process: `BrowserGymTask` starts the
episode in a real sandbox (bwrap, network "off"), the real controller runs the agent with the
scripted LLM server playing a fixed sequence of browser actions, the session log records each
step's reward, and `verify` reads the score (the best reward)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from headless_harness import MODEL, make_config

from sandbox.executors.browser import browser_unavailable_reason
from sandbox.protocol import BrowseObservation, BrowseTaskState
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime
from workbench.controller.loop import Controller
from workbench.eval.browsergym_task import BrowserGymTask, BrowserGymTaskError, parse_ref
from workbench.eval.types import set_trial_loop
from workbench.llm import LLMClient
from workbench.session.log import SessionLog, make_header, new_session_id
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tools.browser import BrowserTool

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser_unavailable_reason() is not None, reason="no browser here"),
    pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work"),
]


def browse(code: str) -> dict[str, Any]:
    """A script step: one browser call."""
    return {"tool_calls": [{"name": "browser", "arguments": {"code": code}}]}


FINISH = {"tool_calls": [{"name": "finish", "arguments": {"message": "I could not"}}]}


async def play(tmp_path: Path, ref: str, script: list[dict[str, Any]]) -> dict[str, Any]:
    """Run task `ref` with the scripted model; the run's status, the score, the step rewards
    the session log recorded and the instruction the agent was given."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    set_trial_loop(asyncio.get_running_loop())
    task = BrowserGymTask(ref)
    assert task.config.allow_internet is False and task.config.uses_docker is False
    runtime = LocalRuntime(workspace, isolation="bwrap", network="off", disable=["jupyter"])
    await runtime.start()
    log_dir = tmp_path / "sessions"
    try:
        instruction = await asyncio.to_thread(task.instruction, runtime)
        async with ScriptedLLMServer({"steps": script, "default": FINISH}) as server:
            needs = {key.replace(".", "__"): value for key, value in task.config_overrides.items()}
            config = make_config(tmp_path, server.base_url, workspace, **needs)
            assert config.agent.enable_browser and config.sandbox.network == "off"
            header = make_header(new_session_id(), workspace, MODEL, config.redacted_dict())
            session = SessionLog.create(log_dir, header)
            try:
                controller = Controller(config, runtime, LLMClient(config.llm), session)
                result = await controller.run(instruction)
            finally:
                session.close()
            calls = len(server.requests)
        verdict = await asyncio.to_thread(task.verify, runtime, 30.0)
    finally:
        await runtime.close()
    events = [json.loads(line) for line in session.path.read_text().splitlines()[1:]]
    steps = [
        e["observation"]["task"]
        for e in events
        if e["kind"] == "observation" and (e["observation"].get("task") is not None)
    ]
    return {
        "status": result.status,
        "reason": result.reason,
        "reward": verdict.reward,
        "files": verdict.files,
        "logged": [(s["reward"], s["done"]) for s in steps],
        "instruction": instruction,
        "llm_calls": calls,
    }


@pytest.mark.parametrize(
    ("ref", "script", "logged"),
    [
        ("browsergym/miniwob.click-test@1", [browse('click("13")')], [(1.0, True)]),
        ("browsergym/miniwob.click-button@3", [browse('click("19")')], [(1.0, True)]),
        (
            "browsergym/miniwob.enter-text@5",
            [browse('fill("14", "Ashlea")'), browse('click("15")')],
            [(0.0, False), (1.0, True)],
        ),
    ],
)
async def test_known_good_sequence_scores_1(
    tmp_path: Path, ref: str, script: list[dict[str, Any]], logged: list[tuple[float, bool]]
) -> None:
    run = await play(tmp_path, ref, script)
    assert run["reward"] == 1.0
    assert run["logged"] == logged  # each step's reward is in the session log
    assert run["status"] == "success" and "ended its episode" in run["reason"]
    assert run["llm_calls"] == len(script)  # the task's done ended the run: no finish call
    assert json.loads(run["files"]["verifier/browsergym.json"])["rewards"] == [r for r, _ in logged]
    task_id, seed = parse_ref(ref)
    first = script[0]["tool_calls"][0]["arguments"]["code"].split('"')[1]
    assert f"Web task '{task_id}'" in run["instruction"] and f"[{first}]" in run["instruction"]
    assert f"seed {seed}" in run["files"]["verifier/stdout.txt"].decode()


async def test_wrong_button_scores_0_and_ends_the_run(tmp_path: Path) -> None:
    run = await play(tmp_path, "browsergym/miniwob.click-button@3", [browse('click("17")')])
    assert (run["reward"], run["logged"], run["status"]) == (0.0, [(0.0, True)], "gave_up")


async def test_steps_that_miss_score_0(tmp_path: Path) -> None:
    """The agent scrolls and gives up: the episode never ends, the score is 0."""
    run = await play(tmp_path, "browsergym/miniwob.click-test@1", [browse("scroll(0, 40)")])
    assert (run["reward"], run["logged"], run["status"]) == (0.0, [(0.0, False)], "success")


def test_bad_refs_say_the_form() -> None:
    for bad in ("miniwob.click-test", "browsergym/click-test", "browsergym/miniwob.x@y"):
        with pytest.raises(BrowserGymTaskError, match=r"browsergym/<benchmark>\.<task>"):
            BrowserGymTask(bad)
    assert parse_ref("browsergym/miniwob.click-test") == ("miniwob.click-test", None)
    assert BrowserGymTask("browsergym/miniwob.click-test").seed is not None  # drawn, recorded


async def test_a_sandbox_without_the_browser_says_where_these_tasks_run(tmp_path: Path) -> None:
    set_trial_loop(asyncio.get_running_loop())
    runtime = LocalRuntime(tmp_path, disable=["browser", "jupyter"], warm_up=False)
    await runtime.start()
    try:
        with pytest.raises(RuntimeError, match="need the sandbox's browser: run them on the local"):
            await asyncio.to_thread(
                BrowserGymTask("browsergym/miniwob.click-test").instruction, runtime
            )
    finally:
        await runtime.close()


def test_the_browser_tool_tells_the_agent_and_the_person_the_reward() -> None:
    tool = BrowserTool()
    state = BrowseTaskState(task_id="miniwob.click-test", reward=0.0, message="try again")
    going = BrowseObservation(action="scroll(0, 9)", url="file:///t.html", task=state)
    assert "not done yet" in tool.observation_text(going)
    assert "The task says: try again" in tool.human_text(going)
    assert tool.ends_run_after(going) is None
    done = going.model_copy(
        update={"task": state.model_copy(update={"reward": 1.0, "done": True, "best_reward": 1.0})}
    )
    assert "The task is complete" in tool.observation_text(done)
    assert "Call finish now" in tool.observation_text(done)
    assert "reward 1 · task done" in tool.observation_cell("k", done).summary
    ends = tool.ends_run_after(done)
    assert ends is not None and ends[0] == "success" and "best reward 1" in ends[1]
    plain = BrowseObservation(action="noop()", url="about:blank")
    assert "task" not in tool.observation_text(plain) and tool.ends_run_after(plain) is None
