"""MCP servers the person configures run where they are: a server script outside the workspace
(standing for the person's home) is shown to that server alone, relative paths start from the
config file's folder, a hidden path is named with its fix, `sandbox = false` runs on the host,
and a server that did not start is in the headless summary. The real `workbench --headless`,
a scripted LLM, real bubblewrap and a real MCP server (tests/mcp_servers/demo_server.py)."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from headless_harness import bash, cli_env, finish, json_lines, run_cli
from test_mcp_headless import offered, tool_answers, use

from workbench.config.load import load_config
from workbench.config.schema_mcp import McpServerConfig
from workbench.headless.output import HumanPrinter
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tools.mcp import host_notes, specs_of
from workbench.tools.mcp_paths import plan_server

DEMO = Path(__file__).resolve().parents[2] / "mcp_servers" / "demo_server.py"


def home_server(tmp_path: Path) -> Path:
    """The demo server in a folder outside the workspace (the person's home, say)."""
    home = tmp_path / "home" / "me" / "mcp"
    home.mkdir(parents=True)
    shutil.copy(DEMO, home / "demo_server.py")
    return home


def mcp_notices(lines: list[dict[str, Any]]) -> list[str]:
    events = [line["event"] for line in lines if line["type"] == "event"]
    return [e["message"] for e in events if e["kind"] == "error" and e["error_kind"] == "mcp"]


def test_a_server_in_the_home_folder_starts_from_a_relative_path_and_only_it_sees_it(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = home_server(tmp_path)
    (tmp_path / "cfg").mkdir()
    # Relative to the config file's folder, not to `/` where servers start.
    (tmp_path / "cfg" / "config.toml").write_text(
        f"[mcp.servers.home]\ncommand = [{json.dumps(sys.executable)}, "
        '"../home/me/mcp/demo_server.py"]\n'
    )
    script = [
        use("mcp__home__add", "c1", a=20, b=22),
        use("mcp__home__whoami", "c2"),
        bash(f"cat {home}/demo_server.py | head -c 40; ls -A {home.parent} | wc -l", call_id="c3"),
        finish("added"),
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(["--headless", "--json", "-t", "add"], env, workspace, 120)
    assert proc.returncode == 0, proc.stderr
    requests = server.requests
    assert "mcp__home__add" in offered(requests[0])
    lines = json_lines(proc.stdout)
    assert mcp_notices(lines) == []
    assert lines[-1]["status"] == "success" and lines[-1]["mcp_failed"] == []
    # The call's result is in the session log, as the model saw it.
    assert tool_answers(requests[1])["c1"] == "42"
    log = Path(lines[-1]["log"]).read_text()
    results = [json.loads(line) for line in log.splitlines()[1:]]
    assert any(e.get("observation", {}).get("content") == "42" for e in results)
    seen = json.loads(tool_answers(requests[2])["c2"])
    assert seen["cwd"] == "/"  # still started in `/`, not in the workspace
    # The agent's shell does not see the server's folder nor anything in its parent.
    shell = tool_answers(requests[3])["c3"]
    assert "No such file or directory" in shell and "import" not in shell, shell
    assert "0" in shell.splitlines(), shell


def test_a_hidden_path_is_named_with_the_fix_a_host_server_is_said_and_failures_are_summed(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = home_server(tmp_path)
    data = tmp_path / "home" / "me" / "data"
    data.mkdir()
    python, script_path = json.dumps(sys.executable), json.dumps(str(home / "demo_server.py"))
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text(
        f"[mcp.servers.hidden]\ncommand = [{python}, {script_path}, "
        f'"--data", {json.dumps(str(data))}]\n'
        f"[mcp.servers.trusted]\ncommand = [{python}, {script_path}]\nsandbox = false\n"
        '[mcp.servers.broken]\ncommand = ["./no-such-server"]\n'
    )
    script = [use("mcp__trusted__whoami", "c1"), use("mcp__hidden__add", "c2", a=1, b=2)]
    script.append(finish("done"))
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(["--headless", "--json", "-t", "look"], env, workspace, 120)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)

    # The start line says which servers run on the host; the log's header keeps the config.
    assert lines[0]["mcp_on_host"] == ["trusted"]
    header = json.loads(Path(lines[0]["log"]).read_text().splitlines()[0])
    assert header["config"]["mcp"]["servers"]["trusted"]["sandbox"] is False
    notices = mcp_notices(lines)
    assert any("'trusted' runs on the host, not sandboxed" in n for n in notices), notices
    (hidden,) = [n for n in notices if "'hidden' names" in n]
    assert str(data) in hidden and "read_only" in hidden and "sandbox = false" in hidden
    (broken,) = [n for n in notices if "'broken' did not start" in n]
    assert str(tmp_path / "cfg" / "no-such-server") in broken  # from the config's folder
    assert "runs in the sandbox" in broken and "sandbox = false" in broken  # why, and the fix

    # The trusted server runs on the host: in this process's pid namespace.
    requests = server.requests
    seen = json.loads(tool_answers(requests[1])["c1"])
    assert seen["pidns"] == os.readlink("/proc/self/ns/pid") and seen["cwd"] == "/"
    assert tool_answers(requests[2])["c2"] == "3"  # the other one still works

    summary = lines[-1]
    assert (summary["status"], summary["exit_code"], summary["mcp_failed"]) == (
        "success",
        0,
        ["broken"],
    )
    # Human output says the same, from the same start and summary.
    out = io.StringIO()
    human = HumanPrinter(out, io.StringIO())
    human.start({k: v for k, v in lines[0].items() if k not in ("v", "type")})
    human.summary(summary)
    start, end = out.getvalue().splitlines()[1], out.getvalue().splitlines()[-1]
    assert start == "MCP servers on the host, not sandboxed (sandbox = false): trusted"
    assert end.startswith("== success (done)") and end.endswith("MCP servers not started: broken")


def test_the_plan_resolves_paths_from_the_config_folder_and_shows_a_venv_whole(
    tmp_path: Path,
) -> None:
    venv = tmp_path / "tools" / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "cfg" / "srv").mkdir(parents=True)
    (tmp_path / "cfg" / "srv" / "main.py").write_text("print()\n")
    (tmp_path / "cfg" / "notes").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text(
        '[mcp.servers.s]\ncommand = ["../tools/.venv/bin/python", "srv/main.py", '
        '"@scope/pkg", "--root=./notes", "-y"]\nread_only = ["notes"]\nwritable = ["gone"]\n'
    )
    config = load_config(tmp_path / "cfg" / "config.toml", env={})
    cfg = tmp_path / "cfg"
    plan = plan_server(config.mcp.servers["s"], config.mcp_base, tmp_path / "ws")
    assert plan.command == [
        str(venv / "bin" / "python"),
        str(cfg / "srv" / "main.py"),
        "@scope/pkg",
        f"--root={cfg / 'notes'}",
        "-y",
    ]
    mounts = dict(plan.mounts)
    assert mounts[venv] is False  # the venv whole (its pyvenv.cfg), read-only
    assert mounts[cfg / "srv"] is False and mounts[cfg / "notes"] is False
    assert plan.notes == [f"writable names {cfg / 'gone'}, which does not exist on the host"]
    # The system folders are shown anyway, read-only: only a writable one is mounted.
    system = McpServerConfig(command=["x"], read_only=["/usr/lib"], writable=["/usr/share"])
    assert plan_server(system, cfg, None).mounts == [(Path("/usr/share"), True)]


def test_on_docker_read_only_is_refused_with_why_and_the_program_is_the_containers(
    tmp_path: Path,
) -> None:
    (tmp_path / "srv.py").write_text("print()\n")
    (tmp_path / "data").mkdir()
    file = tmp_path / "c.toml"
    file.write_text(
        '[sandbox]\nruntime = "docker"\n'
        '[mcp.servers.s]\ncommand = ["python3", "srv.py"]\nread_only = ["data"]\n'
        '[mcp.servers.t]\ncommand = ["python3", "srv.py"]\nsandbox = false\n'
    )
    config = load_config(file, env={})
    specs = specs_of(config, tmp_path / "ws")
    # The container's python3, the host's script path (named in a notice if it is hidden).
    assert specs["s"].command == ["python3", str(tmp_path / "srv.py")]
    assert specs["s"].binds == [] and specs["s"].host_paths == [
        str(tmp_path / "srv.py"),
        str(tmp_path / "data"),
    ]
    assert specs["t"].command[0] == shutil.which("python3")  # on the host: the host's
    refused, on_host = host_notes(config, tmp_path / "ws")
    assert "'s': read_only and writable are not applied on the Docker runtime" in refused
    assert "shared with the agent" in refused and "sandbox = false" in refused
    assert on_host == "the MCP server 't' runs on the host, not sandboxed (sandbox = false)"


def test_a_program_is_shown_with_its_installation_and_its_interpreter(tmp_path: Path) -> None:
    # An nvm-like Node prefix, a pyenv-like Python whose venv points at it, a pip --user script.
    node = tmp_path / "nvm" / "versions" / "node" / "v20"
    (node / "lib" / "node_modules").mkdir(parents=True)
    (node / "bin").mkdir()
    (node / "bin" / "node").write_text("")
    tool = node / "lib" / "node_modules" / "srv" / "cli.js"
    tool.parent.mkdir()
    tool.write_text(f"#!{node / 'bin' / 'node'}\n")
    (node / "bin" / "srv").symlink_to(tool)
    pyenv = tmp_path / "pyenv" / "3.11"
    (pyenv / "lib" / "python3.11").mkdir(parents=True)
    (pyenv / "bin").mkdir()
    (pyenv / "bin" / "python3.11").write_text("")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("")
    (venv / "bin" / "python").symlink_to(pyenv / "bin" / "python3.11")
    plan = plan_server(McpServerConfig(command=[str(node / "bin" / "srv")]), tmp_path, None)
    assert [path for path, _ in plan.mounts] == [node]  # the symlink, its target, the #!
    plan = plan_server(McpServerConfig(command=[str(venv / "bin" / "python")]), tmp_path, None)
    assert sorted(path for path, _ in plan.mounts) == [pyenv, venv]
