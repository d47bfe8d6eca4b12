"""Checkpoints on the Docker runtime: a real headless session in a container changes the
workspace, and `workbench rewind` on the host brings back the tree after any step, each
compared with the same steps carried out afresh in a folder of their own."""

from __future__ import annotations

import hashlib
import json
import os
import random
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from docker_support import BASE_IMAGE, sandbox_image
from headless_harness import cli_env, finish, json_lines, run_cli

from workbench.testing.llm_server import ScriptedLLMServer

__all__ = ["sandbox_image"]  # a fixture, used by name

pytestmark = pytest.mark.docker

COMMANDS = [
    "mkdir -p src/lib docs && printf 'a\\n' > src/a.txt && echo doc > docs/d.md",
    None,  # the editor writes src/lib/m.py
    "printf '\\000\\001\\002binary' > data.bin && ln -s src/a.txt link && chmod +x src/a.txt",
    "rm -r docs && mkdir -p empty/inner && printf more >> data.bin",
    "rm src/a.txt && ln -sfn data.bin link && rmdir empty/inner",
]
EDIT = ("src/lib/m.py", "x = 1\n")


def tree(root: Path) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            info = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir",)
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                found[rel] = ("file", digest, bool(info.st_mode & stat.S_IXUSR))
    return found


def expected(tmp_path: Path, steps: int) -> dict[str, tuple[Any, ...]]:
    """The tree after `steps` steps, made afresh on the host."""
    folder = tmp_path / f"expected-{steps}"
    folder.mkdir(parents=True)
    for command in COMMANDS[:steps]:
        if command is None:
            (folder / EDIT[0]).write_text(EDIT[1])
        else:
            subprocess.run(["bash", "-c", command], cwd=folder, check=True)
    return tree(folder)


def script() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for command in COMMANDS:
        if command is None:
            args = {"command": "create", "path": f"/workspace/{EDIT[0]}", "file_text": EDIT[1]}
            steps.append({"tool_calls": [{"name": "str_replace_editor", "arguments": args}]})
        else:
            args = {"command": command, "security_risk": "LOW"}
            steps.append({"tool_calls": [{"name": "execute_bash", "arguments": args}]})
    return [*steps, finish()]


@pytest.mark.timeout(600)
def test_rewind_a_docker_session(sandbox_image: str, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with ScriptedLLMServer(script()) as server:
        env = cli_env(
            tmp_path,
            server.base_url,
            RUNTIME="docker",
            WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE=BASE_IMAGE,
        )
        proc = run_cli(["--headless", "--json", "-t", "change things"], env, workspace, 300)
    assert proc.returncode == 0, proc.stderr
    log = json_lines(proc.stdout)[-1]["log"]
    listed = run_cli(["checkpoints", log, "--json"], env, workspace)
    steps = [json.loads(line)["step"] for line in listed.stdout.splitlines()]
    assert steps == [0, 1, 2, 3, 4, 5], listed.stderr
    order = [0, 1, 2, 3, 4, 5]
    random.Random(3).shuffle(order)
    for step in [*order, 0, 5]:
        done = run_cli(["rewind", log, "--to", str(step), "--yes"], env, workspace)
        assert done.returncode == 0, done.stderr
        assert tree(workspace) == expected(tmp_path / f"try-{step}-{random.random()}", step)
    (workspace / "mine.txt").write_text("mine")
    before = tree(workspace)
    assert run_cli(["rewind", log, "--to", "2", "--yes"], env, workspace).returncode == 0
    assert not (workspace / "mine.txt").exists()
    assert run_cli(["rewind", log, "--undo", "--yes"], env, workspace).returncode == 0
    assert tree(workspace) == before


@pytest.mark.timeout(300)
def test_the_agent_cannot_reach_the_store(sandbox_image: str, tmp_path: Path) -> None:
    """The store was mounted into the container and handed to the agent's uid, which planted
    symlinks there that `workbench rewind` then followed on the host. Checkpoints now run on
    the host: the container has no store to write, and a rewind touches nothing outside."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stores = tmp_path / "data" / "checkpoints"
    outside = tmp_path / "outside"
    outside.mkdir()
    tries = "; ".join(
        f"ln -s {outside} {where}/rewinds && echo PLANT''ED; "
        f"echo x > {where}/refs/heads/.rewind.tmp && echo WRO''TE"
        for where in ("/checkpoints", str(stores), f"{stores}/ws-*.git")
    )
    steps = [
        {
            "tool_calls": [
                {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
            ]
        }
        for command in ("echo 1 > a.txt", tries)
    ]
    steps.append(finish())
    with ScriptedLLMServer(steps) as server:
        env = cli_env(
            tmp_path,
            server.base_url,
            RUNTIME="docker",
            WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE=BASE_IMAGE,
        )
        argv = ["--headless", "--json", "--on-confirm", "approve", "-t", "plant"]
        proc = run_cli(argv, env, workspace, 240)
        said = json.dumps(server.requests[-1]["messages"][-1])
    assert proc.returncode == 0, proc.stderr
    assert "PLANTED" not in said and "WROTE" not in said and "No such file" in said, said
    log = json_lines(proc.stdout)[-1]["log"]
    (store,) = stores.iterdir()
    assert [p for p in store.rglob("*") if p.is_symlink()] == []
    listed = run_cli(["checkpoints", log, "--json"], env, workspace)
    assert [json.loads(line)["step"] for line in listed.stdout.splitlines()] == [0, 1, 2], listed
    done = run_cli(["rewind", log, "--to", "0", "--yes"], env, workspace)
    assert done.returncode == 0, done.stderr
    assert not (workspace / "a.txt").exists()
    assert list(outside.iterdir()) == []
