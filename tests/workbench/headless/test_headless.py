"""Headless mode: the real `workbench` command as a subprocess (where the process matters) and
the headless runner in-process (printers, nudging). Scripted LLM server, real local sandbox."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from headless_harness import (
    KEY,
    MODEL,
    bash,
    cli_env,
    finish,
    json_lines,
    make_config,
    run_cli,
    seed_script,
)
from waiting import wait_until

from workbench.events import parse_event
from workbench.headless.output import HumanPrinter, JsonPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer

SUMMARY_KEYS = {
    "v",
    "type",
    "status",
    "exit_code",
    "reason",
    "steps",
    "prompt_tokens",
    "completion_tokens",
    "tokens",
    "cost",
    "session_id",
    "log",
    "duration_s",
}


def check_schema(lines: list[dict[str, Any]]) -> None:
    """Every line follows docs/headless.md: start, events, summary last."""
    assert lines[0]["type"] == "start"
    assert set(lines[0]) == {"v", "type", "session_id", "model", "workspace", "log"}
    assert lines[-1]["type"] == "summary" and set(lines[-1]) == SUMMARY_KEYS
    for line in lines:
        assert line["v"] == 1
    for line in lines[1:-1]:
        assert line["type"] == "event" and set(line) == {"v", "type", "event"}
        parse_event(line["event"])  # validates against the event models


def session_files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "data").rglob("*"))


def assert_no_key(tmp_path: Path, *outputs: str) -> None:
    for text in outputs:
        assert KEY not in text
    for path in session_files(tmp_path):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_seed_task_json(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedLLMServer(seed_script(workspace)) as server:
        env = cli_env(tmp_path, server.base_url)
        task = "write a bash script that prints hi"
        proc = run_cli(["--headless", "--json", "-t", task], env, cwd=workspace)
    assert proc.returncode == 0, proc.stderr
    lines = json_lines(proc.stdout)
    check_schema(lines)
    summary = lines[-1]
    assert (summary["status"], summary["exit_code"], summary["steps"]) == ("success", 0, 3)
    assert summary["tokens"] == summary["prompt_tokens"] + summary["completion_tokens"] > 0
    assert (workspace / "hi.sh").is_file()
    outputs = [
        line["event"]["observation"]["content"]
        for line in lines[1:-1]
        if line["event"]["kind"] == "observation" and line["event"]["observation"]["kind"] == "run"
    ]
    assert outputs and outputs[0].strip() == "hi"
    log = read(Path(summary["log"]))
    assert log.header.session_id == summary["session_id"] and log.header.workspace == str(workspace)
    assert log.events[-1].kind == "state" and log.events[-1].state == "finished"
    assert KEY in server.headers[0]["authorization"]  # the key was really used ...
    assert_no_key(tmp_path, proc.stdout, proc.stderr)  # ... and never written or printed


def test_human_output_task_from_stdin_and_max_iterations_flag(tmp_path: Path) -> None:
    think = {"tool_calls": [{"name": "think", "arguments": {"thought": "still thinking"}}]}
    with ScriptedLLMServer({"steps": [], "default": think}) as server:
        env = cli_env(tmp_path, server.base_url, LOG_ALL_EVENTS="true")
        proc = run_cli(
            ["--headless", "-t", "-", "--max-iterations", "2"], env, tmp_path, stdin="think"
        )
    assert proc.returncode == 3, proc.stderr
    assert "user: think" in proc.stdout
    assert "[1] think: still thinking" in proc.stdout
    assert "-- llm openai/test-model" in proc.stdout  # LOG_ALL_EVENTS shows LLM calls
    assert "== max_iterations" in proc.stdout.splitlines()[-1]
    assert "step limit" in proc.stderr
    assert_no_key(tmp_path, proc.stdout, proc.stderr)


def test_reject_policy_stop_flag(tmp_path: Path) -> None:
    with ScriptedLLMServer([bash("sudo rm -rf /", "LOW"), finish()]) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(["--headless", "--json", "-t", "x", "--on-confirm", "stop"], env, tmp_path)
    assert proc.returncode == 6, proc.stderr
    lines = json_lines(proc.stdout)
    check_schema(lines)
    kinds = [line["event"]["kind"] for line in lines[1:-1]]
    assert "confirmation_request" in kinds and "confirmation_decision" in kinds
    assert lines[-1]["status"] == "rejected"


def _wait_for_requests(server: ScriptedLLMServer, proc: subprocess.Popen[str], count: int) -> None:
    """Wait until `count` requests reached the scripted server; fail at once if the app ended."""

    def arrived() -> bool:
        if len(server.requests) >= count:
            return True
        assert proc.poll() is None, proc.communicate()
        return False

    wait_until(arrived, 60, f"{count} requests at the scripted server")


def _children_of_workspace(workspace: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(workspace) in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _popen(env: dict[str, str], args: list[str], cwd: Path) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "workbench", *args],
        env={**full, **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sigint_interrupts_and_leaves_a_complete_log(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedLLMServer([bash("echo one"), {"text": "slow", "delay_s": 60}]) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = _popen(env, ["--headless", "--json", "-t", "go"], workspace)
        _wait_for_requests(server, proc, 2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    lines = json_lines(out)
    check_schema(lines)
    assert lines[-1]["status"] == "interrupted"
    log = read(Path(lines[-1]["log"]))
    assert not log.truncated and log.bad_lines == []
    assert log.events[-1].kind == "state" and log.events[-1].state == "stopped"
    assert any(e.kind == "observation" for e in log.events)
    assert _children_of_workspace(workspace) == []  # the sandbox was closed


def test_sigterm_is_reported_as_sigterm_not_ctrl_c(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedLLMServer([bash("echo one"), {"text": "slow", "delay_s": 60}]) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = _popen(env, ["--headless", "--json", "-t", "go"], workspace)
        _wait_for_requests(server, proc, 2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    summary = json_lines(out)[-1]
    assert summary["status"] == "interrupted"
    assert "SIGTERM" in summary["reason"] and "Ctrl-C" not in summary["reason"]
    assert "SIGTERM" in err and "Ctrl-C again" in err  # the notice; a second one aborts
    end = read(Path(summary["log"])).events[-1]
    assert end.kind == "state" and end.state == "stopped"
    assert "SIGTERM" in end.reason and "Ctrl-C" not in end.reason


def test_a_task_that_is_not_utf8_is_the_same_clean_error_from_stdin_and_file(
    tmp_path: Path,
) -> None:
    env = cli_env(tmp_path, "http://127.0.0.1:9/v1")
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
    data = b"fix the \xff\xfe bug\n"
    (tmp_path / "task.txt").write_bytes(data)
    errors = []
    for args, stdin in ((["-t", "-"], data), (["-f", str(tmp_path / "task.txt")], None)):
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "--headless", "--json", *args],
            env={**full, **env, "LC_ALL": "C", "PYTHONUTF8": "0"},  # stdin would not be strict
            cwd=tmp_path,
            input=stdin,
            stdin=None if stdin else subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
        )
        assert done.returncode == 2, done.stderr
        stderr = done.stderr.decode()
        assert "Traceback" not in stderr and "not UTF-8 text" in stderr and "Fix:" in stderr
        assert json_lines(done.stdout.decode())[-1]["status"] == "config_error"
        errors.append(stderr.split(": not UTF-8", 1)[1])
    assert errors[0] == errors[1]  # the same words, whichever way the task came
    assert not (tmp_path / "data").exists()  # nothing was started


def test_a_model_without_a_provider_is_a_config_error(tmp_path: Path) -> None:
    with ScriptedLLMServer([finish()]) as server:
        env = cli_env(tmp_path, server.base_url, LLM_MODEL="no-such-provider-model")
        proc = run_cli(["--headless", "--json", "-t", "x"], env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    summary = json_lines(proc.stdout)[-1]
    assert (summary["status"], summary["exit_code"]) == ("config_error", 2)
    assert "llm.model" in summary["reason"] and "Fix:" in summary["reason"]
    assert "Traceback" not in proc.stderr
    end = read(Path(summary["log"])).events[-1]
    assert end.kind == "state" and end.state == "error"


def test_sigkill_mid_step_log_loads_to_last_complete_line(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [bash("echo one"), bash("echo two"), {"text": "slow", "delay_s": 60}]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = _popen(env, ["--headless", "-t", "go"], workspace)
        try:
            _wait_for_requests(server, proc, 3)
            proc.kill()
            proc.wait(10)
        finally:
            for orphan in _children_of_workspace(workspace):  # the sandbox server we started
                orphan.kill()
    logs = list((tmp_path / "data" / "sessions").glob("*.jsonl"))
    assert len(logs) == 1
    log = read(logs[0])
    assert log.bad_lines == []
    assert [e.kind for e in log.events].count("observation") == 2
    assert_no_key(tmp_path)


@pytest.mark.parametrize(
    ("toml", "env_extra", "expected"),
    [
        ('[llm]\nmodle = "x"\n', {}, ["config.toml", "llm.modle", "llm.model"]),
        ('[agent]\nmax_iterations = "many"\n', {}, ["config.toml", "agent.max_iterations"]),
        ("", {"LLM_MODEL": ""}, ["llm.model", "LLM_MODEL"]),
        ("", {"RUNTIME": "remote"}, ["sandbox.remote.url", "WORKBENCH_SANDBOX_REMOTE_URL"]),
        ("[llm]\ntemperature = nan\n", {}, ["llm.temperature: NaN", "not a number allowed"]),
    ],
)
def test_bad_config_exits_2_before_any_work(
    tmp_path: Path, toml: str, env_extra: dict[str, str], expected: list[str]
) -> None:
    env = cli_env(tmp_path, "http://127.0.0.1:9/v1", **env_extra)
    (tmp_path / "cfg" / "config.toml").write_text(toml)
    proc = run_cli(["--headless", "--json", "-t", "x"], env, tmp_path, timeout=20)
    assert proc.returncode == 2
    for word in expected:
        assert word in proc.stderr, proc.stderr
    assert json_lines(proc.stdout)[-1]["status"] == "config_error"
    assert not (tmp_path / "data").exists()  # no session was started


def test_usage_errors(tmp_path: Path) -> None:
    env = cli_env(tmp_path, "http://127.0.0.1:9/v1")
    assert run_cli(["--headless"], env, tmp_path).returncode == 2
    both = run_cli(["--headless", "-t", "a", "-f", "b"], env, tmp_path)
    assert both.returncode == 2 and "not allowed with" in both.stderr
    missing = run_cli(["--headless", "-f", str(tmp_path / "nope.txt")], env, tmp_path)
    assert missing.returncode == 2 and "cannot read the task file" in missing.stderr
    help_text = run_cli(["--help"], env, tmp_path).stdout
    for flag in (
        "--headless",
        "--task",
        "--file",
        "--json",
        "--model",
        "--config",
        "--workspace",
        "--runtime",
        "--max-iterations",
        "--max-budget",
        "--on-confirm",
        "exit codes",
    ):
        assert flag in help_text


async def _run_in_process(
    tmp_path: Path, script: Any, json_mode: bool = False, **dotted: Any
) -> tuple[dict[str, Any], str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    async with ScriptedLLMServer(script) as server:
        config = make_config(tmp_path, server.base_url, workspace, **dotted)
        kind = JsonPrinter if json_mode else HumanPrinter
        printer = kind(out, err, all_events=config.log_all_events)
        summary = await run_session(config, "do it", printer)
    return summary, out.getvalue() + err.getvalue()


async def test_agent_that_never_calls_finish_is_nudged_then_stopped(tmp_path: Path) -> None:
    summary, text = await _run_in_process(tmp_path, {"steps": [], "default": {"text": "Done!"}})
    assert (summary["status"], summary["exit_code"], summary["steps"]) == ("no_finish", 1, 3)
    assert text.count("agent: Done!") == 3
    assert text.count("automatic reply") == 2


async def test_nudge_gets_the_agent_going_again(tmp_path: Path) -> None:
    summary, _ = await _run_in_process(tmp_path, [{"text": "Shall I?"}, finish("ok")])
    assert summary["status"] == "success" and summary["exit_code"] == 0


async def test_runtime_that_cannot_start_is_a_sandbox_error(tmp_path: Path) -> None:
    summary, text = await _run_in_process(tmp_path, [finish()], sandbox__runtime="remote")
    assert (summary["status"], summary["exit_code"]) == ("sandbox_error", 8)
    assert "remote" in text
    log = read(Path(summary["log"]))
    assert [e.kind for e in log.events] == ["error", "state"]


def test_model_name_in_start_line() -> None:
    out = io.StringIO()
    JsonPrinter(out).start({"session_id": "s", "model": MODEL, "workspace": "/w", "log": "/l"})
    assert json_lines(out.getvalue())[0]["model"] == MODEL


def test_sessions_command_lists_saved_sessions(tmp_path: Path) -> None:
    from workbench.session.log import SessionLog, make_header

    env = cli_env(tmp_path, "http://127.0.0.1:9/v1")
    empty = run_cli(["sessions"], env, tmp_path)
    assert empty.returncode == 0 and "no sessions" in empty.stdout
    from workbench.events import MessageEvent, StateChangedEvent

    sessions = tmp_path / "data" / "sessions"
    for sid, task in (("20260101-000000-aaaaaa", "first"), ("20260102-000000-bbbbbb", "second")):
        log = SessionLog.create(sessions, make_header(sid, "/w", MODEL))
        log.append(MessageEvent(id=1, source="user", text=f"the {task} task"))
        log.append(StateChangedEvent(id=2, state="finished"))
        log.close()
    listed = run_cli(["sessions", "--json"], env, tmp_path)
    rows = json_lines(listed.stdout)
    assert [(row["session_id"], row["task"], row["state"]) for row in rows] == [
        ("20260102-000000-bbbbbb", "the second task", "finished"),
        ("20260101-000000-aaaaaa", "the first task", "finished"),
    ]
    plain = run_cli(["sessions"], env, tmp_path).stdout.splitlines()
    assert plain[0].startswith("20260102-000000-bbbbbb") and plain[0].endswith("the second task")
    assert all(row["damaged"] is None for row in rows)
    # A damaged log is listed too, saying what is wrong.
    (sessions / "20260103-000000-cccccc.jsonl").write_bytes(b'{"kind": "head')
    rows = json_lines(run_cli(["sessions", "--json"], env, tmp_path).stdout)
    assert rows[0]["session_id"] == "20260103-000000-cccccc"
    assert rows[0]["damaged"] == "cut in its first line: no complete header"
    plain = run_cli(["sessions"], env, tmp_path).stdout.splitlines()
    assert plain[0].startswith("20260103-000000-cccccc")
    assert plain[0].endswith("[damaged: cut in its first line: no complete header]")
    assert len(plain) == 3
