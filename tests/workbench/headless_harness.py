"""Shared set-up for controller and headless tests: config, scripted LLM, real local sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waiting import until  # noqa: F401  (re-exported for the tests here)

from sandbox.runtimes.local import LocalRuntime
from workbench.config.load import load_config
from workbench.config.schema import Config
from workbench.controller.confirming import ConfirmHook
from workbench.controller.loop import Controller
from workbench.llm import LLMClient
from workbench.session.log import SessionLog, make_header, new_session_id
from workbench.testing.llm_server import ScriptedLLMServer

KEY = "sk-test-SECRET"
MODEL = "openai/test-model"
ROOT = Path(__file__).resolve().parents[2]


def bash(command: str, risk: str = "LOW", call_id: str | None = None) -> dict[str, Any]:
    """A script step: one execute_bash call."""
    call: dict[str, Any] = {
        "name": "execute_bash",
        "arguments": {"command": command, "security_risk": risk},
    }
    if call_id:
        call["id"] = call_id
    return {"tool_calls": [call]}


def create(path: Path, text: str) -> dict[str, Any]:
    """A script step: create a file with the editor."""
    args = {"command": "create", "path": str(path), "file_text": text}
    return {"tool_calls": [{"name": "str_replace_editor", "arguments": args}]}


def finish(message: str = "done", outcome: str = "success") -> dict[str, Any]:
    """A script step: finish."""
    args = {"message": message, "outcome": outcome}
    return {"tool_calls": [{"name": "finish", "arguments": args}]}


def seed_script(workspace: Path) -> list[dict[str, Any]]:
    """The seed task: write hi.sh, run it, finish."""
    return [
        {
            "text": "I will write the script.",
            **create(workspace / "hi.sh", "#!/bin/bash\necho hi\n"),
        },
        bash("bash hi.sh"),
        finish("hi.sh prints hi"),
    ]


def cli_env(tmp_path: Path, base_url: str, **extra: str) -> dict[str, str]:
    """Environment for a workbench run isolated in `tmp_path`."""
    (tmp_path / "cfg").mkdir(exist_ok=True)
    env = {
        "LLM_MODEL": MODEL,
        "LLM_BASE_URL": base_url,
        "LLM_API_KEY": KEY,
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "WORKBENCH_LLM_RETRY_MIN_WAIT_S": "0.01",
        "WORKBENCH_LLM_RETRY_MAX_WAIT_S": "0.05",
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
        # The scripted model has no context limit unless a test gives it one. The window
        # assumed for a model litellm does not know (32 000) would condense long sessions, and
        # the summary calls would take the script's steps.
        "WORKBENCH_LLM_MAX_INPUT_TOKENS": "10000000",
    }
    env.update(extra)
    return env


def make_config(tmp_path: Path, base_url: str, workspace: Path, **dotted: Any) -> Config:
    """A config for an in-process run; `dotted` keys override (e.g. agent__max_iterations)."""
    overrides = {key.replace("__", "."): value for key, value in dotted.items()}
    overrides["sandbox.workspace"] = str(workspace)
    return load_config(env=cli_env(tmp_path, base_url), overrides=overrides)


@dataclass
class Harness:
    """A controller wired to a scripted LLM and a real local sandbox."""

    controller: Controller
    server: ScriptedLLMServer
    runtime: LocalRuntime
    session: SessionLog
    workspace: Path


@asynccontextmanager
async def harness(
    tmp_path: Path,
    script: Any,
    confirm: ConfirmHook | None = None,
    disable: tuple[str, ...] = ("browser", "jupyter"),
    **dotted: Any,
) -> AsyncIterator[Harness]:
    """Start everything for one in-process controller test; close it all afterwards."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    if callable(script):
        script = script(workspace)
    async with ScriptedLLMServer(script) as server:
        config = make_config(tmp_path, server.base_url, workspace, **dotted)
        runtime = LocalRuntime(workspace, disable=disable, warm_up=False)
        await runtime.start()
        header = make_header(new_session_id(), workspace, MODEL, config.redacted_dict())
        session = SessionLog.create(tmp_path / "sessions", header, secrets=[KEY])
        try:
            controller = Controller(config, runtime, LLMClient(config.llm), session, confirm)
            yield Harness(controller, server, runtime, session, workspace)
        finally:
            await runtime.close()
            session.close()


def run_cli(
    args: list[str],
    env: Mapping[str, str],
    cwd: Path,
    timeout: float = 60,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real `workbench` command as a subprocess."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
    full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        env=full_env,
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of `text` as JSON (fails on any line that is not)."""
    return [json.loads(line) for line in text.splitlines()]
