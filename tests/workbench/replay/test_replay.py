"""`workbench replay`: sessions recorded by real headless runs (scripted LLM server, real local
sandbox), then watched, re-run in a real local sandbox, and continued with a live (scripted)
model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from headless_harness import bash, cli_env, create, finish, json_lines, run_cli

from workbench.agent.messages import build_messages
from workbench.events import ActionEvent
from workbench.replay.normalise import normalise
from workbench.replay.recording import ReplayError, load_recording, resolve, step_numbers
from workbench.replay.rerun import move_paths
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer


def record(tmp_path: Path, workspace: Path, script: list[dict[str, Any]], task: str) -> Any:
    """Run `script` headless with --json; returns (process, its JSON lines)."""
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(["--headless", "--json", "-t", task], env, cwd=workspace)
    return proc, json_lines(proc.stdout)


def replay(tmp_path: Path, *args: str, cwd: Path | None = None, **env: str) -> Any:
    """Run `workbench replay ARGS` as a subprocess (no LLM reachable)."""
    environment = cli_env(tmp_path, "http://127.0.0.1:9", **env)
    return run_cli(["replay", *args], environment, cwd=cwd or tmp_path, timeout=120)


def read_script(workspace: Path) -> list[dict[str, Any]]:
    """Read data.txt, write and run a script, finish."""
    return [
        bash("cat data.txt"),
        create(workspace / "hi.sh", "#!/bin/bash\necho hi from $(pwd)\n"),
        bash("bash hi.sh && date && sleep 0.1 & wait"),
        finish("done"),
    ]


def without_nones(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message without its None values."""
    return {key: value for key, value in message.items() if value is not None}


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[dict[str, Any]], Path]:
    """A session recorded headless with --json: (workspace, printed lines, log path)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data.txt").write_text("alpha\nbeta\n")
    pristine = tmp_path / "pristine"
    shutil.copytree(workspace, pristine)
    proc, lines = record(tmp_path, workspace, read_script(workspace), "read data, run hi.sh")
    assert proc.returncode == 0, proc.stderr
    return workspace, lines, Path(lines[-1]["log"])


def test_watch_json_prints_what_the_live_run_printed(
    tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]], Path]
) -> None:
    _, live, log = recorded
    session_id = live[0]["session_id"]
    proc = replay(tmp_path, "--json", session_id[:12])  # a unique prefix
    assert proc.returncode == 0, proc.stderr
    watched = json_lines(proc.stdout)
    assert [line for line in watched if line["type"] == "event"] == [
        line for line in live if line["type"] == "event"
    ]
    assert watched[0] == live[0]
    ignore = {"duration_s"}
    assert {k: v for k, v in watched[-1].items() if k not in ignore} == {
        k: v for k, v in live[-1].items() if k not in ignore
    }
    # by path, human output, a range of steps
    proc = replay(tmp_path, "--headless", str(log), "--from", "2", "--to", "2")
    assert proc.returncode == 0, proc.stderr
    assert "[2] edit create" in proc.stdout and "cat data.txt" not in proc.stdout
    assert "== success" in proc.stdout.splitlines()[-1]


def test_rerun_unchanged_matches_then_a_changed_file_differs(
    tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]], Path]
) -> None:
    _, _, log = recorded
    again = tmp_path / "again"
    shutil.copytree(tmp_path / "pristine", again)
    proc = replay(tmp_path, "--rerun", "--json", str(log), "--workspace", str(again))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    assert [line["type"] for line in lines] == ["start", "summary"]
    summary = lines[-1]
    assert summary["status"] == "success" and summary["differences"] == 0
    assert summary["compared"] == 3 and summary["skipped"] == 1  # finish is not run
    assert (again / "hi.sh").read_text() == "#!/bin/bash\necho hi from $(pwd)\n"

    changed = tmp_path / "changed"
    shutil.copytree(tmp_path / "pristine", changed)
    (changed / "data.txt").write_text("alpha\nGAMMA\n")
    proc = replay(tmp_path, "--rerun", "--json", str(log), "--workspace", str(changed))
    assert proc.returncode == 11, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    differences = [line for line in lines if line["type"] == "difference"]
    assert len(differences) == 1
    assert differences[0]["step"] == 1 and "beta" in differences[0]["recorded"]
    assert "GAMMA" in differences[0]["new"]
    assert lines[-1]["first_difference_step"] == 1 and lines[-1]["exit_code"] == 11

    human = tmp_path / "human"
    shutil.copytree(changed, human)
    (human / "hi.sh").unlink()
    proc = replay(tmp_path, "--rerun", "--headless", str(log), "--workspace", str(human))
    assert proc.returncode == 11
    assert "[1] $ cat data.txt\n    ✗ differs from the recording (exit code 0):" in proc.stdout
    assert "      -beta" in proc.stdout and "      +GAMMA" in proc.stdout
    assert "the first at step 1" in proc.stdout.splitlines()[-1]


def test_rerun_in_a_new_temporary_workspace_moves_the_paths(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [
        create(workspace / "hi.sh", "echo hi from $(pwd)\n"),
        bash(f"bash {workspace}/hi.sh; echo $$ > /tmp/x-$$; ls {workspace}"),
        finish(),
    ]
    proc, lines = record(tmp_path, workspace, script, "hi")
    assert proc.returncode == 0, proc.stderr
    proc = replay(tmp_path, "--rerun", "--json", lines[-1]["log"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json_lines(proc.stdout)[-1]
    assert summary["differences"] == 0 and summary["compared"] == 2
    new_workspace = Path(summary["workspace"])
    assert new_workspace != workspace and (new_workspace / "hi.sh").is_file()
    shutil.rmtree(new_workspace)


def test_unknown_session_and_bad_arguments_are_usage_errors(tmp_path: Path) -> None:
    proc = replay(tmp_path, "--json", "nosuchsession")
    assert proc.returncode == 2
    assert "no saved session matches 'nosuchsession'" in proc.stderr
    assert "workbench sessions" in proc.stderr
    not_a_log = tmp_path / "notes.jsonl"
    not_a_log.write_text("hello\n")
    proc = replay(tmp_path, "--headless", str(not_a_log))
    assert proc.returncode == 2 and "not a session header" in proc.stderr
    for args, words in (
        (["--from", "0"], "--from counts steps from 1"),
        (["--from", "3", "--to", "2"], "--to 2 comes before --from 3"),
        (["--speed", "0"], "--speed must be more than 0"),
        (["--rerun", "--workspace", str(tmp_path / "missing")], "no such directory"),
    ):
        proc = replay(tmp_path, "--headless", str(not_a_log), *args)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)


def test_resolve_by_prefix_refuses_an_ambiguous_one(tmp_path: Path) -> None:
    for name in ("20260101-000000-aaaaaa", "20260101-000000-aaaabb"):
        (tmp_path / f"{name}.jsonl").write_text("{}\n")
    assert resolve("20260101-000000-aaaaa", tmp_path).name == "20260101-000000-aaaaaa.jsonl"
    with pytest.raises(ReplayError, match="matches 2 sessions"):
        resolve("20260101-000000-aaaa", tmp_path)
    with pytest.raises(ReplayError, match="no saved session"):
        resolve("2027", tmp_path)


def test_normalise_masks_what_always_differs() -> None:
    one = normalise(
        "/home/a/ws/x ok at 2026-11-23T22:38:53.123Z, Mon Nov 23 22:38:53 UTC 2026\n"
        "real\t0m0.003s took 12 ms, pid 4242, /tmp/tmpab12cd/f\n[1] 31337",
        ["/home/a/ws"],
    )
    two = normalise(
        "/tmp/r/x ok at 2026-11-24T01:02:03Z, Tue Nov 24 01:02:03 UTC 2026\n"
        "real\t0m1.250s took 3 ms, pid 17, /tmp/tmpzz99yy/f\n[1] 5",
        ["/tmp/r"],
    )
    assert one == two
    assert "<workspace>/x" in one and "<pid>" in one
    assert normalise("exit code 1") != normalise("exit code 2")
    assert normalise("beta") != normalise("GAMMA")


def test_move_paths_moves_whole_path_components_only() -> None:
    text = "cat /w/ws/a /w/ws2/b /w/ws"
    assert move_paths(text, "/w/ws", "/new") == "cat /new/a /w/ws2/b /new"
    assert move_paths("cd /workspace && ls", "/workspace", "/t/x") == "cd /t/x && ls"


def test_steps_are_the_agents_actions(recorded: tuple[Path, list[dict[str, Any]], Path]) -> None:
    _, _, log = recorded
    loaded = load_recording(log)
    steps = step_numbers(loaded.events)
    actions = [s for e, s in zip(loaded.events, steps, strict=True) if isinstance(e, ActionEvent)]
    assert actions == [1, 2, 3, 4]
    assert steps[0] == 1  # the task goes with the first step


def test_continue_from_sends_exactly_the_history_up_to_step_n(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [bash("echo one"), bash("echo two > two.txt && cat two.txt"), bash("echo three")]
    proc, lines = record(tmp_path, workspace, [*script, finish()], "count to three")
    assert proc.returncode == 0, proc.stderr
    parent = read(Path(lines[-1]["log"]))
    with ScriptedLLMServer([finish("continued")]) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(
            [
                "replay",
                parent.header.session_id,
                "--continue-from",
                "2",
                "--json",
                "--workspace",
                str(workspace),
            ],
            env,
            cwd=tmp_path,
        )
        requests = list(server.requests)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json_lines(proc.stdout)
    assert out[-1]["status"] == "success" and out[-1]["parent"] == parent.header.session_id
    # the history: the recorded events up to the end of step 2 (its observation)
    cut = [i for i, e in enumerate(parent.events) if e.kind == "llm_call"][2]
    expected = build_messages("system", parent.events[:cut])
    sent = [without_nones(m) for m in requests[0]["messages"]]
    assert sent[1:] == [without_nones(m) for m in expected[1:]]  # litellm drops None content
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "tool", "assistant", "tool"]
    child = read(Path(out[-1]["log"]))
    assert child.header.model_extra is not None
    assert child.header.model_extra["parent"]["session_id"] == parent.header.session_id
    assert child.header.model_extra["parent"]["step"] == 2
    assert child.events[-1].kind == "state" and child.events[-1].state == "finished"


def test_export_openhands_round_trip(
    tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]], Path]
) -> None:
    from workbench.replay.openhands_export import export_openhands

    workspace, _, log = recorded
    out = tmp_path / "trajectory.json"
    count = export_openhands(log, out)
    items = json.loads(out.read_text())
    assert len(items) == count > 0
    kinds = [item.get("action") or item.get("observation") for item in items]
    assert kinds[:2] == ["agent_state_changed", "message"] or "message" in kinds
    run = next(item for item in items if item.get("observation") == "run")
    assert run["extras"]["metadata"]["exit_code"] == 0 and run["content"] == "alpha\nbeta\n"
    edit = next(item for item in items if item.get("action") == "edit")
    assert edit["args"]["path"] == "/workspace/hi.sh" and edit["args"]["command"] == "create"
    assert all(str(workspace) not in json.dumps(item) for item in items if "action" in item)
    back = load_recording(out)
    assert back.format == "openhands" and not back.notes
    ours = load_recording(log)
    mine = [e.action for e in ours.events if isinstance(e, ActionEvent)]
    theirs = [e.action for e in back.events if isinstance(e, ActionEvent)]
    assert [a.kind for a in theirs] == [a.kind for a in mine]
    assert theirs[1].path == "/workspace/hi.sh"  # type: ignore[union-attr]


OPENHANDS = Path(__file__).resolve().parents[2] / "data" / "openhands"


def test_openhands_trajectories_are_read_with_notes_for_what_is_skipped() -> None:
    later = load_recording(OPENHANDS / "edit_args.json")
    assert later.format == "openhands" and later.model == "anthropic/claude-sonnet-4"
    assert later.notes == ["event 15 skipped: unknown action kind 'delegate'"]
    actions = [e for e in later.events if isinstance(e, ActionEvent)]
    assert [(a.source, a.action.kind) for a in actions] == [
        ("environment", "run"),
        ("agent", "edit"),
        ("agent", "run"),
        ("agent", "run"),
        ("agent", "edit"),
        ("agent", "run"),
        ("agent", "finish"),
    ]
    assert actions[1].tool_call_id == "toolu_01" and actions[1].thought == "I will create app.py."
    early = load_recording(OPENHANDS / "translated_ipython.json")
    edits = [e.action for e in early.events if isinstance(e, ActionEvent)][:2]
    assert edits[0].model_dump(exclude_none=True) == {
        "kind": "edit",
        "command": "create",
        "path": "/workspace/notes.md",
        "file_text": "# Nots\n\nline two\n",
    }
    assert (edits[1].old_str, edits[1].new_str) == ("# Nots", "# Notes")  # type: ignore[union-attr]
    assert len(early.notes) == 2
    assert early.notes[0].startswith("event 7 skipped: it does not fit its kind")  # not run
    assert early.notes[1] == "event 14 skipped: unknown observation kind 'condensation'"
    codes = [
        e.observation.exit_code  # type: ignore[union-attr]
        for e in early.events
        if e.kind == "observation" and e.observation.kind == "run"
    ]
    assert codes == [1, 0]  # the older extras.exit_code


@pytest.mark.parametrize("name", ["edit_args.json", "translated_ipython.json"])
def test_openhands_trajectory_watched_and_rerun(tmp_path: Path, name: str) -> None:
    trajectory = OPENHANDS / name
    proc = replay(tmp_path, "--headless", str(trajectory))
    assert proc.returncode == 0, proc.stderr
    assert "skipped: unknown" in proc.stderr
    assert ("exit code 2" if name == "edit_args.json" else "exit code 1") in proc.stdout
    assert "== success" in proc.stdout.splitlines()[-1]

    workspace = tmp_path / "rerun"
    workspace.mkdir()
    proc = replay(tmp_path, "--rerun", "--json", str(trajectory), "--workspace", str(workspace))
    assert proc.returncode in (0, 11), proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    summary = lines[-1]
    assert [line["type"] for line in lines] == ["start", "summary"]  # edits judged by effect
    assert summary["exit_code"] == 0
    if name == "edit_args.json":
        assert (workspace / "app.py").read_text() == "print(2 + 3)\n"
        assert summary["compared"] == 5  # the failed `ls` did not stop the replay
        assert "an event of the environment, not an action of the agent" in proc.stderr
    else:
        assert (workspace / "notes.md").read_text() == "# Notes\n\nline two\n"
        assert not (workspace / "evil.txt").exists()
        assert summary["compared"] == 4
    again = tmp_path / "again"
    again.mkdir()
    proc = replay(tmp_path, "--rerun", str(trajectory), "--workspace", str(again))  # piped
    failed = (
        f"$ ls {again}/missing\n    = as recorded (exit code 2)"
        if name == "edit_args.json"
        else "$ grep -c zzz notes.md\n    = as recorded (exit code 1)"
    )
    assert failed in proc.stdout, proc.stdout


def test_rerun_passes_each_action_through_the_policy(tmp_path: Path) -> None:
    def run(number: int, command: str, output: str) -> list[dict[str, Any]]:
        extras = {"command": command, "metadata": {"exit_code": 0, "working_dir": "/workspace"}}
        return [
            {"id": number, "timestamp": "2025-06-02T10:00:00", "source": "agent",
             "message": "", "action": "run", "args": {"command": command, "thought": ""}},
            {"id": number + 1, "timestamp": "2025-06-02T10:00:01", "source": "agent",
             "message": "", "cause": number, "observation": "run", "content": output,
             "extras": extras},
        ]  # fmt: skip

    trajectory = tmp_path / "risky.json"
    steps = [*run(1, "sudo touch /workspace/marker", ""), *run(3, "echo after", "after")]
    trajectory.write_text(json.dumps(steps))
    workspace = tmp_path / "rerun"
    workspace.mkdir()
    proc = replay(tmp_path, "--rerun", "--json", str(trajectory), "--workspace", str(workspace))
    assert proc.returncode == 11, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    [difference] = [line for line in lines if line["type"] == "difference"]
    assert difference["step"] == 1 and difference["new"].startswith("This action was not run")
    assert not (workspace / "marker").exists()
    assert lines[-1]["compared"] == 2  # the replay went on after the refusal


def test_a_killed_session_is_watched_up_to_its_last_whole_line(
    tmp_path: Path, recorded: tuple[Path, list[dict[str, Any]], Path]
) -> None:
    _, live, log = recorded
    cut = tmp_path / "killed.jsonl"
    data = log.read_bytes()
    middle = data.rfind(b"\n", 0, len(data) // 2)
    cut.write_bytes(data[: middle + 40])  # a SIGKILL mid-line
    proc = replay(tmp_path, "--json", str(cut))
    assert proc.returncode == 0, proc.stderr
    assert "the last line was cut off" in proc.stderr
    watched = [line for line in json_lines(proc.stdout) if line["type"] == "event"]
    recorded_events = [line for line in live if line["type"] == "event"]
    assert 0 < len(watched) < len(recorded_events)
    assert watched == recorded_events[: len(watched)]
    assert json_lines(proc.stdout)[-1]["status"] == "interrupted"


def test_timeline_moves_by_event_step_and_jump() -> None:
    from workbench.replay.timeline import Timeline, pause_between

    loaded = load_recording(OPENHANDS / "edit_args.json")
    line = Timeline(loaded.events)
    assert line.last_step == 6 and line.position == 0 and line.step == 0
    shown = line.forward()  # the task, the environment's setup, and step 1
    assert line.step == 1 and shown[0].kind == "message" and line.position == line.end_of(1)
    assert line.jump(4) == line.end_of(4) and line.step == 4
    assert line.back() == line.end_of(3) and line.step == 3
    assert line.jump(99) == len(line.events) and line.at_end and line.next_event() is None
    assert line.jump(0) == 0 and line.back() == 0
    event, gap = line.next_event() or (None, -1.0)
    assert event is loaded.events[0] and gap == 0.0
    only = Timeline(loaded.events, first=2, last=3)
    assert set(only.steps) == {2, 3}
    assert pause_between(10.0, 11.0, 2.0) == 0.5 and pause_between(0.0, 60.0, 1.0) == 2.0
    assert pause_between(0.0, 1.0, None) == 0.0
