"""Every step undoable: a real session (scripted LLM, real local sandbox with bash, editor and
IPython) changes the workspace in every way a tool can, and `workbench rewind` brings back the
exact tree after any step, in any order; `--undo` brings back what the person made after."""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from headless_harness import KEY, MODEL, bash, finish, make_config

from sandbox.runtimes.local import LocalRuntime
from workbench.checkpoints.store import checkpoint_store_of
from workbench.cli.checkpoints import run
from workbench.controller.loop import Controller
from workbench.events import CheckpointEvent, Event
from workbench.llm import LLMClient
from workbench.session.log import SessionLog, make_header, new_session_id
from workbench.testing.llm_server import ScriptedLLMServer

Tree = dict[str, tuple[Any, ...]]


def tree(root: Path) -> Tree:
    """Every entry under `root` by type, content, link target and executable bit."""
    found: Tree = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir",)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", digest, bool(info.st_mode & stat.S_IXUSR))
    return found


def edit(**args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "str_replace_editor", "arguments": args}]}


def ipython(code: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "execute_ipython_cell", "arguments": {"code": code}}]}


def script(ws: Path) -> list[dict[str, Any]]:
    return [
        bash(
            "mkdir -p src/lib docs node_modules/pkg && printf 'a\\n' > src/a.txt && "
            "printf '#!/bin/sh\\necho hi\\n' > run.sh && echo doc > docs/d.md && "
            "echo cached > node_modules/pkg/index.js"
        ),
        edit(command="create", path=str(ws / "src/lib/m.py"), file_text="x = 1\n"),
        ipython(
            "import os\nopen('data.bin', 'wb').write(bytes(range(256)) * 8)\n"
            "os.symlink('src/a.txt', 'link')"
        ),
        bash("chmod +x run.sh && rm -r docs && mkdir -p empty/inner"),
        edit(
            command="str_replace", path=str(ws / "src/lib/m.py"), old_str="x = 1", new_str="x = 2"
        ),
        bash("rm src/a.txt && ln -sfn run.sh link && printf 'b' >> data.bin && rmdir empty/inner"),
        {"tool_calls": [{"name": "think", "arguments": {"thought": "all done"}}]},
        finish(),
    ]


def without_ignored(found: Tree) -> Tree:
    return {k: v for k, v in found.items() if not k.startswith("node_modules")}


