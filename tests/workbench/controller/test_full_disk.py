"""A full disk under the data dir: the session log stays whole (every line complete), the run
stops with its own exit code and a summary line, and nothing empty or partial is left behind.
Real small tmpfs mounts (root), the real `workbench` command, the scripted LLM server."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from headless_harness import MODEL, cli_env, json_lines, run_cli

from workbench import exit_codes
from workbench.events import MessageEvent, parse_event
from workbench.session.log import (
    SessionLog,
    SessionLogWriteError,
    make_header,
    new_session_id,
    read,
)
from workbench.testing.llm_server import ScriptedLLMServer

SmallDisk = Callable[..., Path]

NOISY = {
    "tool_calls": [
        {
            "name": "execute_bash",
            # fresh random output each step (the same output would trip the stuck detector)
            "arguments": {
                "command": "head -c 1500 /dev/urandom | base64 -w0",
                "security_risk": "LOW",
            },
        }
    ]
}


def _log(directory: Path) -> SessionLog:
    return SessionLog.create(directory, make_header(new_session_id(), "/w", MODEL))


def test_a_failed_append_leaves_the_log_ending_in_its_last_complete_line(
    small_disk: SmallDisk,
) -> None:
    disk = small_disk("data", 16 * 1024)
    log = _log(disk)
    text = "x" * 1000
    with pytest.raises(SessionLogWriteError) as failed:
        for number in range(1, 100):
            log.append(MessageEvent(id=number, source="user", text=text))
    message = str(failed.value)
    assert "No space left on device" in message and str(disk) in message
    assert "WORKBENCH_DATA_DIR" in message and "free space" in message
    written = log.events_written
    assert written > 5 and log.failure is failed.value
    with pytest.raises(SessionLogWriteError):  # the log takes no more events
        log.append(MessageEvent(id=written + 2, source="user", text="after"))
    log.close()  # never raises
    raw = log.path.read_bytes()
    assert raw.endswith(b"\n")
    loaded = read(log.path)
    assert (loaded.truncated, loaded.bad_lines) == (False, [])
    assert [event.id for event in loaded.events] == list(range(1, written + 1))


def test_a_log_that_cannot_start_leaves_no_file(small_disk: SmallDisk) -> None:
    disk = small_disk("data", 16 * 1024, full=True)
    (disk / "sessions").mkdir()
    with pytest.raises(SessionLogWriteError, match="No space left on device") as failed:
        _log(disk / "sessions")
    assert "Nothing was run" in str(failed.value)
    assert list((disk / "sessions").iterdir()) == []


def test_an_image_that_cannot_be_stored_leaves_no_partial_file(small_disk: SmallDisk) -> None:
    disk = small_disk("data", 64 * 1024)
    log = _log(disk)
    with pytest.raises(SessionLogWriteError, match="No space left on device"):
        log.write_payload("shot.png", b"\x89PNG" + b"\0" * 200_000)
    assert [p.name for p in log.payload_dir.iterdir()] == []
    assert log.failure is None  # the log itself is still whole and open
    log.append(MessageEvent(id=1, source="user", text="still writable"))
    log.close()
    assert [e.id for e in read(log.path).events] == [1]


def test_a_disk_that_fills_mid_run(tmp_path: Path, small_disk: SmallDisk) -> None:
    data = small_disk("data", 48 * 1024)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedLLMServer({"steps": [], "default": NOISY}) as server:
        env = cli_env(tmp_path, server.base_url, LOG_ALL_EVENTS="true")
        env["WORKBENCH_DATA_DIR"] = str(data)
        env["WORKBENCH_CHECKPOINTS_ENABLED"] = "false"  # the log alone fills the small disk
        args = ["--headless", "--json", "-t", "fill the disk", "--max-iterations", "200"]
        proc = run_cli([*args, "--workspace", str(workspace)], env, cwd=workspace, timeout=180)
    assert proc.returncode == exit_codes.LOG_ERROR == 12, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = json_lines(proc.stdout)
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["status"] == "log_error"
    assert summary["exit_code"] == 12 and summary["steps"] > 3
    assert "No space left on device" in summary["reason"] and str(data) in summary["reason"]
    assert "No space left on device" in proc.stderr
    shown = [parse_event(line["event"]) for line in lines if line["type"] == "event"]
    path = Path(summary["log"])
    raw = path.read_bytes()
    assert raw.endswith(b"\n")  # never a partial line
    loaded = read(path)
    assert (loaded.truncated, loaded.bad_lines) == (False, [])
    logged = loaded.events
    # Every event the app wrote is in the log, in order, with nothing missing in between ...
    assert [e.id for e in logged] == list(range(1, len(logged) + 1))
    assert [e.model_dump() for e in logged] == [e.model_dump() for e in shown[: len(logged)]]
    # ... and what could not be written was still shown: the event that hit the full disk
    # and the final state, which says why.
    rest = shown[len(logged) :]
    assert [e.id for e in rest] == list(range(len(logged) + 1, len(shown) + 1))
    assert rest[-1].kind == "state" and rest[-1].state == "error"
    assert rest[-1].reason.startswith("log_error: ")
    listed = run_cli(["sessions", "--json"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [row["session_id"] for row in json_lines(listed.stdout)] == [summary["session_id"]]


def test_a_disk_already_full_at_start(tmp_path: Path, small_disk: SmallDisk) -> None:
    data = small_disk("data", 32 * 1024, full=True)
    with ScriptedLLMServer([]) as server:
        env = cli_env(tmp_path, server.base_url)
        env["WORKBENCH_DATA_DIR"] = str(data)
        human = run_cli(["--headless", "-t", "anything"], env, cwd=tmp_path)
        machine = run_cli(["--headless", "--json", "-t", "anything"], env, cwd=tmp_path)
        assert server.requests == []  # nothing ran
    for proc in (human, machine):
        assert proc.returncode == exit_codes.LOG_ERROR, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "No space left on device" in proc.stderr and "WORKBENCH_DATA_DIR" in proc.stderr
    assert "== log_error" in human.stdout.splitlines()[-1]
    summary = json_lines(machine.stdout)[-1]
    assert (summary["type"], summary["status"], summary["exit_code"]) == (
        "summary",
        "log_error",
        12,
    )
    assert summary["session_id"] is None and summary["log"] is None
    assert list(data.rglob("*.jsonl")) == []  # no empty log left behind


def test_checkpoints_that_do_not_fit_are_turned_off_and_the_run_goes_on(
    tmp_path: Path, small_disk: SmallDisk
) -> None:
    """The checkpoint store shares the data folder with the logs: when a checkpoint cannot be
    written, it is said once and checkpoints stop; the run and its log are whole."""
    data = small_disk("data", 256 * 1024)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.bin").write_bytes(os.urandom(512 * 1024))  # cannot be compressed to fit
    bash = {"name": "execute_bash", "arguments": {"command": "echo hi", "security_risk": "LOW"}}
    done = {"name": "finish", "arguments": {"message": "done"}}
    script = [{"tool_calls": [bash]}, {"tool_calls": [bash]}, {"tool_calls": [done]}]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        env["WORKBENCH_DATA_DIR"] = str(data)
        proc = run_cli(["--headless", "--json", "-t", "go"], env, cwd=workspace, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = json_lines(proc.stdout)
    errors = [
        line["event"]
        for line in lines
        if line["type"] == "event" and line["event"]["kind"] == "error"
    ]
    assert len(errors) == 1 and errors[0]["error_kind"] == "checkpoint"
    assert "checkpoints are off for this session" in errors[0]["message"]
    logged = read(Path(lines[-1]["log"]))
    assert (logged.truncated, logged.bad_lines) == (False, [])
