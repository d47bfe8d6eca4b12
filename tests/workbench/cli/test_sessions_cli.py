"""`workbench sessions show|delete|export`, id prefixes, and `sessions | head` (the real
command as a subprocess, on logs written by the real `SessionLog`)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from headless_harness import MODEL, ROOT, cli_env, json_lines, run_cli

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.events import (
    ActionEvent,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.session.log import SessionLog, make_header, read

SID = "20260301-101500-abc123"
T0 = 1_772_360_100.0


def _write_session(tmp_path: Path, session_id: str = SID, runtime: str = "local") -> Path:
    sessions = tmp_path / "data" / "sessions"
    config = {"sandbox": {"runtime": runtime}}
    header = make_header(session_id, str(tmp_path / "ws"), MODEL, config)
    log = SessionLog.create(sessions, header)
    events = [
        StateChangedEvent(id=1, timestamp=T0, state="running"),
        MessageEvent(id=2, timestamp=T0, source="user", text="count the files"),
        LLMCallEvent(
            id=3,
            timestamp=T0 + 2,
            model=MODEL,
            prompt_tokens=1000,
            completion_tokens=50,
            cost=0.0125,
            latency_ms=900,
        ),
        ActionEvent(
            id=4,
            timestamp=T0 + 2,
            tool_name="execute_bash",
            tool_call_id="c1",
            action=CmdRunAction(command="ls | wc -l"),
        ),
        ObservationEvent(
            id=5,
            timestamp=T0 + 3,
            cause=4,
            tool_call_id="c1",
            observation=CmdOutputObservation(content="3", command="ls | wc -l", exit_code=0),
        ),
        LLMCallEvent(
            id=6,
            timestamp=T0 + 5,
            model=MODEL,
            prompt_tokens=1200,
            completion_tokens=30,
            cost=0.0075,
            latency_ms=800,
        ),
        StateChangedEvent(id=7, timestamp=T0 + 12.5, state="finished", reason="success: 3"),
    ]
    for event in events:
        log.append(event)
    log.write_payload("shot.png", b"\x89PNG fake bytes")
    log.close()
    return log.path


def test_show_names_what_the_session_did(tmp_path: Path) -> None:
    path = _write_session(tmp_path, runtime="docker")
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    done = run_cli(["sessions", "show", "20260301-1015"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    facts, transcript = done.stdout.split("\ntranscript:\n")
    rows = dict(line.split(":", 1) for line in facts.splitlines())
    assert "  user: count the files\n  [1] $ ls | wc -l\n      3\n" in transcript
    rows = {key: value.strip() for key, value in rows.items()}
    assert rows["session"] == SID
    assert rows["task"] == "count the files"
    assert rows["outcome"] == "finished (success: 3)"
    assert rows["steps"] == "2"
    assert rows["tokens"] == "2280 (2200 prompt, 80 completion)"
    assert rows["cost"] == "$0.0200"
    assert rows["runtime"] == "docker"
    assert rows["workspace"] == str(tmp_path / "ws")
    assert rows["model"] == MODEL
    assert rows["log"] == str(path)
    assert rows["events"] == "7 (1 stored files)"
    as_json = json.loads(run_cli(["sessions", "show", SID, "--json"], env, tmp_path).stdout)
    assert as_json["steps"] == 2 and as_json["cost"] == 0.02 and as_json["parent"] is None
    assert as_json["duration_s"] >= 12.5


def test_delete_asks_then_removes_log_and_files(tmp_path: Path) -> None:
    path = _write_session(tmp_path)
    files = path.with_name(f"{SID}.files")
    assert files.is_dir()
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    declined = run_cli(["sessions", "delete", "2026"], env, tmp_path, stdin="n\n")
    assert declined.returncode == 1
    assert f"Delete session {SID} (count the files) and its files folder? [y/N]" in (
        declined.stdout
    )
    assert "not deleted" in declined.stdout and path.exists() and files.is_dir()
    no_answer = run_cli(["sessions", "delete", SID], env, tmp_path, stdin="")
    assert no_answer.returncode == 1 and path.exists()
    agreed = run_cli(["sessions", "delete", SID], env, tmp_path, stdin="y\n")
    assert agreed.returncode == 0, agreed.stderr
    assert not path.exists() and not files.exists()
    _write_session(tmp_path)
    forced = run_cli(["sessions", "delete", "--yes", SID], env, tmp_path)
    assert forced.returncode == 0 and not path.exists()
    gone = run_cli(["sessions", "delete", "--yes", SID], env, tmp_path)
    assert gone.returncode == 2 and f"no session {SID!r}" in gone.stderr


def test_export_writes_one_archive_with_log_and_images(tmp_path: Path) -> None:
    path = _write_session(tmp_path)
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    out = tmp_path / "out"
    out.mkdir()
    done = run_cli(["sessions", "export", SID[:10]], env, out)
    assert done.returncode == 0, done.stderr
    archive = out / f"{SID}.tar.gz"
    with tarfile.open(archive) as tar:
        names = sorted(tar.getnames())
        assert names == [f"{SID}.files", f"{SID}.files/shot.png", f"{SID}.jsonl"]
        # `filter` is Python >= 3.11.4; Debian 12's python3 is 3.11.2 (the archive is ours)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(tmp_path / "unpacked", **safe)
    unpacked = read(tmp_path / "unpacked" / f"{SID}.jsonl")
    assert unpacked.events == read(path).events
    assert (tmp_path / "unpacked" / f"{SID}.files" / "shot.png").read_bytes().startswith(b"\x89")
    again = run_cli(["sessions", "export", SID], env, out)
    assert again.returncode == 2 and "exists" in again.stderr
    named = run_cli(["sessions", "export", SID, "-o", str(out / "x.tar.gz")], env, out)
    assert named.returncode == 0 and tarfile.is_tarfile(out / "x.tar.gz")
    assert sorted(p.name for p in out.iterdir()) == [f"{SID}.tar.gz", "x.tar.gz"]


def test_list_shows_the_link_and_the_json_parent(tmp_path: Path) -> None:
    _write_session(tmp_path)
    child = tmp_path / "data" / "sessions"
    header = make_header("20260302-000000-def456", "/w", MODEL, parent_id=SID, parent_event=7)
    SessionLog.create(child, header).close()
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    rows = json_lines(run_cli(["sessions", "--json"], env, tmp_path).stdout)
    assert [row["parent"] for row in rows] == [SID, None]
    shown = run_cli(["sessions", "show", "20260302"], env, tmp_path).stdout
    assert f"continues: {SID} (its events 1-7)" in shown


def test_sessions_piped_into_head_has_no_traceback(tmp_path: Path) -> None:
    sessions = tmp_path / "data" / "sessions"
    sessions.mkdir(parents=True)
    header = make_header(SID, "/w", MODEL).model_dump()
    for n in range(1500):  # ~150 KB of listing: more than a pipe holds
        sid = f"20260301-{n:06d}-abcdef"
        (sessions / f"{sid}.jsonl").write_text(json.dumps({**header, "session_id": sid}) + "\n")
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    for command in ("sessions", "sessions --json", "--help"):
        done = subprocess.run(
            f"{sys.executable} -m workbench {command} | head -n 1",
            shell=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.stderr == "", done.stderr
        assert len(done.stdout.splitlines()) == 1


def test_a_headless_run_piped_into_head_finishes_without_a_traceback(tmp_path: Path) -> None:
    from headless_harness import bash, finish

    from workbench.testing.llm_server import ScriptedLLMServer

    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [bash("seq 1 3000"), bash("seq 1 3000"), finish("counted")]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        command = (
            f"{sys.executable} -m workbench --headless --workspace {workspace} -t count "
            "| head -n 1; exit ${PIPESTATUS[0]}"
        )
        done = subprocess.run(
            ["bash", "-c", command],
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.stderr == "", done.stderr
    assert done.returncode == 0  # the run's own exit code: it finished
    assert done.stdout.startswith("workbench session ")
    (log,) = (tmp_path / "data" / "sessions").glob("*.jsonl")
    assert read(log).events[-1].kind == "state"  # the run went on to its end, logged whole


def test_export_as_an_openhands_trajectory(tmp_path: Path) -> None:
    path = _write_session(tmp_path)
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    out = tmp_path / "out"
    out.mkdir()
    done = run_cli(["sessions", "export", "--format", "openhands", SID], env, out)
    assert done.returncode == 0, done.stderr
    items = json.loads((out / f"{SID}.json").read_text())
    assert isinstance(items, list) and items and all("id" in item for item in items)
    from workbench.replay.recording import load_recording

    back = load_recording(out / f"{SID}.json")
    assert back.format == "openhands"
    assert len(read(path).events) >= len(back.events) > 0
    again = run_cli(["sessions", "export", "--format", "openhands", SID], env, out)
    assert again.returncode == 2 and "exists" in again.stderr
