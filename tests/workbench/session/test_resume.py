"""Resuming saved sessions headless: `--resume ID` (or a prefix), `--last`, a SIGKILLed session,
and unknown or ambiguous ids. The real `workbench` command, the scripted LLM server, a real
local sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from headless_harness import bash, cli_env, finish, json_lines, run_cli
from waiting import wait_until

from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer

GONE = "The shell's state did not survive"


def _run(tmp_path: Path, script: Any, *args: str) -> tuple[list[dict[str, Any]], Any]:
    """One headless run; returns its JSON lines and the server's requests."""
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        # From the sessions' workspace: a log naming another folder needs --yes or --workspace.
        done = run_cli(["--headless", "--json", *args], env, tmp_path / "ws", timeout=120)
        assert done.returncode == 0, done.stderr
        return json_lines(done.stdout), list(server.requests)


def _contents(request: dict[str, Any]) -> list[str]:
    return [str(message.get("content") or "") for message in request["messages"]]


def _first_run(tmp_path: Path) -> str:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    lines, _ = _run(
        tmp_path,
        [bash("echo remembered-$((6*7))"), finish("said it")],
        "--workspace",
        str(workspace),
        "-t",
        "say the magic number",
    )
    session_id: str = lines[0]["session_id"]
    return session_id


@pytest.mark.timeout(300)
def test_resume_by_prefix_then_last_carry_the_history(tmp_path: Path) -> None:
    first = _first_run(tmp_path)
    # --resume with a prefix, from another directory: the session's workspace is used.
    other = tmp_path / "elsewhere"
    other.mkdir()
    lines, requests = _run(
        tmp_path, [bash("pwd"), finish("ok")], "--resume", first[:-2], "-t", "now print pwd"
    )
    second = lines[0]["session_id"]
    assert lines[0]["resumed_from"] == first and lines[-1]["resumed_from"] == first
    contents = _contents(requests[0])
    assert "say the magic number" in contents  # the earlier task
    assert any("remembered-42" in text for text in contents)  # the earlier tool result
    note = next(text for text in contents if GONE in text)
    assert first in note and "Jupyter kernel" in note
    assert contents[-1] == "now print pwd"  # the new message, last
    assert contents.index(note) < contents.index("now print pwd")
    events = [line["event"] for line in lines if line["type"] == "event"]
    outputs = [e["observation"] for e in events if e["kind"] == "observation"]
    assert str(tmp_path / "ws") in outputs[0]["content"]  # a new sandbox on the same workspace
    # The new log is whole by itself and names its parent.
    data = tmp_path / "data" / "sessions"
    loaded = read(data / f"{second}.jsonl")
    assert loaded.header.parent_id == first
    parent = read(data / f"{first}.jsonl")
    assert loaded.header.parent_event == parent.events[-1].id
    assert [e.id for e in loaded.events] == list(range(1, len(loaded.events) + 1))
    assert loaded.events[: len(parent.events)] == parent.events
    # --last continues the newest session (the resumed one), with both tasks.
    lines, requests = _run(tmp_path, [finish("bye")], "--last", "-t", "third message")
    assert lines[0]["resumed_from"] == second
    contents = _contents(requests[0])
    for text in ("say the magic number", "now print pwd", "third message"):
        assert text in contents
    assert sum(GONE in text for text in contents) == 2
    # Tokens and cost carry over: the third summary counts all three runs' calls.
    assert lines[-1]["steps"] == 1
    assert lines[-1]["tokens"] > 0
    # The list shows the links.
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    listing = run_cli(["sessions"], env, tmp_path).stdout.splitlines()
    assert listing[0].startswith(lines[0]["session_id"]) and listing[0].endswith(f"<- {second}")
    assert listing[1].startswith(second) and listing[1].endswith(f"<- {first}")
    assert "<-" not in listing[2]


@pytest.mark.timeout(300)
def test_resume_without_a_message_continues(tmp_path: Path) -> None:
    first = _first_run(tmp_path)
    _, requests = _run(tmp_path, [finish("ok")], "--resume", first)
    assert _contents(requests[0])[-1] == "Continue the task from where you left off."


