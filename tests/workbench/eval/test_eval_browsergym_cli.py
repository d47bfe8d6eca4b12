"""A BrowserGym task through the real `workbench eval` command (a subprocess): the trial's
sandbox under network "off", the scripted model playing the known-good action, reward 1.0 from
the episode's best reward, each step's reward in the trial's session log.
(`test_browsergym_eval.py` plays more tasks, right and wrong, in one process.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from headless_harness import cli_env

from sandbox.executors.browser import browser_unavailable_reason
from sandbox.runtimes.bwrap import bwrap_available
from workbench.testing.llm_server import ScriptedLLMServer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser_unavailable_reason() is not None, reason="no browser here"),
    pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work"),
]


@pytest.mark.timeout(300)
def test_click_test_through_workbench_eval_scores_1(tmp_path: Path) -> None:
    click = {"tool_calls": [{"name": "browser", "arguments": {"code": 'click("13")'}}]}
    finish = {"tool_calls": [{"name": "finish", "arguments": {"message": "not done"}}]}
    out = tmp_path / "out"
    with ScriptedLLMServer({"steps": [click], "default": finish}) as server:
        (tmp_path / "tmp").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
        env |= cli_env(tmp_path, server.base_url, TMPDIR=str(tmp_path / "tmp"))
        env["WORKBENCH_AGENT_ENABLE_BROWSER"] = "true"
        ref = "browsergym/miniwob.click-test@1"
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "eval", ref, "--out", str(out), "--json"],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=280,
        )
        assert len(server.requests) == 1  # the task's done ended the run: no finish call
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    trial = next(line for line in lines if line.get("type") == "trial")
    assert (trial["status"], trial["reward"], trial["error"]) == ("done", 1.0, None)
    folder = out / "trials" / trial["trial_id"]
    log = (folder / "session.jsonl").read_text().splitlines()
    assert json.loads(log[0])["config"]["sandbox"]["network"] == "off"
    steps = [json.loads(line) for line in log[1:]]
    tasks = [e["observation"]["task"] for e in steps if e["kind"] == "observation"]
    assert [(t["reward"], t["done"]) for t in tasks] == [(1.0, True)]
    record = json.loads((folder / "verifier" / "browsergym.json").read_text())
    assert (record["reward"], record["rewards"], record["seed"]) == (1.0, [1.0], 1)
