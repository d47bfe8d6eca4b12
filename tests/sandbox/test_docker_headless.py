"""Headless runs on the Docker runtime: the seed task end to end, and Docker failures that
end the run with the sandbox-error exit code and a message saying what to do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from docker_support import BASE_IMAGE, docker_api, import_image_without_python, sandbox_image
from headless_harness import KEY, cli_env, finish, json_lines, run_cli

from workbench.testing.llm_server import ScriptedLLMServer

__all__ = ["docker_api", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker


def _docker_env(tmp_path: Path, base_url: str, **extra: str) -> dict[str, str]:
    return cli_env(
        tmp_path,
        base_url,
        RUNTIME="docker",
        WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE=BASE_IMAGE,
        **extra,
    )


def test_seed_task_on_the_docker_runtime(sandbox_image: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    create = {
        "command": "create",
        "path": "/workspace/hi.sh",
        "file_text": "#!/bin/bash\necho hi\n",
        "security_risk": "LOW",
    }
    script = [
        {"tool_calls": [{"name": "str_replace_editor", "arguments": create}]},
        {
            "tool_calls": [
                {
                    "name": "execute_bash",
                    "arguments": {"command": "bash hi.sh", "security_risk": "LOW"},
                }
            ]
        },
        finish("hi.sh prints hi"),
    ]
    with ScriptedLLMServer(script) as server:
        # The browser is enabled, but the sandbox image has none: the agent is not offered it.
        env = _docker_env(tmp_path, server.base_url, WORKBENCH_AGENT_ENABLE_BROWSER="true")
        proc = run_cli(["--headless", "--json", "-t", "write hi.sh"], env, workspace, timeout=300)
    assert proc.returncode == 0, proc.stderr
    offered = [tool["function"]["name"] for tool in server.requests[0]["tools"]]
    assert "execute_bash" in offered and "browser" not in offered
    lines = json_lines(proc.stdout)
    assert lines[-1]["status"] == "success"
    runs = [
        line["event"]["observation"]
        for line in lines
        if line["type"] == "event"
        and line["event"]["kind"] == "observation"
        and line["event"]["observation"]["kind"] == "run"
    ]
    assert runs and runs[0]["content"].strip() == "hi" and runs[0]["cwd"] == "/workspace"
    made = workspace / "hi.sh"
    assert made.read_text() == "#!/bin/bash\necho hi\n"
    assert made.stat().st_uid == Path(tmp_path).stat().st_uid  # yours, not root's
    assert KEY not in proc.stdout + proc.stderr


def test_docker_not_running_is_a_sandbox_error_saying_what_to_do(tmp_path: Path) -> None:
    with ScriptedLLMServer([finish()]) as server:
        env = _docker_env(tmp_path, server.base_url, DOCKER_HOST=f"unix://{tmp_path}/none.sock")
        proc = run_cli(["--headless", "-t", "hi"], env, tmp_path, timeout=120)
    assert proc.returncode == 8, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    assert "Docker" in said and "scripts/docker-up" in said
    assert not server.requests  # nothing was asked of the model


def test_base_image_without_python_is_a_sandbox_error(
    sandbox_image: str, docker_api: Any, tmp_path: Path
) -> None:
    tag = "workbench-test-headless-nopython:latest"
    import_image_without_python(docker_api, tag)
    try:
        with ScriptedLLMServer([finish()]) as server:
            env = _docker_env(tmp_path, server.base_url)
            env["WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE"] = tag
            proc = run_cli(["--headless", "--json", "-t", "hi"], env, tmp_path, timeout=180)
    finally:
        docker_api.images.remove(tag, force=True)
    assert proc.returncode == 8, proc.stdout + proc.stderr
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["status"] == "sandbox_error"
    assert "python3" in proc.stdout + proc.stderr and "Python >= 3.11" in proc.stdout + proc.stderr
