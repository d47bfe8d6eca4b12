"""A checkpoint stages only what one look finds changed: these are the changes it must not miss.

Each test makes a change the quick path could overlook (an edit that keeps the file's size and
mtime, a second write in the same instant, a process writing between two checkpoints, a file
turned into a folder or a symlink, a name git would quote) and checks that the checkpoint
records it: in its listing, and in its tree (a restore brings back each side).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from waiting import wait_until

from sandbox.checkpoints import CheckpointStore


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def cp(tmp_path: Path, ws: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "store.git", ws)


def tree(cp: CheckpointStore, commit: str) -> dict[str, bytes]:
    """Each file of `commit` and what it holds, read from the store."""
    names = cp._git("ls-tree", "-r", "-z", "--name-only", commit).decode().split("\0")
    return {n: cp._git("cat-file", "blob", f"{commit}:{n}") for n in names if n}


def test_an_edit_that_keeps_size_and_mtime_is_recorded(cp: CheckpointStore, ws: Path) -> None:
    """`cp -p`, `touch -r` or an editor restoring the mtime: git's stat check compares ctime
    (and inode) too, so the same size and mtime do not hide the new content."""
    (ws / "a.txt").write_bytes(b"first version\n")
    (ws / "other").write_text("o")
    cp.checkpoint("0")
    second = os.stat(ws / "a.txt").st_mtime_ns // 10**9
    probe = ws.parent / "clock-probe"

    def stamped_a_second_later() -> bool:
        probe.write_bytes(b"")  # the file system's own clock, which may lag time.time()
        return os.stat(probe).st_mtime_ns // 10**9 > second

    wait_until(stamped_a_second_later, 30, "the file system's clock in the second after a.txt's")
    (ws / "other").write_text("p")
    cp.checkpoint("index rewritten a second after a.txt: its entry no longer racy")
    before = os.stat(ws / "a.txt")
    (ws / "a.txt").write_bytes(b"other version\n")  # same size
    os.utime(ws / "a.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    after = cp.checkpoint("1")
    assert after.changes.changed == ("a.txt",)
    assert tree(cp, after.commit)["a.txt"] == b"other version\n"


def test_a_touch_alone_is_no_change_and_no_new_checkpoint(cp: CheckpointStore, ws: Path) -> None:
    """A file whose stat changed and content did not (`touch`, `sed -i` matching nothing) is
    no change: no new commit, nothing listed."""
    (ws / "a.txt").write_text("same\n")
    first = cp.checkpoint("0")
    os.utime(ws / "a.txt", (time.time() + 5, time.time() + 5))
    (ws / "b.txt").write_text("same\n")
    (ws / "b.txt").unlink()
    again = cp.checkpoint("1")
    assert again.commit == first.commit and again.changes.empty


def test_writes_in_the_same_instant_as_the_checkpoint_are_all_recorded(
    cp: CheckpointStore, ws: Path
) -> None:
    """Racy git: a file rewritten (same size, same mtime) right after a checkpoint wrote its
    index is compared by content at the next one."""
    (ws / "r.txt").write_bytes(b"0000")
    for step in range(1, 6):
        content = f"{step:04d}".encode()
        mtime = os.stat(ws / "r.txt").st_mtime_ns
        (ws / "r.txt").write_bytes(content)
        os.utime(ws / "r.txt", ns=(mtime, mtime))  # as if in the same clock tick
        taken = cp.checkpoint(str(step))
        assert tree(cp, taken.commit)["r.txt"] == content, step


def test_a_rewrite_in_the_same_second_keeping_size_and_mtime_is_recorded(
    cp: CheckpointStore, ws: Path
) -> None:
    """git compares the change time by the second: a file staged and then written again in
    that same second, its size and mtime kept, looks unchanged to git (`git add -A` misses it
    too). The store looks again at the files it staged in that second."""
    (ws / "other").write_text("o")
    cp.checkpoint("0")
    old = 1_600_000_000
    for step in range(3):
        wait_until(lambda: time.time() % 1 <= 0.2, 30, "the first fifth of a second")
        (ws / "r.txt").write_bytes(b"AAA%d" % step)
        os.utime(ws / "r.txt", (old, old))
        staged = cp.checkpoint(f"{step} staged")
        assert tree(cp, staged.commit)["r.txt"] == b"AAA%d" % step
        (ws / "r.txt").write_bytes(b"BBB%d" % step)  # same size, same second
        os.utime(ws / "r.txt", (old, old))
        again = cp.checkpoint(f"{step} again")
        assert again.changes.changed == ("r.txt",), step
        assert tree(cp, again.commit)["r.txt"] == b"BBB%d" % step


def test_a_process_writing_behind_the_agents_back_is_seen(cp: CheckpointStore, ws: Path) -> None:
    """Nothing tells the store which files a step touched: a process left running by an earlier
    step writes, deletes and creates between checkpoints, and each checkpoint sees it."""
    (ws / "keep").mkdir()
    (ws / "keep" / "log.txt").write_text("start\n")
    (ws / "gone.txt").write_text("x")
    cp.checkpoint("0")
    script = (
        "import pathlib, sys; w = pathlib.Path(sys.argv[1]);"
        "(w / 'keep' / 'log.txt').write_text('start\\nmore\\n');"
        "(w / 'gone.txt').unlink();"
        "(w / 'keep' / 'new.txt').write_text('new')"
    )
    subprocess.run([sys.executable, "-c", script, str(ws)], check=True)
    taken = cp.checkpoint("1")
    assert taken.changes.changed == ("keep/log.txt",)
    assert taken.changes.deleted == ("gone.txt",)
    assert taken.changes.added == ("keep/new.txt",)
    assert tree(cp, taken.commit) == {"keep/log.txt": b"start\nmore\n", "keep/new.txt": b"new"}


def test_files_turned_into_folders_symlinks_and_back(
    tmp_path: Path, cp: CheckpointStore, ws: Path
) -> None:
    """A file that becomes a folder or a symlink, and a folder that becomes a file: each side
    recorded, and each restored."""
    (ws / "f").write_text("a file")
    (ws / "s").write_text("becomes a symlink")
    (ws / "d").mkdir()
    (ws / "d" / "inner").write_text("in d")
    first = cp.checkpoint("0")
    (ws / "f").unlink()
    (ws / "f").mkdir()
    (ws / "f" / "in").write_text("now a folder")
    (ws / "s").unlink()
    (ws / "s").symlink_to("f/in")
    (ws / "d" / "inner").unlink()
    (ws / "d").rmdir()
    (ws / "d").write_text("now a file")
    second = cp.checkpoint("1")
    assert set(second.changes.added) == {"f/in", "d"}
    assert set(second.changes.deleted) == {"f", "d/inner"}
    assert second.changes.changed == ("s",)
    assert tree(cp, second.commit) == {"f/in": b"now a folder", "s": b"f/in", "d": b"now a file"}
    cp.restore(first.commit)
    assert (ws / "f").read_text() == "a file" and not (ws / "s").is_symlink()
    assert (ws / "d" / "inner").read_text() == "in d"
    cp.checkpoint("present")
    cp.restore(second.commit)
    assert os.readlink(ws / "s") == "f/in" and (ws / "d").read_text() == "now a file"


def test_odd_names_are_staged_by_name(cp: CheckpointStore, ws: Path) -> None:
    """Names git would quote (a newline, a tab, quotes, bytes that are not UTF-8) and names
    that look like options go through NUL-separated: each recorded as itself."""
    odd = ["new\nline", "tab\there", '"quoted"', "-rf", "--all", "sp ace"]
    raw = os.fsdecode(b"latin-\xe9")
    for name in [*odd, raw]:
        (ws / name).write_text("v1")
    (ws / "sub").mkdir()
    cp.checkpoint("0")
    for name in [*odd, raw]:
        (ws / name).write_text("v2!")
    (ws / "sub" / "new\nfile").write_text("n")
    taken = cp.checkpoint("1")
    assert set(taken.changes.changed) == {*odd, raw}
    assert taken.changes.added == ("sub/new\nfile",)
    names = cp._git("ls-tree", "-r", "-z", "--name-only", taken.commit)
    assert set(names.split(b"\0")) - {b""} == {
        *(n.encode() for n in odd),
        b"latin-\xe9",
        b"sub/new\nfile",
    }


def test_the_apps_folder_and_gits_own_stay_out(cp: CheckpointStore, ws: Path) -> None:
    """Writes under `.workbench/` and a workspace's own `.git/` are never a step's change."""
    subprocess.run(["git", "init", "-q", str(ws)], check=True, capture_output=True)
    (ws / ".workbench").mkdir()
    (ws / "a").write_text("a")
    first = cp.checkpoint("0")
    (ws / ".workbench" / "rules.toml").write_text("x = 1\n")
    (ws / ".git" / "planted").write_text("p")
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
    again = cp.checkpoint("1")
    assert again.commit == first.commit and again.changes.empty
    assert set(tree(cp, first.commit)) == {"a"}


def test_a_file_back_under_the_size_limit_is_recorded_at_once(tmp_path: Path, ws: Path) -> None:
    """A file over the limit is left out; once it shrinks, the next checkpoint records it
    (an earlier version waited a step more, its excludes still naming it)."""
    cp = CheckpointStore(tmp_path / "store.git", ws, max_file_bytes=100)
    (ws / "big").write_bytes(b"x" * 500)
    (ws / "small").write_text("s")
    first = cp.checkpoint("0")
    assert first.skipped == ("big",)
    (ws / "big").write_bytes(b"now small")
    taken = cp.checkpoint("1")
    assert taken.skipped == () and taken.changes.added == ("big",)
    assert tree(cp, taken.commit)["big"] == b"now small"


def test_an_index_whose_shared_part_is_gone_is_made_again(cp: CheckpointStore, ws: Path) -> None:
    """Each index is split (a step writes only what changed); should its shared part go (git
    removes one unused for two weeks), the next checkpoint rebuilds the index from the last
    checkpoint and still names exactly what changed."""
    for n in range(5):
        (ws / f"f{n}").write_text(str(n))
    cp.checkpoint("0")
    (ws / "f1").write_text("changed")
    cp.checkpoint("1")
    shared = list(cp.path.glob("sharedindex.*"))
    assert shared, "the index is split"
    for path in shared:
        path.unlink()
    (ws / "f2").write_text("changed too")
    (ws / "f0").unlink()
    taken = cp.checkpoint("2")
    assert taken.changes.changed == ("f2",) and taken.changes.deleted == ("f0",)
    assert tree(cp, taken.commit) == {
        "f1": b"changed",
        "f2": b"changed too",
        "f3": b"3",
        "f4": b"4",
    }
    assert cp.checkpoint("3").commit == taken.commit
