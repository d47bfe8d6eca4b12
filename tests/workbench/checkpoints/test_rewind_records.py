"""Checkpoints hold the agent's changes only, and every rewind and undo can be undone (issue 23,
items 3 and 4): a real session (scripted LLM, real local sandbox and bash, real checkpoint
store), then the real `workbench` command in a subprocess."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from headless_harness import KEY, MODEL, bash, cli_env, finish, make_config, run_cli

from sandbox.runtimes.local import LocalRuntime
from workbench.checkpoints.store import checkpoint_store_of
from workbench.cli.checkpoints import run
from workbench.controller.loop import Controller
from workbench.events import ActionEvent, CheckpointEvent, Event
from workbench.llm import LLMClient
from workbench.session.log import SessionLog, make_header, new_session_id
from workbench.testing.llm_server import ScriptedLLMServer

RULES = '[security]\nallow = ["run:echo *"]\n'
"""What "always allow" writes into the project's rules while the agent runs."""


async def session(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[dict[str, Any]],
    on_event: Callable[[Path, Event], None] = lambda ws, event: None,
    data: str = "data",
) -> tuple[Path, Path, list[CheckpointEvent]]:
    """Run `steps` in a fresh workspace with checkpoints on; its log and checkpoints. `data`:
    where the app's data folder is, from `tmp_path`."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / data))
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "cfg"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with ScriptedLLMServer(steps) as server:
        config = make_config(tmp_path, server.base_url, workspace)
        store = checkpoint_store_of(workspace)
        runtime = LocalRuntime(
            workspace, disable=["browser", "jupyter"], warm_up=False, checkpoints=store
        )
        await runtime.start()
        header = make_header(new_session_id(), workspace, MODEL, config.redacted_dict())
        log = SessionLog.create(tmp_path / data / "sessions", header, secrets=[KEY])
        try:
            controller = Controller(config, runtime, LLMClient(config.llm), log)
            controller.subscribe(lambda event: on_event(workspace, event))
            result = await controller.run("make some files")
        finally:
            await runtime.close()
            log.close()
    assert result.status == "success", result
    found = [e for e in controller.events if isinstance(e, CheckpointEvent)]
    return workspace, log.path, found


def workbench(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """The real `workbench` command in a subprocess, on this test's data folder."""
    done = run_cli(list(args), cli_env(tmp_path, "http://127.0.0.1:9"), cwd=tmp_path)
    return done.returncode, done.stdout, done.stderr


def command(capsys: pytest.CaptureFixture[str], name: str, *args: str) -> tuple[int, str, str]:
    """The same command in this process (each subprocess costs seconds of start-up)."""
    code = run(name, list(args))
    out, err = capsys.readouterr()
    return code, out, err


def files(workspace: Path) -> dict[str, str]:
    """Every file of the workspace and its text."""
    return {
        str(p.relative_to(workspace)): p.read_text() for p in workspace.rglob("*") if p.is_file()
    }


THREE_STEPS = [bash("echo one > a.txt"), bash("echo two > b.txt"), bash("echo 3 > c.txt"), finish()]


async def test_the_apps_own_rules_are_no_step_and_never_rewound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 3: "always allow" writes `.workbench/config.toml` while step 2 waits; no step lists
    it, and rewinds (back and forth) and an undo leave the person's rules as they are."""
    rules = Path(".workbench/config.toml")

    def always_allow(workspace: Path, event: Event) -> None:
        actions = [event] if isinstance(event, ActionEvent) else []
        if actions and "b.txt" in str(event.action):
            (workspace / rules).parent.mkdir(exist_ok=True)
            (workspace / rules).write_text(RULES)

    workspace, log, points = await session(tmp_path, monkeypatch, THREE_STEPS, always_allow)
    assert [p.step for p in points] == [0, 1, 2, 3]
    recorded = [name for p in points for name in (*p.added, *p.changed, *p.deleted)]
    assert recorded == ["a.txt", "b.txt", "c.txt"]
    code, out, err = command(capsys, "checkpoints", str(log), "--json")
    assert code == 0, err
    assert ".workbench" not in out
    # The person removes the rule again; no rewind or undo brings it back or deletes the file.
    mine = "[security]\nallow = []\n"
    (workspace / rules).write_text(mine)
    for args in (["--to", "1"], ["--to", "3"], ["--to", "0"], ["--undo"], ["--undo"]):
        code, out, err = command(capsys, "rewind", str(log), *args, "--yes")
        assert code == 0, err
        assert ".workbench" not in out, args
        assert (workspace / rules).read_text() == mine, args
    code, out, err = command(capsys, "diff", str(log), "--from", "0", "--to", "3")
    assert code == 0 and "c.txt" in out and ".workbench" not in out


