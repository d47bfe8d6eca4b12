"""A checkpoint store someone planted symlinks in: `workbench rewind`, `checkpoints` and
`diff` refuse, say so, and change nothing outside it; and the store is private.

On the Docker runtime the store was once mounted into the container and handed to the agent's
uid: the agent planted `refs/heads/.rewind.tmp` and `rewinds` as symlinks, and the next
`workbench rewind` on the host wrote a commit id into a host file and a record into a host
folder of the agent's choosing. The store is now out of the agent's reach, and a store that
was tampered with anyway (made here directly) is refused before anything reads or writes it.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sandbox.checkpoints import CheckpointStore
from sandbox.protocol import CmdRunAction
from workbench.checkpoints.store import checkpoint_store_of
from workbench.cli.checkpoint_common import STORE_FAILED
from workbench.cli.checkpoints import run
from workbench.events import ActionEvent, CheckpointEvent
from workbench.session.log import SessionLog, make_header, new_session_id


def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, str]:
    """A workspace with two checkpoints (step 0, step 1) and a log naming them."""
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(tmp_path / "cfg"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "secret.env").write_text("TOKEN=hunter2\n")
    (workspace / "secret.env").chmod(0o600)
    store = CheckpointStore(checkpoint_store_of(workspace), workspace, key="session")
    first = store.checkpoint("0")
    (workspace / "a.txt").write_text("made by the agent\n")
    second = store.checkpoint("1")
    session_id = new_session_id()
    header = make_header(session_id, workspace, "scripted")
    with SessionLog.create(tmp_path / "data" / "sessions", header) as log:
        log.append(CheckpointEvent(id=1, step=0, commit=first.commit))
        write = CmdRunAction(command="echo 'made by the agent' > a.txt")
        log.append(ActionEvent(id=2, tool_name="execute_bash", tool_call_id="c1", action=write))
        log.append(CheckpointEvent(id=3, step=1, commit=second.commit, added=["a.txt"]))
    return workspace, log.path, session_id


def snapshot(folder: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root, name)
            found[str(path.relative_to(folder))] = (
                os.readlink(path)
                if path.is_symlink()
                else b""
                if path.is_dir()
                else path.read_bytes()
            )
    return found


def link(target: str, to_file: bool) -> Callable[[Path, Path], None]:
    def plant(store: Path, outside: Path) -> None:
        where = store / target
        where.parent.mkdir(parents=True, exist_ok=True)
        if where.is_dir():
            where.rename(where.with_name(where.name + ".old"))
        elif where.exists():
            where.unlink()
        where.symlink_to(outside / "victim.txt" if to_file else outside)

    return plant


def fifo(store: Path, outside: Path) -> None:
    os.mkfifo(store / "refs" / "heads" / "planted")


PLANTS = {
    "refs/heads/.rewind.tmp": link("refs/heads/.rewind.tmp", to_file=True),
    "rewinds": link("rewinds", to_file=False),
    "refs/heads": link("refs/heads", to_file=False),
    "objects/info": link("objects/info", to_file=False),
    "config": link("config", to_file=True),
    "info/exclude": link("info/exclude", to_file=True),
    "a fifo": fifo,
}


@pytest.mark.parametrize("plant", list(PLANTS))
@pytest.mark.parametrize("command", ["rewind", "checkpoints", "diff", "undo"])
def test_a_tampered_store_is_refused_and_nothing_outside_changes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    plant: str,
    command: str,
) -> None:
    workspace, log, _ = session(tmp_path, monkeypatch)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("the person's file\n")
    store = checkpoint_store_of(workspace)
    PLANTS[plant](store, outside)
    before_outside, before_ws = snapshot(outside), snapshot(workspace)
    argv = {
        "rewind": ["rewind", str(log), "--to", "0", "--yes"],
        "undo": ["rewind", str(log), "--undo", "--yes"],
        "checkpoints": ["checkpoints", str(log)],
        "diff": ["diff", str(log), "--step", "1"],
    }[command]
    code = run(argv[0], argv[1:])
    out, err = capsys.readouterr()
    assert code == STORE_FAILED, (out, err)
    assert "was tampered with" in err and "Nothing was read or changed" in err, err
    assert snapshot(outside) == before_outside
    assert snapshot(workspace) == before_ws


def test_an_untouched_store_still_rewinds_and_undoes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, log, _ = session(tmp_path, monkeypatch)
    assert run("rewind", [str(log), "--to", "0", "--yes"]) == 0, capsys.readouterr()
    assert not (workspace / "a.txt").exists()
    assert run("rewind", [str(log), "--undo", "--yes"]) == 0, capsys.readouterr()
    assert (workspace / "a.txt").read_text() == "made by the agent\n"


def test_the_data_dir_and_the_store_are_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 0600 `secret.env` in the workspace was readable by `nobody` from the store."""
    workspace, log, _ = session(tmp_path, monkeypatch)
    store = checkpoint_store_of(workspace)
    assert run("rewind", [str(log), "--to", "0", "--yes"]) == 0
    for folder in (tmp_path / "data", tmp_path / "data" / "checkpoints", store):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for root, dirs, files in os.walk(store):
        for name in dirs + files:
            mode = stat.S_IMODE(Path(root, name).lstat().st_mode)
            assert not mode & 0o077, (Path(root, name), oct(mode))
    if os.geteuid() == 0:  # as another uid, nothing of the store can be read
        blobs = subprocess.run(
            ["find", str(store), "-type", "f", "-readable"],
            user=65534,
            capture_output=True,
            text=True,
            check=False,
        )
        assert blobs.stdout == "", blobs.stdout


def test_a_store_made_world_readable_before_is_made_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, log, _ = session(tmp_path, monkeypatch)
    store = checkpoint_store_of(workspace)
    for root, dirs, files in os.walk(store):  # as stores were made before
        for name in dirs:
            Path(root, name).chmod(0o755)
        for name in files:
            Path(root, name).chmod(0o644)
    store.chmod(0o755)
    assert run("rewind", [str(log), "--to", "0", "--yes"]) == 0
    modes = [stat.S_IMODE(Path(r, n).lstat().st_mode) for r, d, f in os.walk(store) for n in d + f]
    assert modes and not any(mode & 0o077 for mode in modes)