async def record(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps: Callable[[Path], list[dict[str, Any]]] = script,
    prepare: Callable[[Path], None] = lambda ws: None,
) -> tuple[Path, Path, dict[int, Tree]]:
    """Run the session; the tree after each checkpointed step, as the run saw it."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "cfg"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "keep.txt").write_text("there before the session\n")
    prepare(workspace)
    trees: dict[int, Tree] = {}
    async with ScriptedLLMServer(steps(workspace)) as server:
        config = make_config(tmp_path, server.base_url, workspace, agent__enable_jupyter=True)
        store = checkpoint_store_of(workspace)
        runtime = LocalRuntime(workspace, disable=["browser"], warm_up=False, checkpoints=store)
        await runtime.start()
        header = make_header(new_session_id(), workspace, MODEL, config.redacted_dict())
        log = SessionLog.create(tmp_path / "data" / "sessions", header, secrets=[KEY])
        try:
            controller = Controller(config, runtime, LLMClient(config.llm), log)

            def seen(event: Event) -> None:
                if isinstance(event, CheckpointEvent):
                    trees[event.step] = tree(workspace)

            controller.subscribe(seen)
            result = await controller.run("change everything")
        finally:
            await runtime.close()
            log.close()
    assert result.status == "success", result
    return workspace, log.path, trees


def cli(name: str, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(name, list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.timeout(180)
async def test_rewind_to_any_step_and_undo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, log, trees = await record(tmp_path, monkeypatch)
    assert sorted(trees) == [0, 1, 2, 3, 4, 5, 6]  # the think (7) and finish change nothing
    assert trees[3][("data.bin")][0] == "file" and trees[3]["link"] == ("link", "src/a.txt")
    assert trees[4]["run.sh"][2] is True and "empty/inner" in trees[4]
    # Each step's changes, as `workbench checkpoints --json` lists them.
    code, out, _ = cli("checkpoints", str(log), "--json", capsys=capsys)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [row["step"] for row in rows] == [0, 1, 2, 3, 4, 5, 6]
    assert rows[2]["added"] == ["src/lib/m.py"] and rows[5]["changed"] == ["src/lib/m.py"]
    assert "docs/d.md" in rows[4]["deleted"] and rows[6]["deleted"] == ["src/a.txt"]
    assert not any("node_modules" in name for row in rows for name in row["added"])
    # Rewind to every step, in a shuffled order that includes 0 and the last.
    order = [0, 6, 3, 1, 5, 2, 4, 0, 6]
    random.Random(7).shuffle(order[1:-1])
    for step in order:
        code, out, err = cli("rewind", str(log), "--to", str(step), "--yes", capsys=capsys)
        assert code == 0, err
        assert without_ignored(tree(workspace)) == without_ignored(trees[step]), step
        assert (workspace / "node_modules/pkg/index.js").read_text() == "cached\n"
        assert (workspace / "keep.txt").exists()
    # A step that changed nothing rewinds to the checkpoint before it.
    cli("rewind", str(log), "--to", "7", "--yes", capsys=capsys)
    assert without_ignored(tree(workspace)) == without_ignored(trees[6])
    # The person makes a file, rewinds, and --undo brings both back.
    (workspace / "mine.txt").write_text("my own work\n")
    before = tree(workspace)
    code, out, _ = cli("rewind", str(log), "--to", "1", "--yes", "--json", capsys=capsys)
    result = json.loads(out)
    assert code == 0 and "mine.txt" in result["deleted"]
    assert without_ignored(tree(workspace)) == without_ignored(trees[1])
    code, out, _ = cli("rewind", str(log), "--undo", "--yes", capsys=capsys)
    assert code == 0 and tree(workspace) == before
    assert (workspace / "mine.txt").read_text() == "my own work\n"
    # The diff of one step, binary files named.
    code, out, _ = cli("diff", str(log), "--step", "5", capsys=capsys)
    assert "-x = 1" in out and "+x = 2" in out
    code, out, _ = cli("diff", str(log), "--from", "2", "--to", "3", capsys=capsys)
    assert "Binary files /dev/null and b/data.bin differ" in out


async def test_bad_input_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, log, _ = await record(tmp_path, monkeypatch)
    now = tree(workspace)
    code, _, err = cli("rewind", "no-such-session", "--to", "1", "--yes", capsys=capsys)
    assert code == 2 and "no session 'no-such-session'" in err and "workbench sessions" in err
    code, _, err = cli("rewind", str(log), "--to", "99", "--yes", capsys=capsys)
    # The range is the session's steps (8 actions), not only those with a checkpoint (1-6).
    assert code == 2 and "step 99 is out of range" in err and "steps 0 to 8" in err
    code, _, err = cli("rewind", str(log), "--to", "-1", "--yes", capsys=capsys)
    assert code == 2 and "out of range" in err
    code, _, err = cli("rewind", str(log), "--undo", "--yes", capsys=capsys)
    assert code == 2 and "no rewind to undo" in err
    assert tree(workspace) == now
    code, _, err = cli("rewind", str(log), "--to", "1", capsys=capsys)  # no terminal, no --yes
    assert code == 2 and "--yes" in err and tree(workspace) == now
    moved = workspace.with_name("moved")
    workspace.rename(moved)
    code, _, err = cli("rewind", str(log), "--to", "1", "--yes", capsys=capsys)
    assert code == 2 and "does not exist (moved or deleted); nothing was changed" in err
    assert tree(moved) == now
    # By id, as `workbench sessions` shows it.
    moved.rename(workspace)
    code, out, _ = cli("checkpoints", log.stem, capsys=capsys)
    assert code == 0 and out.startswith("[0] ")


GIT = ["git", "-c", "user.name=me", "-c", "user.email=me@example.com"]


def repo(ws: Path) -> None:
    subprocess.run([*GIT, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*GIT, "add", "keep.txt"], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", "mine"], cwd=ws, check=True)


def commits(ws: Path) -> list[dict[str, Any]]:
    return [
        bash(
            "echo new > f.txt && echo changed >> keep.txt && git add -A && "
            "git -c user.name=agent -c user.email=a@example.com commit -qm agent"
        ),
        finish(),
    ]


async def test_a_git_repository_s_own_git_is_never_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, log, _ = await record(tmp_path, monkeypatch, commits, repo)
    store = checkpoint_store_of(workspace)
    last = json.loads(run_json(log, capsys))[-1]["commit"]
    listed = git("--git-dir", str(store), "ls-tree", "-r", "--name-only", last).split()
    assert sorted(listed) == ["f.txt", "keep.txt"]  # the person's .git is not in the store
    git_before = {k: v for k, v in tree(workspace).items() if k.startswith(".git")}
    code, _, err = cli("rewind", str(log), "--to", "0", "--yes", capsys=capsys)
    assert code == 0, err
    # The work tree is back; .git is as the agent left it (its commit stays in the history).
    assert not (workspace / "f.txt").exists()
    assert (workspace / "keep.txt").read_text() == "there before the session\n"
    assert {k: v for k, v in tree(workspace).items() if k.startswith(".git")} == git_before
    history = git("-C", str(workspace), "log", "--format=%s")
    assert history.split() == ["agent", "mine"]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def run_json(log: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code, out, _ = cli("checkpoints", str(log), "--json", capsys=capsys)
    assert code == 0
    return "[" + ",".join(out.splitlines()) + "]"


def test_a_resumed_session_goes_on_from_its_files_and_the_present_can_be_put_back(
    tmp_path: Path,
) -> None:
    from headless_harness import cli_env, json_lines, run_cli

    workspace = tmp_path / "ws"
    workspace.mkdir()
    first = [bash("echo one > a.txt && mkdir sub && echo two > sub/b.txt"), finish()]
    with ScriptedLLMServer(first) as server:
        env = cli_env(tmp_path, server.base_url)
        done = run_cli(["--headless", "--json", "-t", "make files"], env, workspace)
    assert done.returncode == 0, done.stderr
    session_id = json_lines(done.stdout)[-1]["session_id"]
    # The person changes things after the session ...
    (workspace / "a.txt").write_text("mine now\n")
    (workspace / "sub" / "b.txt").unlink()
    (workspace / "new.txt").write_text("made later\n")
    later = tree(workspace)
    # ... and resumes it: the files come back as the session left them, and the model is told.
    with ScriptedLLMServer([finish()]) as server:
        env = cli_env(tmp_path, server.base_url)
        resumed = run_cli(["--headless", "--resume", session_id, "-t", "go on"], env, workspace)
        request = server.requests[0]
    assert resumed.returncode == 0, resumed.stderr
    assert f"restored to step 1 of session {session_id}" in resumed.stderr
    assert (workspace / "a.txt").read_text() == "one\n"
    assert (workspace / "sub" / "b.txt").read_text() == "two\n"
    assert not (workspace / "new.txt").exists()
    said = " ".join(str(m.get("content")) for m in request["messages"])
    assert "were restored to what they were at that point" in said
    # What the person had is one command away.
    undo = run_cli(["rewind", session_id, "--undo", "--yes"], env, workspace)
    assert undo.returncode == 0, undo.stderr
    assert tree(workspace) == later
