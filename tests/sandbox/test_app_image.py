"""The workbench app image, run with the host's Docker socket: headless end to end.

The app container starts its sandbox as a sibling container through the socket, so the
workspace is a host path, and the files the agent writes there belong to `SANDBOX_USER_ID`.
The scripted LLM server runs on the host; the app container shares the host's network.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from docker_support import ROOT, sandbox_image

from workbench.testing.llm_server import ScriptedLLMServer

__all__ = ["sandbox_image"]  # a fixture, used by name

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]

APP_TAG = "workbench:test"
USER_ID = 4321


@pytest.fixture(scope="session")
def app_image(sandbox_image: str) -> str:
    """The app image built from this checkout (cached layers make a rebuild ~25 s)."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "app-image"), APP_TAG],
        capture_output=True,
        text=True,
        timeout=1100,
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/app-image failed:\n{done.stderr[-3000:]}", pytrace=False)
    return APP_TAG


def test_headless_in_the_app_image_with_the_docker_socket(app_image: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    workspace.chmod(0o777)  # the sandbox runs as USER_ID, not as the test's user
    state = tmp_path / "state"
    state.mkdir()
    script = [
        {
            "text": "Writing the script.",
            "tool_calls": [
                {
                    "name": "str_replace_editor",
                    "arguments": {
                        "command": "create",
                        "path": "/workspace/hi.sh",
                        "file_text": "#!/bin/bash\necho hi\n",
                        "security_risk": "LOW",
                    },
                }
            ],
        },
        {
            "tool_calls": [
                {
                    "name": "execute_bash",
                    "arguments": {"command": "bash hi.sh && id -u", "security_risk": "LOW"},
                }
            ]
        },
        {"tool_calls": [{"name": "finish", "arguments": {"message": "hi.sh prints hi"}}]},
    ]
    with ScriptedLLMServer(script) as server:
        command = [
            "docker", "run", "--rm", "--network", "host",
            "-v", "/var/run/docker.sock:/var/run/docker.sock",
            "-v", f"{state}:/state",
            "-e", f"WORKSPACE_BASE={workspace}",
            "-e", f"SANDBOX_USER_ID={USER_ID}",
            "-e", "LLM_MODEL=openai/test-model",
            "-e", f"LLM_BASE_URL={server.base_url}",
            "-e", "LLM_API_KEY=sk-app-image-SECRET",
            "-e", "WORKBENCH_AGENT_ENABLE_BROWSER=false",
            "-e", "WORKBENCH_AGENT_ENABLE_JUPYTER=false",
            app_image,
            "--headless", "--json", "-t", "write a bash script that prints hi",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["status"] == "success", summary
    assert summary["exit_code"] == 0
    script_file = workspace / "hi.sh"
    assert script_file.read_text() == "#!/bin/bash\necho hi\n"
    assert script_file.stat().st_uid == USER_ID
    observations = [
        json.dumps(line["event"])
        for line in lines
        if line["type"] == "event" and line["event"].get("kind") == "observation"
    ]
    assert any(f"hi\\n{USER_ID}" in text for text in observations), observations
    assert "sk-app-image-SECRET" not in done.stdout + done.stderr