async def test_an_undo_is_undone_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Item 4, as the issue tells it: rewind to 0, write notes.txt, undo (notes.txt goes: the
    files are as before the rewind), undo again: notes.txt is back; nothing is ever lost."""
    workspace, log, _ = await session(tmp_path, monkeypatch, THREE_STEPS)
    session_files = files(workspace)
    code, out, err = workbench(tmp_path, "rewind", str(log), "--to", "0", "--yes")
    assert code == 0 and files(workspace) == {}, err
    (workspace / "notes.txt").write_text("my notes\n")
    code, out, err = workbench(tmp_path, "rewind", str(log), "--undo", "--yes")
    assert code == 0, err
    assert "- notes.txt" in out and files(workspace) == session_files
    code, out, err = workbench(tmp_path, "rewind", str(log), "--undo", "--yes")
    assert code == 0, err
    assert "+ notes.txt" in out and files(workspace) == {"notes.txt": "my notes\n"}
    code, out, err = workbench(tmp_path, "rewind", str(log), "--undo", "--yes", "--json")
    assert code == 0 and files(workspace) == session_files, err
    assert json.loads(out)["deleted"] == ["notes.txt"]


async def test_repeated_undos_walk_back_through_every_rewind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 4: two rewinds, then undo, undo: back to before the first rewind; undoing on walks
    back through those undos to the person's files."""
    workspace, log, _ = await session(tmp_path, monkeypatch, THREE_STEPS)
    at_end = files(workspace)
    assert command(capsys, "rewind", str(log), "--to", "2", "--yes")[0] == 0
    at_two = files(workspace)
    assert command(capsys, "rewind", str(log), "--to", "1", "--yes")[0] == 0
    (workspace / "mine.txt").write_text("mine\n")
    mine = files(workspace)
    seen = []
    for _ in range(5):
        code, _, err = command(capsys, "rewind", str(log), "--undo", "--yes")
        assert code == 0, err
        seen.append(files(workspace))
    # Before the rewind to 1; before the rewind to 2; then back the way it came.
    assert seen == [at_two, at_end, at_two, mine, at_two]


async def test_a_data_folder_inside_the_workspace_is_the_apps_not_a_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 3, a home folder as the workspace: the data folder in it holds the session log, the
    trust records and the checkpoint store itself; no step lists them, and a rewind and its
    undo leave them alone (before, a step listed the log and the store's objects, and
    `rewind` failed in the store)."""
    data = "ws/.local/share/workbench"
    workspace, log, points = await session(tmp_path, monkeypatch, THREE_STEPS, data=data)
    recorded = [name for p in points for name in (*p.added, *p.changed, *p.deleted)]
    assert recorded == ["a.txt", "b.txt", "c.txt"]
    trust = tmp_path / data / "trust" / "projects.json"
    trust.parent.mkdir(parents=True)
    trust.write_text("{}")
    before = log.read_bytes()
    for args in (["--to", "0"], ["--undo"], ["--to", "1"]):
        code, out, err = command(capsys, "rewind", str(log), *args, "--yes")
        assert code == 0, err
        assert ".local" not in out, args
        assert log.read_bytes() == before and trust.read_text() == "{}"
    assert (workspace / "a.txt").exists()
    assert not (workspace / "b.txt").exists()
