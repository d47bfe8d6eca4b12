"""Protected paths on the Docker runtime: real Docker, real server, real host git.

Existing protected paths are read-only mounts of the container; those that appear during the
session are neutralised by the server after each action and by the host when the container is
gone. The attack forms on the person's repository run in one container (each payload leaves
its own marker); those replacing `.git` each in a container of their own.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from docker_support import MakeRuntime, make_runtime, sandbox_image
from protected_support import (
    ACCEPTANCE,
    AGENT_REPO,
    GIT_IDENTITY,
    REPLACING,
    attacks,
    host_git_probe,
    make_repo,
)
from waiting import until

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.docker import DockerRuntime

__all__ = ["make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker


async def run(runtime: DockerRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def test_git_works_in_a_repository_made_before_the_session(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    make_repo(workspace)
    runtime = await make_runtime(workspace=workspace, env=GIT_IDENTITY)
    obs = await run(runtime, f"echo two > g.txt && {ACCEPTANCE}")
    assert obs.exit_code == 0, obs.content
    refused = await run(runtime, "git config core.fsmonitor true")
    assert refused.exit_code != 0
    assert refused.note and ".git/config is protected" in refused.note
    moved = await run(runtime, "mv .git .git-old")
    assert moved.exit_code != 0 and (workspace / ".git" / "HEAD").exists()


async def test_git_works_in_a_repository_the_agent_makes(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "f.txt").write_text("one\n")
    runtime = await make_runtime(workspace=workspace, env=GIT_IDENTITY)
    obs = await run(runtime, ACCEPTANCE)
    assert obs.exit_code == 0, obs.content
    again = ACCEPTANCE.replace("-b b", "-b c").replace("-m x", "-m y")
    obs = await run(runtime, f"echo two > g.txt && {again}")
    assert obs.exit_code == 0, obs.content


PERSONS_REPO = tuple(f for f in attacks(Path("/m")) if f not in REPLACING)


@pytest.mark.parametrize(
    ("forms", "user_id"),
    [
        pytest.param(PERSONS_REPO, None, id="persons-repo-agent-as-workspace-owner"),
        pytest.param(PERSONS_REPO, 1000, id="persons-repo-agent-uid-1000"),
        *[pytest.param((f,), 1000, id=f) for f in REPLACING],
    ],
)
async def test_git_attacks_leave_nothing_the_host_git_runs(
    forms: tuple[str, ...], user_id: int | None, make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    workspace, marks = tmp_path / "workspace", tmp_path / "marks"
    marks.mkdir()
    make_repo(workspace)
    if forms[0] in REPLACING:  # the person's .git is pinned: attack one the agent made
        shutil.rmtree(workspace / ".git")
    if user_id is not None:  # the workspace belongs to the agent's uid, as on a person's host
        for folder, _, files in os.walk(workspace):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.lchown(name, user_id, user_id)
    runtime = await make_runtime(workspace=workspace, env=GIT_IDENTITY, user_id=user_id)
    if forms[0] in REPLACING:
        assert (await run(runtime, AGENT_REPO)).exit_code == 0
    every = attacks(marks)
    for form in forms:
        for command in every[form]:
            await run(runtime, command)
    during = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(during)
    await runtime.close()
    after = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(after)


async def test_a_background_writer_is_undone_when_the_session_ends(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    """Nothing locks a path that appeared in Docker: a process the agent leaves running writes
    it again after every check, and the host's check, once the container is gone, undoes it."""
    workspace, marks = tmp_path / "workspace", tmp_path / "marks"
    marks.mkdir()
    make_repo(workspace)
    shutil.rmtree(workspace / ".git")
    runtime = await make_runtime(workspace=workspace, env=GIT_IDENTITY)
    assert (await run(runtime, AGENT_REPO)).exit_code == 0
    loop = (
        "while true; do git config core.fsmonitor 'touch {m}' && echo ok >> bg.log; "
        "sleep 0.05; done"
    ).format(m=marks / "bg")
    await run(runtime, f"( {loop} ) >/dev/null 2>&1 &")
    config = workspace / ".git" / "config"
    # the writer wins: nothing locks it in Docker (and no action meanwhile: no check undoes it)
    await until(lambda: "fsmonitor" in config.read_text(), 30, "the agent's writer to write it")
    await runtime.close()
    after = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(after)
