"""An action cut short is recorded as what it was (issue 23, item 1): the person's stop, a
limit, or a sandbox that dies mid-command leaves an observation with the output so far, the
exit status and why, in the log and in the model's next request. Real bash in a real local
sandbox, the scripted LLM over HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from headless_harness import bash, cli_env, finish, harness, json_lines, run_cli, until
from waiting import wait_until

from sandbox.protocol import CmdOutputObservation, ErrorObservation, StreamEvent
from workbench.controller.loop import Controller
from workbench.events import ActionEvent, ObservationEvent
from workbench.llm import load_litellm
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer

LOOP = "for i in $(seq 1 60); do echo tick $i; sleep 0.2; done"
"""Twelve seconds of ticks: a stop always lands in the middle of it."""


@pytest.fixture(scope="module", autouse=True)
def _litellm_once() -> None:
    load_litellm()  # seconds of CPU, once per test process: not inside the tests' time limits


def ticks_seen(controller: Controller) -> list[StreamEvent]:
    """Follow the live output; the list fills as ticks come (as the shell pane sees them)."""
    seen: list[StreamEvent] = []
    controller.subscribe_output(seen.append)
    return seen


def printed(seen: list[StreamEvent]) -> str:
    return "".join(e.data for e in seen if e.kind == "output")


def the_observation(controller: Controller) -> Any:
    """The one observation of the loop's action, from the log as written."""
    loaded = read(controller.session.path)
    action = next(e for e in loaded.events if isinstance(e, ActionEvent) and LOOP in str(e))
    found = [e for e in loaded.events if isinstance(e, ObservationEvent) and e.cause == action.id]
    assert len(found) == 1, found
    return found[0].observation


async def test_the_persons_stop_is_recorded_with_the_output_so_far(tmp_path: Path) -> None:
    async with harness(tmp_path, [bash("echo warm-up"), bash(LOOP), finish()]) as h:
        seen = ticks_seen(h.controller)
        running = asyncio.ensure_future(h.controller.run("count"))
        await until(lambda: "tick 3" in printed(seen))
        h.controller.stop()
        result = await asyncio.wait_for(running, 20)
        assert (result.status, result.exit_code) == ("interrupted", 130)
        obs = the_observation(h.controller)
        assert isinstance(obs, CmdOutputObservation), obs
        assert obs.exit_code == 130 and not obs.running
        assert "tick 1\ntick 2\ntick 3" in obs.content and "tick 60" not in obs.content
        assert "warm-up" not in obs.content  # the command before is not this one's output
        assert obs.note is not None and "Interrupted by the person" in obs.note
        # The model's next request says so, instead of "not carried out".
        again = await asyncio.wait_for(h.controller.run("go on"), 20)
        assert again.status == "success"
        answer = h.server.requests[-1]["messages"][-2]
        assert answer["role"] == "tool", answer
        assert "tick 3" in answer["content"] and "exit code 130" in answer["content"]
        assert "Interrupted by the person" in answer["content"]
        assert "not carried out" not in answer["content"]
    # Replay shows it too (it reads the log).
    done = run_cli(
        ["replay", str(h.session.path), "--headless"],
        cli_env(tmp_path, "http://127.0.0.1:9"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "tick 3" in done.stdout and "Interrupted by the person" in done.stdout


async def test_a_run_stopped_by_its_wall_time_budget_records_the_command(tmp_path: Path) -> None:
    async with harness(tmp_path, [bash(LOOP), finish()], budget__max_wall_s=4) as h:
        result = await h.controller.run("count")
        assert result.status == "budget" and "wall-time" in result.reason
        obs = the_observation(h.controller)
    assert isinstance(obs, CmdOutputObservation), obs
    assert obs.exit_code == 130 and "tick 1\n" in obs.content and "tick 60" not in obs.content
    assert obs.note is not None and "reached a limit" in obs.note and "wall-time" in obs.note


@pytest.mark.parametrize("restarts", [0, 3], ids=["lost-for-good", "restarted"])
async def test_a_sandbox_that_dies_mid_command_leaves_the_output_so_far(
    tmp_path: Path, restarts: int
) -> None:
    async with harness(tmp_path, [bash(LOOP), finish()]) as h:
        h.runtime.max_restarts = restarts
        seen = ticks_seen(h.controller)
        running = asyncio.ensure_future(h.controller.run("count"))
        await until(lambda: "tick 3" in printed(seen))
        assert h.runtime.pid is not None
        os.kill(h.runtime.pid, signal.SIGKILL)
        result = await asyncio.wait_for(running, 60)
        assert result.status == ("sandbox_error" if restarts == 0 else "success"), result
        obs = the_observation(h.controller)
    assert isinstance(obs, ErrorObservation) and obs.error_kind == "sandbox", obs
    assert "tick 1\ntick 2\ntick 3" in obs.content
    if restarts:  # the model read it in its next request
        answer = h.server.requests[-1]["messages"][-1]
        assert answer["role"] == "tool" and "tick 3" in answer["content"]


def test_ctrl_c_in_headless_records_the_command_as_interrupted(tmp_path: Path) -> None:
    """The CLI: `workbench --headless`, Ctrl-C (SIGINT) while the loop runs."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    counting = "for i in $(seq 1 100); do echo tick $i; echo $i > n.txt; sleep 0.2; done"
    with ScriptedLLMServer([bash(counting)]) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
        proc = subprocess.Popen(
            [sys.executable, "-m", "workbench", "--headless", "--json", "-t", "count"],
            env={**env, **cli_env(tmp_path, server.base_url)},
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        counter = workspace / "n.txt"

        def counted_past_two() -> bool:
            if counter.exists() and counter.read_text().strip() not in ("", "1", "2"):
                return True
            assert proc.poll() is None, proc.communicate()
            return False

        wait_until(counted_past_two, 60, "the loop to count past 2")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    summary = json_lines(out)[-1]
    found = [e for e in read(Path(summary["log"])).events if isinstance(e, ObservationEvent)]
    assert len(found) == 1, found
    obs = found[0].observation
    assert isinstance(obs, CmdOutputObservation) and obs.exit_code == 130, obs
    assert "tick 1\ntick 2\ntick 3" in obs.content and "tick 100" not in obs.content
    assert obs.note is not None and "Interrupted by the person" in obs.note
    assert "Ctrl-C" in obs.note
