"""The checkpoint store on its own: what it covers, what it leaves alone, what it refuses."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from sandbox.checkpoints import ATTRIBUTES, STORE_CONFIG, CheckpointError, CheckpointStore


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def store(tmp_path: Path, ws: Path, **options: object) -> CheckpointStore:
    return CheckpointStore(tmp_path / "store.git", ws, **options)  # type: ignore[arg-type]


def test_an_unchanged_workspace_makes_no_new_checkpoint(tmp_path: Path, ws: Path) -> None:
    checkpoints = store(tmp_path, ws)
    (ws / "a").write_text("a")
    first = checkpoints.checkpoint("1")
    again = checkpoints.checkpoint("2")
    assert again.commit == first.commit and again.changes.empty
    (ws / "a").chmod(0o755)  # a mode change is a change
    assert checkpoints.checkpoint("3").changes.changed == ("a",)


def test_big_files_and_ignored_folders_are_left_out_and_never_touched(
    tmp_path: Path, ws: Path
) -> None:
    checkpoints = store(tmp_path, ws, max_file_bytes=1000)
    (ws / "small").write_text("s")
    start = checkpoints.checkpoint("0").commit
    (ws / "big.bin").write_bytes(os.urandom(5000))
    (ws / "node_modules" / "x").mkdir(parents=True)
    (ws / "node_modules" / "x" / "i.js").write_text("js")
    grown = checkpoints.checkpoint("1")
    assert grown.skipped == ("big.bin",) and grown.changes.empty
    (ws / "other").write_text("o")
    checkpoints.checkpoint("1b")
    checkpoints.restore(start)
    assert (ws / "big.bin").stat().st_size == 5000  # not covered: left as it is
    assert (ws / "node_modules" / "x" / "i.js").read_text() == "js"
    assert not (ws / "other").exists()
    # A file that grew past the limit is no longer covered, and a restore that would
    # overwrite it refuses, changing nothing.
    grown_big = os.urandom(3000)
    (ws / "small").write_bytes(grown_big)
    (ws / "other").write_text("o")
    assert checkpoints.checkpoint("2").skipped == ("big.bin", "small")
    with pytest.raises(CheckpointError, match="do not cover: small; nothing was changed"):
        checkpoints.restore(start)
    assert (ws / "small").read_bytes() == grown_big and (ws / "other").exists()
    (ws / "small").write_text("s")  # shrank: covered again
    assert "small" not in checkpoints.checkpoint("3").skipped


def test_nested_empty_folders_come_back_and_go(tmp_path: Path, ws: Path) -> None:
    checkpoints = store(tmp_path, ws)
    (ws / "a" / "b" / "c").mkdir(parents=True)
    (ws / "d").mkdir()
    with_dirs = checkpoints.checkpoint("1").commit
    for name in ("a/b/c", "a/b", "a", "d"):
        (ws / name).rmdir()
    (ws / "f").write_text("f")
    checkpoints.checkpoint("2")
    checkpoints.restore(with_dirs)
    assert (ws / "a" / "b" / "c").is_dir() and (ws / "d").is_dir()
    assert not (ws / "f").exists()


def test_restoring_needs_a_checkpoint_of_the_present(tmp_path: Path, ws: Path) -> None:
    with pytest.raises(CheckpointError, match="take one first"):
        store(tmp_path, ws).restore("0" * 40)


def test_a_missing_workspace_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        store(tmp_path, tmp_path / "nowhere").checkpoint("0")


def test_two_sandboxes_share_a_store_without_sharing_an_index(tmp_path: Path, ws: Path) -> None:
    one = store(tmp_path, ws, key="one")
    two = store(tmp_path, ws, key="two")
    (ws / "a").write_text("a")
    first = one.checkpoint("1")
    assert two.checkpoint("1").commit != ""  # its own branch and index
    (ws / "a").write_text("b")
    assert one.checkpoint("2").changes.changed == ("a",)
    assert one.changes(first.commit, one.head() or "").changed == ("a",)
    one.forget()
    assert not one.index_file.exists() and two.index_file.exists()


async def test_the_agent_cannot_change_the_store(tmp_path: Path, ws: Path) -> None:
    """The store is read-only to the agent's processes and, private (0700) to the app's uid, not
    even readable when the agent runs as its own uid; checkpoints and restores still work."""
    from sandbox.protocol import (
        CheckpointAction,
        CheckpointObservation,
        CmdOutputObservation,
        CmdRunAction,
        RestoreAction,
    )
    from sandbox.runtimes.bwrap import bwrap_available
    from sandbox.runtimes.local import LocalRuntime

    if bwrap_available() is not None:
        pytest.skip("bubblewrap does not work here")
    store_path = tmp_path / "store.git"
    runtime = LocalRuntime(ws, disable=["browser", "jupyter"], checkpoints=store_path)
    await runtime.start()
    try:
        (ws / "a").write_text("a")
        first = await runtime.execute(CheckpointAction(label="1"))
        assert isinstance(first, CheckpointObservation) and first.added == ["a"]
        shell = await runtime.execute(
            CmdRunAction(
                command=f"ls {store_path} >/dev/null && echo read=$?; "
                f"echo x > {store_path}/HEAD; echo write=$?; rm -rf {store_path}/objects; "
                "echo rm=$?; echo b > a"
            )
        )
        assert isinstance(shell, CmdOutputObservation)
        assert "write=1" in shell.content and "rm=0" not in shell.content, shell.content
        if runtime.own_uid:  # another uid: the private store is not even readable
            assert "read=0" not in shell.content, shell.content
        second = await runtime.execute(CheckpointAction(label="2"))
        assert isinstance(second, CheckpointObservation) and second.changed == ["a"]
        back = await runtime.execute(RestoreAction(commit=first.commit))
        assert isinstance(back, CheckpointObservation) and back.changed == ["a"]
        assert (ws / "a").read_text() == "a"
    finally:
        await runtime.close()


def test_ignored_files_in_a_new_folder_are_left_out(tmp_path: Path, ws: Path) -> None:
    checkpoints = store(tmp_path, ws)
    checkpoints.checkpoint("0")
    (ws / "pkg" / "__pycache__").mkdir(parents=True)
    (ws / "pkg" / "m.py").write_text("x")
    (ws / "pkg" / "m.pyc").write_bytes(b"\0")
    (ws / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0")
    (ws / "top.py").write_text("y")
    (ws / "top.pyc").write_bytes(b"\0")
    step = checkpoints.checkpoint("1")
    assert step.changes.added == ("pkg/m.py", "top.py")
    assert checkpoints.changes(None, step.commit).added == ("pkg/m.py", "top.py")


def test_a_store_whose_config_was_changed_runs_none_of_its_commands(
    tmp_path: Path, ws: Path
) -> None:
    """The agent once reached the store's config (through the editor and a symlink) and set
    core.fsmonitor: git then ran its command in the sandbox server and at `workbench rewind`
    on the host. Whatever the config says now, git runs nothing and the config is put back."""
    store = CheckpointStore(tmp_path / "store.git", ws)
    first = store.checkpoint("step 0")
    marker = tmp_path / "ran"
    hook = f"echo ran >> {marker}; false"
    included = tmp_path / "included.cfg"
    included.write_text(f'[core]\n\tfsmonitor = "{hook}"\n')
    config = store.path / "config"
    config.write_text(
        f'[core]\n\tfsmonitor = "{hook}"\n\tbare = false\n[include]\n\tpath = {included}\n'
        f'[filter "x"]\n\tclean = "{hook}"\n[diff "x"]\n\ttextconv = "{hook}"\n'
    )
    (store.path / "info" / "attributes").write_text("* filter=x diff=x\n")
    (ws / "a.txt").write_text("changed\n")
    second = store.checkpoint("step 1")
    store.diff(first.commit, second.commit)
    store.restore(first.commit)
    assert not marker.exists()
    assert config.read_bytes() == STORE_CONFIG
    assert (store.path / "info" / "attributes").read_bytes() == ATTRIBUTES
    # A fresh store object (the host's `workbench rewind`) puts it back too.
    config.write_text(f'[core]\n\tfsmonitor = "{hook}"\n')
    CheckpointStore(tmp_path / "store.git", ws, key="rewind").checkpoint("present")
    assert not marker.exists()


def test_a_folder_replaced_by_a_symlink_is_checkpointed_and_rewound(
    tmp_path: Path, ws: Path
) -> None:
    """`rm -r d && ln -s OUTSIDE d` once turned checkpoints off ("beyond a symbolic link"),
    and a rewind then refused, naming the outside file as one to move away."""
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "passwd").write_text("the person's own file\n")
    cp = store(tmp_path, ws)
    (ws / "d").mkdir()
    (ws / "d" / "passwd").write_text("made by the agent\n")
    before = cp.checkpoint("step 1")
    (ws / "d" / "passwd").unlink()
    (ws / "d").rmdir()
    (ws / "d").symlink_to(outside)
    after = cp.checkpoint("step 2")
    assert after.changes.added == ("d",) and after.changes.deleted == ("d/passwd",)
    cp.restore(before.commit)
    assert (
        not (ws / "d").is_symlink() and (ws / "d" / "passwd").read_text() == "made by the agent\n"
    )
    assert (outside / "passwd").read_text() == "the person's own file\n"
    cp.checkpoint("present")
    cp.restore(after.commit)
    assert (ws / "d").is_symlink() and os.readlink(ws / "d") == str(outside)
    assert (outside / "passwd").read_text() == "the person's own file\n"


def test_a_staged_file_is_read_again_never_through_a_symlink(tmp_path: Path, ws: Path) -> None:
    """git stages a file by lstat, then open (which follows a symlink): an agent swapping a file
    for a symlink in a loop can have a checkpoint taken on the host store the link's target.
    Such checkpoints (`reread`) read each staged file again beneath the workspace, never
    through a symlink: what git stored for a file is checked against that (here the index
    names the target's bytes, as a won race leaves it), and a name reached through a symlink
    is no file."""
    from sandbox.checkpoint_reads import blob_id, misread, read_beneath

    secret = tmp_path / "host-secret"
    secret.write_bytes(b"the host's secret\n")
    (ws / "x.txt").write_bytes(b"the agent's file\n")
    (ws / "link.txt").symlink_to(secret)
    (ws / "sub").symlink_to(tmp_path)
    (ws / "real").mkdir()
    (ws / "real" / "ok.txt").write_bytes(b"fine\n")
    stolen = blob_id(secret.read_bytes())
    index = "".join(
        f"100644 {sha} 0\t{name}\0"
        for sha, name in (
            (stolen, "x.txt"),
            (stolen, "link.txt"),
            (stolen, "sub/host-secret"),
            (blob_id(b"fine\n"), "real/ok.txt"),
        )
    ).encode()
    differ, gone = misread(ws, index, None)
    assert differ == [("100644", "x.txt", b"the agent's file\n")]
    assert sorted(gone) == ["link.txt", "sub/host-secret"]
    assert read_beneath(ws, "sub/host-secret") is None and read_beneath(ws, "link.txt") is None
    assert misread(ws, index, {"real/"}) == ([], [])  # only what was staged is looked at
    store = CheckpointStore(tmp_path / "store.git", ws, reread=True)
    commit = store.checkpoint("0").commit
    assert store.changes(None, commit).added == ("link.txt", "real/ok.txt", "sub", "x.txt")


def test_a_repository_without_a_commit_is_left_out_not_fatal(tmp_path: Path, ws: Path) -> None:
    """`git init sub` (as `cargo new` does) made `git add` refuse the whole checkpoint, which
    turned checkpoints off for the session: the folder is left out and the rest recorded."""
    import subprocess

    checkpoints = store(tmp_path, ws)
    (ws / "a").write_text("a")
    checkpoints.checkpoint("0")
    subprocess.run(["git", "init", "-q", str(ws / "sub")], check=True)
    (ws / "sub" / "f").write_text("x")
    (ws / "b").write_text("b")
    first = checkpoints.checkpoint("1")
    assert "b" in first.changes.added
    (ws / "b").write_text("changed")
    second = checkpoints.checkpoint("2")
    assert second.changes.changed == ("b",)
    # From a fresh start too (the first checkpoint adds everything at once).
    fresh = CheckpointStore(tmp_path / "other.git", ws)
    assert "a" in fresh.checkpoint("0").changes.added


def _git(path: Path, ws: Path, index: Path, *args: str, data: bytes | None = None) -> str:
    """git on the store, as an earlier version of workbench left it (its own index)."""
    env = {**os.environ, "GIT_DIR": str(path), "GIT_WORK_TREE": str(ws)}
    env["GIT_INDEX_FILE"] = str(index)
    done = subprocess.run(["git", *args], env=env, input=data, capture_output=True, check=True)
    return done.stdout.decode().strip()


def test_the_apps_folder_in_an_earlier_stores_checkpoints_is_never_restored(
    tmp_path: Path, ws: Path
) -> None:
    """Checkpoints taken before `.workbench/` was left out hold the person's rules of then: a
    restore to one neither brings them back nor deletes today's, and an index that still
    tracks the folder stops doing so."""
    checkpoints = store(tmp_path, ws)
    (ws / "a.txt").write_text("a")
    (ws / ".workbench").mkdir()
    (ws / ".workbench" / "config.toml").write_text("[security]\nallow = ['run:echo *']\n")
    first = checkpoints.checkpoint("0")
    assert first.changes.added == ("a.txt",)  # the app's folder is not the agent's change
    # An earlier version's checkpoint: the same files plus the rules of then, in the tree,
    # and in this key's index.
    path, index = checkpoints.path, checkpoints.index_file
    old = b"[security]\nallow = ['run:rm *']\n"
    blob = _git(path, ws, index, "hash-object", "-w", "--stdin", data=old)
    sub = _git(path, ws, index, "mktree", data=f"100644 blob {blob}\tconfig.toml\n".encode())
    entries = _git(path, ws, index, "ls-tree", first.commit) + f"\n040000 tree {sub}\t.workbench\n"
    root = _git(path, ws, index, "mktree", data=entries.encode())
    earlier = _git(path, ws, index, "commit-tree", root, "-p", first.commit, "-m", "old")
    _git(path, ws, index, "update-index", "--add", "--cacheinfo", f"100644,{blob},.workbench/x")
    mine = "[security]\nallow = []\n"
    (ws / ".workbench" / "config.toml").write_text(mine)
    (ws / "b.txt").write_text("b")
    again = store(tmp_path, ws)  # a new session on the same store
    present = again.checkpoint("1")
    assert present.changes.added == ("b.txt",)
    assert again.changes(first.commit, earlier).empty
    assert ".workbench" not in again.diff(first.commit, earlier)
    assert again.restore(earlier).deleted == ("b.txt",)
    assert (ws / ".workbench" / "config.toml").read_text() == mine
    assert not (ws / ".workbench" / "x").exists()
    again.checkpoint("2")
    assert again.restore(present.commit).added == ("b.txt",)
    assert (ws / ".workbench" / "config.toml").read_text() == mine
    tracked = _git(path, ws, again.index_file, "ls-files")
    assert tracked.split() == ["a.txt", "b.txt"]
