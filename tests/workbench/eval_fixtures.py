"""Real inputs for the eval tests: session logs from real headless sessions (scripted LLM,
real local sandbox) and OUT folders laid out as the evaluation contract says."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from headless_harness import bash, create, finish, make_config

from workbench.headless.output import JsonPrinter
from workbench.headless.runner import run_session
from workbench.testing.llm_server import ScriptedLLMServer


def busy_script(workspace: Path) -> list[dict[str, Any]]:
    """A session with a bit of everything: two calls in one reply, a malformed call, an
    edit, a plain reply answered by a nudge, then finish."""
    think = {"name": "think", "arguments": {"thought": "the file should say hello"}}
    return [
        {
            "text": "I will look around first.",
            "tool_calls": [bash("echo hello")["tool_calls"][0], think],
        },
        {"tool_calls": [{"name": "no_such_tool", "arguments": {"x": 1}}]},
        {"text": "Writing it.", **create(workspace / "hello.txt", "hello\n")},
        {"text": "Shall I go on?"},
        finish("hello.txt says hello"),
    ]


def run_real_session(
    tmp_path: Path, script: Any = busy_script, task: str = "say hello", **dotted: Any
) -> Path:
    """Run one real headless session in this process; the path of its session log."""
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    if callable(script):
        script = script(workspace)

    async def go() -> dict[str, Any]:
        async with ScriptedLLMServer(script) as server:
            config = make_config(tmp_path, server.base_url, workspace, **dotted)
            out = io.StringIO()
            return await run_session(config, task, JsonPrinter(out, io.StringIO()))

    # Module-scoped fixtures run before the suite's per-test isolation: keep the data
    # (sessions, checkpoints) under tmp_path here too.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
        patch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "cfg"))
        summary = asyncio.run(go())
    return Path(summary["log"])


def write_trial(
    out: Path,
    task: str,
    attempt: int,
    *,
    status: str = "done",
    reward: float | None = 1.0,
    error: str | None = None,
    timed_out: dict[str, bool] | None = None,
    tokens: tuple[int, int] = (100, 20),
    cost: float = 0.01,
    seconds: dict[str, float] | None = None,
    session_log: Path | None = None,
    finished: bool = True,
) -> Path:
    """One trial folder under OUT/trials/ as the driver writes it (`finished=False`: no
    trial.json yet, as while it runs)."""
    trial_id = f"{task}__{attempt}"
    folder = out / "trials" / trial_id
    folder.mkdir(parents=True, exist_ok=True)
    session_id = ""
    if session_log is not None:
        shutil.copyfile(session_log, folder / "session.jsonl")
        session_id = session_log.stem
    if not finished:
        return folder
    outcome = {
        "trial_id": trial_id,
        "status": status,
        "reward": reward if status == "done" else None,
        "rewards": {"reward": reward} if status == "done" and reward is not None else {},
        "error": error,
        "timed_out": timed_out or {"agent": False, "verifier": False},
        "tokens": {"prompt": tokens[0], "completion": tokens[1]},
        "cost_usd": cost,
        "seconds": seconds or {"setup": 1.0, "agent": 5.0, "verifier": 0.5, "total": 6.5},
        "task": task,
        "attempt": attempt,
        "session_id": session_id,
    }
    (folder / "trial.json").write_text(json.dumps(outcome), encoding="utf-8")
    return folder
