"""MCP tools end to end: the real `workbench --headless` command, a scripted LLM, and a real MCP
server (tests/mcp_servers/demo_server.py, the SDK's `MCPServer` over stdio) started by the
sandbox server inside the sandbox."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from docker_support import BASE_IMAGE, sandbox_image
from headless_harness import cli_env, finish, json_lines, run_cli

from workbench.testing.llm_server import ScriptedLLMServer

DEMO = Path(__file__).resolve().parents[2] / "mcp_servers" / "demo_server.py"
SECRET = "mcp-token-5f3a9c1e77"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

__all__ = ["sandbox_image"]  # a fixture, used by name


def use(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    """A script step: one call of tool `name`."""
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def write_config(tmp_path: Path, workspace: Path, extra: str = "") -> None:
    shutil.copy(DEMO, workspace / "demo_server.py")
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "cfg" / "config.toml").write_text(
        f"""
[mcp.servers.demo]
command = [{json.dumps(sys.executable)}, {json.dumps(str(workspace / "demo_server.py"))}]
env = {{ DEMO_TOKEN = "{SECRET}" }}

[mcp.servers.broken]
command = ["/nonexistent/mcp-server", "--stdio"]
{extra}
"""
    )


def tool_answers(request: dict[str, Any]) -> dict[str, str]:
    """The tool messages of one LLM request, by call id."""
    return {
        message["tool_call_id"]: message["content"]
        for message in request["messages"]
        if message["role"] == "tool"
    }


def offered(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {tool["function"]["name"]: tool["function"] for tool in request.get("tools", [])}


def test_mcp_tools_are_offered_called_and_failures_do_not_end_the_session(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_config(tmp_path, workspace)
    script = [
        use("mcp__demo__add", "c1", a=2, b=3),
        use("mcp__demo__boom", "c2", why="on purpose"),
        use("mcp__demo__picture", "c3"),
        use("mcp__demo__die", "c4"),
        finish("used the MCP tools"),
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(["--headless", "--json", "-t", "use the tools"], env, workspace, 120)
    assert proc.returncode == 0, proc.stderr
    requests = server.requests

    # Offered as mcp__SERVER__TOOL with the server's own schema; the broken server's are not.
    tools = offered(requests[0])
    assert {"mcp__demo__add", "mcp__demo__boom", "mcp__demo__picture"} <= set(tools)
    assert tools["mcp__demo__add"]["parameters"]["properties"]["a"]["type"] == "integer"
    assert tools["mcp__demo__add"]["parameters"]["required"] == ["a", "b"]
    assert not [name for name in tools if name.startswith("mcp__broken")]
    assert "mcp" not in tools  # few tools: no lazy catalog

    # A call returns its result; a raising tool is an error result and the session goes on.
    assert tool_answers(requests[1])["c1"] == "5"
    assert tool_answers(requests[2])["c2"].startswith("ERROR:")
    assert tool_answers(requests[3])["c3"].startswith("a red square\n[image saved: mcp-")
    # The server died during a call: its tools are withdrawn, the run still finishes.
    assert "withdrawn" in tool_answers(requests[4])["c4"]
    assert not [name for name in offered(requests[4]) if name.startswith("mcp__")]

    lines = json_lines(proc.stdout)
    events = [line["event"] for line in lines if line["type"] == "event"]
    notices = [e["message"] for e in events if e["kind"] == "error" and e["error_kind"] == "mcp"]
    assert len(notices) == 2, notices  # one for the server that never started, one for the death
    assert "'broken' did not start" in notices[0] and "/nonexistent/mcp-server" in notices[0]
    assert "'demo' stopped" in notices[1] and "withdrawn" in notices[1]
    assert lines[-1]["status"] == "success"

    # The image came back as an artifact kept with the session; no secret reached the log.
    session_id = lines[0]["session_id"]
    sessions = tmp_path / "data" / "sessions"
    (image,) = (sessions / f"{session_id}.files").glob("mcp-*.png")
    assert image.read_bytes().startswith(PNG_MAGIC)
    log = (sessions / f"{session_id}.jsonl").read_text()
    assert SECRET not in log and SECRET not in proc.stdout and SECRET not in proc.stderr


def test_many_tools_are_offered_through_one_tool_and_rules_match_server_and_tool(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    write_config(tmp_path, workspace, '[security]\ndeny = ["mcp:demo.boom"]\n')
    script = [
        use("mcp", "c1", operation="list"),
        use("mcp", "c2", operation="describe", tool="mcp__demo__add"),
        use("mcp", "c3", operation="call", tool="mcp__demo__add", arguments={"a": 4, "b": 5}),
        use("mcp", "c4", operation="call", tool="mcp__demo__boom", arguments={"why": "x"}),
        finish(),
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url, WORKBENCH_MCP_LAZY_ABOVE="2")
        proc = run_cli(["--headless", "--json", "-t", "use the tools"], env, workspace, 120)
    assert proc.returncode == 0, proc.stderr
    requests = server.requests
    tools = offered(requests[0])
    assert "mcp" in tools and not [name for name in tools if name.startswith("mcp__")]
    listing = tool_answers(requests[1])["c1"]
    assert "mcp__demo__add: Add two integers." in listing and "mcp__demo__whoami" in listing
    assert '"integer"' in tool_answers(requests[2])["c2"]
    assert tool_answers(requests[3])["c3"] == "9"
    denied = tool_answers(requests[4])["c4"]
    assert "not run" in denied and "mcp:demo.boom" in denied


@pytest.mark.docker
def test_on_the_docker_runtime_the_server_runs_in_the_container_as_the_agent(
    sandbox_image: str, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shutil.copy(DEMO, workspace / "demo_server.py")
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text(
        '[mcp.servers.demo]\ncommand = ["/opt/sandbox/bin/python", "/workspace/demo_server.py"]\n'
        f'env = {{ DEMO_TOKEN = "{SECRET}" }}\n'
    )
    script = [
        use("mcp__demo__add", "c1", a=20, b=22),
        use("mcp__demo__boom", "c2", why="x"),
        use("mcp__demo__whoami", "c3"),
        finish(),
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(
            tmp_path,
            server.base_url,
            RUNTIME="docker",
            WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE=BASE_IMAGE,
            SANDBOX_USER_ID="1234",
        )
        proc = run_cli(["--headless", "--json", "-t", "use the tools"], env, workspace, 300)
    assert proc.returncode == 0, proc.stderr
    requests = server.requests
    assert "mcp__demo__add" in offered(requests[0])
    assert tool_answers(requests[1])["c1"] == "42"
    assert tool_answers(requests[2])["c2"].startswith("ERROR:")
    seen = json.loads(tool_answers(requests[3])["c3"])
    assert seen["uid"] == 1234 and seen["cwd"] == "/"
    assert SECRET not in proc.stdout
