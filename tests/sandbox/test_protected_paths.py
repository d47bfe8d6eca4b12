"""Protected paths on the local runtime with bubblewrap: real bash, real bwrap, real host git.

The agent attacks the workspace's `.git` in every form issue 21 lists; after the session the
person's own git runs on the host (status, log, diff, commit, checkout, with a terminal so
pagers run) and no payload may have run. Git itself must keep working in the sandbox.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from protected_support import (
    ACCEPTANCE,
    AGENT_REPO,
    GIT_IDENTITY,
    REPLACING,
    attacks,
    host_git_probe,
    make_repo,
)

from sandbox.protocol import CmdOutputObservation, CmdRunAction, FileEditAction
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")

FORMS = list(attacks(Path("/marks")))

Start = Callable[..., "AsyncIterator[LocalRuntime]"]


@pytest.fixture
async def runtimes() -> AsyncIterator[list[LocalRuntime]]:
    """Runtimes a test starts; each closed at teardown (closing twice is harmless)."""
    started: list[LocalRuntime] = []
    yield started
    for runtime in started:
        await runtime.close()


async def start(runtimes: list[LocalRuntime], workspace: Path, **options: object) -> LocalRuntime:
    runtime = LocalRuntime(
        workspace,
        isolation="bwrap",
        disable=["browser", "jupyter"],
        env=GIT_IDENTITY,
        **options,  # type: ignore[arg-type]
    )
    runtimes.append(runtime)
    await runtime.start()
    return runtime


async def run(runtime: LocalRuntime, command: str) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def test_git_works_in_a_repository_made_before_the_session(
    tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    workspace = tmp_path / "ws"
    make_repo(workspace)
    runtime = await start(runtimes, workspace)
    obs = await run(runtime, f"echo two > g.txt && {ACCEPTANCE}")
    assert obs.exit_code == 0, obs.content
    assert "Reinitialized existing Git repository" in obs.content
    obs = await run(runtime, "git branch --show-current && git log --oneline | wc -l")
    assert obs.content.split() == ["b", "2"], obs.content


async def test_git_works_in_a_repository_the_agent_makes(
    tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "f.txt").write_text("one\n")
    runtime = await start(runtimes, workspace)
    first = await run(runtime, ACCEPTANCE)
    assert first.exit_code == 0, first.content
    # Its config is locked after that action: the same line works again all the same.
    again = ACCEPTANCE.replace("-b b", "-b c").replace("-m x", "-m y")
    second = await run(runtime, f"echo two > g.txt && {again}")
    assert second.exit_code == 0, second.content
    refused = await run(runtime, "git config core.fsmonitor true")
    assert refused.exit_code != 0
    assert refused.note and ".git/config is protected" in refused.note


@pytest.mark.parametrize("form", FORMS)
async def test_a_git_attack_leaves_nothing_the_host_git_runs(
    form: str, tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    workspace, marks = tmp_path / "ws", tmp_path / "marks"
    marks.mkdir()
    make_repo(workspace)
    if form in REPLACING:  # the person's .git is pinned: attack one the agent made
        shutil.rmtree(workspace / ".git")
    runtime = await start(runtimes, workspace)
    if form in REPLACING:
        assert (await run(runtime, AGENT_REPO)).exit_code == 0
    for command in attacks(marks)[form]:
        await run(runtime, command)
    # While the session still runs (the after-action check), and after it (the host's check).
    during = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(during)
    await runtime.close()
    after = host_git_probe(workspace)
    assert sorted(p.name for p in marks.iterdir()) == [], "\n".join(after)


async def test_a_background_writer_after_the_check_is_refused(
    tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    """A process the agent leaves running keeps trying after every check: the lock holds."""
    workspace, marks = tmp_path / "ws", tmp_path / "marks"
    marks.mkdir()
    make_repo(workspace)
    shutil.rmtree(workspace / ".git")
    runtime = await start(runtimes, workspace)
    # The agent's own new repository: its config is unprotected until the action ends.
    assert (await run(runtime, AGENT_REPO)).exit_code == 0
    loop = (
        "for i in $(seq 400); do git config core.fsmonitor 'touch {m}' 2>/dev/null "
        "&& echo ok >> bg.log || echo refused >> bg.log; sleep 0.05; done"
    ).format(m=marks / "bg")
    await run(runtime, f"( {loop} ) >/dev/null 2>&1 &")
    log = workspace / "bg.log"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(_lines(log)) < 5:
        await run(runtime, "true")
    assert "ok" not in _lines(log), _lines(log)
    await runtime.close()
    host_git_probe(workspace)
    assert list(marks.iterdir()) == []


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


async def test_the_persons_git_folder_cannot_be_moved_away(
    tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    workspace = tmp_path / "ws"
    make_repo(workspace)
    runtime = await start(runtimes, workspace)
    obs = await run(runtime, "mv .git .git-old")
    assert obs.exit_code != 0 and obs.note and ".git is protected" in obs.note
    assert (workspace / ".git" / "HEAD").exists()


async def test_the_editor_refuses_protected_paths(
    tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    workspace = tmp_path / "ws"
    make_repo(workspace)
    runtime = await start(runtimes, workspace)
    for path, command in (
        (".git/config", "str_replace"),
        (".git/hooks/pre-commit", "create"),
        (".workbench/config.toml", "create"),
    ):
        action = FileEditAction(
            command=command,  # type: ignore[arg-type]
            path=str(workspace / path),
            file_text="x",
            old_str="[core]",
            new_str="[core]\n\tfsmonitor = x",
        )
        obs = await runtime.execute(action)
        assert "is protected in this sandbox" in getattr(obs, "content", ""), obs
    assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()


async def test_a_home_folder_keeps_its_dotfiles(
    tmp_path: Path, runtimes: list[LocalRuntime]
) -> None:
    """Told the workspace is a home folder, the runtime protects the dotfiles at its root: those
    there are read-only, new ones are moved out after the action."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# the person's\n")
    (home / "notes.txt").write_text("work\n")
    runtime = await start(runtimes, home, home_like=True)
    obs = await run(runtime, "echo 'touch /tmp/x' >> .bashrc")
    assert obs.exit_code != 0
    obs = await run(runtime, "echo 'touch /tmp/x' > .profile && echo more >> notes.txt")
    assert obs.note and ".profile" in obs.note
    await runtime.close()
    assert (home / ".bashrc").read_text() == "# the person's\n"
    assert not (home / ".profile").exists()
    assert (home / "notes.txt").read_text() == "work\nmore\n"