def _kill_a_real_run(tmp_path: Path) -> tuple[str, Path]:
    """A headless run SIGKILLed while its command runs, its log then cut mid-line."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = {"steps": [bash("export MARK=set; sleep 60")], "default": {"text": "waiting"}}
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url, WORKBENCH_SANDBOX_SOFT_TIMEOUT_S="60")
        full = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "workbench",
                "--headless",
                "--json",
                "--workspace",
                str(workspace),
                "-t",
                "wait a minute",
            ],
            env={**full, **env},
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            assert process.stdout is not None
            start = json.loads(process.stdout.readline())
            log = Path(start["log"])
            wait_until(lambda: b'"kind":"action"' in log.read_bytes(), 60, "the action logged")
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(10)
    with log.open("a") as stream:  # what a kill in the middle of a write leaves
        stream.write('{"id":99,"kind":"observation","source":"environment","cau')
    return str(start["session_id"]), log


@pytest.mark.timeout(300)
def test_a_sigkilled_session_is_listed_shown_and_resumed(tmp_path: Path) -> None:
    killed, log = _kill_a_real_run(tmp_path)
    assert read(log).truncated  # the cut line is skipped, the rest loads
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    listing = run_cli(["sessions"], env, tmp_path)
    assert listing.returncode == 0
    assert killed in listing.stdout and "unfinished" in listing.stdout
    shown = run_cli(["sessions", "show", killed[:12]], env, tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "outcome:   unfinished" in shown.stdout
    assert "the last line was cut" in shown.stdout and "wait a minute" in shown.stdout
    lines, requests = _run(tmp_path, [finish("resumed")], "--resume", killed, "-t", "go on")
    assert lines[-1]["status"] == "success"
    messages = requests[0]["messages"]
    contents = _contents(requests[0])
    assert "wait a minute" in contents
    calls = [m for m in messages if m.get("tool_calls")]
    assert "sleep 60" in calls[0]["tool_calls"][0]["function"]["arguments"]
    answer = next(m for m in messages if m["role"] == "tool")
    assert "not carried out" in answer["content"]  # the call the kill cut short
    assert any(GONE in text and "environment variables" in text for text in contents)
    assert contents[-1] == "go on"
    resumed = read(Path(lines[0]["log"]))
    assert not resumed.truncated and resumed.header.parent_id == killed


def test_unknown_or_ambiguous_id_is_a_usage_error(tmp_path: Path) -> None:
    data = tmp_path / "data" / "sessions"
    data.mkdir(parents=True)
    for name in ("20260101-000000-aaaaaa", "20260101-000000-aaaabb"):
        (data / f"{name}.jsonl").write_text(
            json.dumps(
                {
                    "kind": "header",
                    "workbench_version": "1",
                    "session_id": name,
                    "created": 1.0,
                    "workspace": str(tmp_path),
                    "model": "m",
                }
            )
            + "\n"
        )
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    for args in (["--headless", "--resume", "nope", "-t", "x"], ["sessions", "show", "nope"]):
        done = run_cli(args, env, tmp_path)
        assert done.returncode == 2
        assert "no session 'nope'" in done.stderr
        assert "20260101-000000-aaaabb" in done.stderr  # the newest are named
    done = run_cli(["--headless", "--resume", "20260101-000000-aaaa", "-t", "x"], env, tmp_path)
    assert done.returncode == 2
    assert "ambiguous: 2 sessions" in done.stderr
    assert "20260101-000000-aaaaaa" in done.stderr and "20260101-000000-aaaabb" in done.stderr
    done = run_cli(["--headless", "--json", "--resume", "zzz", "-t", "x"], env, tmp_path)
    assert done.returncode == 2 and json_lines(done.stdout)[-1]["status"] == "config_error"
    (tmp_path / "none").mkdir()
    empty = cli_env(tmp_path / "none", "http://127.0.0.1:9")
    done = run_cli(["--headless", "--last", "-t", "x"], empty, tmp_path)
    assert done.returncode == 2 and "no saved sessions" in done.stderr


@pytest.mark.timeout(300)
def test_tokens_carry_over_so_a_spent_budget_stays_spent(tmp_path: Path) -> None:
    first = _first_run(tmp_path)
    spent = read(tmp_path / "data" / "sessions" / f"{first}.jsonl").events
    tokens = sum(getattr(e, "prompt_tokens", 0) + getattr(e, "completion_tokens", 0) for e in spent)
    assert tokens > 0
    with ScriptedLLMServer([finish("never asked")]) as server:
        env = cli_env(tmp_path, server.base_url, WORKBENCH_BUDGET_MAX_TOKENS=str(tokens))
        args = ["--headless", "--json", "--resume", first, "-t", "more"]
        done = run_cli(args, env, tmp_path / "ws")
        assert not server.requests
    summary = json_lines(done.stdout)[-1]
    assert done.returncode == 4 and summary["status"] == "budget"
    assert summary["tokens"] == tokens and "token budget used up" in summary["reason"]


def test_history_cuts_skips_bad_lines_and_brings_images(tmp_path: Path) -> None:
    from sandbox.protocol import CmdOutputObservation, CmdRunAction
    from workbench.events import ActionEvent, MessageEvent, ObservationEvent
    from workbench.session.log import SessionLog, make_header
    from workbench.session.resume import copy_payloads, cut_at, load_history

    log = SessionLog.create(tmp_path, make_header("20260101-000000-aaaaaa", "/w", "m"))
    events: list[Any] = [
        MessageEvent(id=1, source="user", text="task"),
        ActionEvent(
            id=2, tool_name="execute_bash", tool_call_id="a", action=CmdRunAction(command="ls")
        ),
        ActionEvent(
            id=3, tool_name="execute_bash", tool_call_id="b", action=CmdRunAction(command="pwd")
        ),
        ObservationEvent(
            id=4,
            cause=2,
            tool_call_id="a",
            observation=CmdOutputObservation(content="x", command="ls", exit_code=0),
        ),
    ]
    for event in events:
        log.append(event)
    log.write_payload("img.png", b"png")
    log.close()
    with log.path.open("a") as stream:
        stream.write('{"id": 5, "kind": "nonsense"}\n')
    history = load_history(log.path)
    assert history.skipped_lines == 1 and history.upto == 4 and not history.branched
    # An action keeps its result, even past another action.
    assert [e.id for e in cut_at(history.events, 2)] == [1, 2, 3, 4]
    assert [e.id for e in cut_at(history.events, 3)] == [1, 2, 3]
    with pytest.raises(ValueError, match="no event 9"):
        load_history(log.path, upto=9)
    branch = load_history(log.path, upto=1)
    assert branch.branched and branch.upto == 1
    target = tmp_path / "new.files"
    assert copy_payloads(history, target) == 1
    assert (target / "img.png").read_bytes() == b"png"
    assert (target / "img.png").stat().st_ino == (log.payload_dir / "img.png").stat().st_ino


def test_a_cut_at_an_action_keeps_the_checkpoint_of_the_files_it_left() -> None:
    from sandbox.protocol import CmdOutputObservation, CmdRunAction
    from workbench.events import ActionEvent, CheckpointEvent, MessageEvent, ObservationEvent
    from workbench.session.resume import cut_at

    def run(id: int) -> ActionEvent:
        return ActionEvent(
            id=id,
            tool_name="execute_bash",
            tool_call_id=f"c{id}",
            action=CmdRunAction(command="ls"),
        )

    def result(id: int, cause: int) -> ObservationEvent:
        out = CmdOutputObservation(content="", command="ls", exit_code=0)
        return ObservationEvent(id=id, cause=cause, tool_call_id=f"c{cause}", observation=out)

    events: list[Any] = [
        MessageEvent(id=1, source="user", text="task"),
        run(2),
        CheckpointEvent(id=3, step=0, commit="c0"),
        result(4, 2),
        CheckpointEvent(id=5, step=1, cause=2, commit="c1"),
        run(6),
        result(7, 6),
        MessageEvent(id=8, source="user", text="between"),
        CheckpointEvent(id=9, step=2, cause=6, commit="c2"),
    ]
    # The branch goes on from the files the action left, so its checkpoint comes along.
    assert [e.id for e in cut_at(events, 2)] == [1, 2, 3, 4, 5]
    assert [e.id for e in cut_at(events, 4)] == [1, 2, 3, 4, 5]
    # A message is no action: step 0's checkpoint (no cause) is not pulled in.
    assert [e.id for e in cut_at(events, 1)] == [1]
    # Never past a later message: what came between is not the branch's.
    assert [e.id for e in cut_at(events, 6)] == [1, 2, 3, 4, 5, 6, 7]
