"""Protected paths on the Docker runtime: real Docker, real server, real host git.

Existing protected paths are read-only mounts of the container; those that appear during the
session are neutralised by the server after each action and by the host when the container is
gone. All attack forms run in one container (each leaves its own marker), the `.git`
replacements last, each in a container of its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docker_support import MakeRuntime, make_runtime, sandbox_image
from protected_support import ACCEPTANCE, GIT_IDENTITY, attacks, host_git_probe, make_repo

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.docker import DockerRuntime

__all__ = ["make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker

REPLACING = ("mv .git away", ".git as a gitfile", "FIFO as .git/config", ".git as a symlink")
"""Forms that replace `.git` itself: each needs a repository of its own."""


async def run(runtime: DockerRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def test_git_works_in_repositories_made_before_and_during_the_session(
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
    # A repository the agent makes: free during its first action, checked after it.
    mine = f"mkdir mine && cd mine && echo one > f && {ACCEPTANCE}"
    obs = await run(runtime, mine)
    assert obs.exit_code == 0, obs.content
    again = ACCEPTANCE.replace("-b b", "-b c").replace("-m x", "-m y")
    obs = await run(runtime, f"cd /workspace && mv .git .git-old && echo 3 > h && {again}")
    assert obs.exit_code == 0, obs.content
    obs = await run(runtime, f"echo 4 > h && {again.replace('-b c', '-b d')}")
    assert obs.exit_code == 0, obs.content


@pytest.mark.parametrize(
    "forms",
    [tuple(f for f in attacks(Path("/m")) if f not in REPLACING), *[(f,) for f in REPLACING]],
    ids=lambda f: "+".join(f),
)
async def test_git_attacks_leave_nothing_the_host_git_runs(
    forms: tuple[str, ...], make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    workspace, marks = tmp_path / "workspace", tmp_path / "marks"
    marks.mkdir()
    make_repo(workspace)
    runtime = await make_runtime(workspace=workspace, env=GIT_IDENTITY)
    every = attacks(marks)
    for form in forms:
        for command in every[form]:
            await run(runtime, command)
    during = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(during)
    await runtime.close()
    after = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(after)
