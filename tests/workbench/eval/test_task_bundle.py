"""A task folder shipped to a Ray node: packed, unpacked once per content, nothing outside."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest

from workbench.eval import task_bundle
from workbench.eval.task_bundle import pack_task, unpack_task


@pytest.fixture(autouse=True)
def _own_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "node-tmp"))
    (tmp_path / "node-tmp").mkdir()


def make_task(root: Path) -> Path:
    folder = root / "shell-sum"
    (folder / "tests").mkdir(parents=True)
    (folder / "instruction.md").write_text("Write 5 to sum.txt.\n")
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\necho 1\n")
    (folder / "tests" / "test.sh").chmod(0o755)
    (folder / "tests" / "same.sh").symlink_to("test.sh")
    return folder


def test_a_task_comes_back_whole_and_the_same_content_packs_the_same(tmp_path: Path) -> None:
    folder = make_task(tmp_path / "driver")
    digest, data = pack_task(folder)
    again = make_task(tmp_path / "elsewhere")  # other path, other times: the same bytes
    assert pack_task(again) == (digest, data)

    copy = unpack_task(digest, data, "shell-sum")
    assert copy.name == "shell-sum" and copy != folder
    assert (copy / "instruction.md").read_text() == "Write 5 to sum.txt.\n"
    assert os.access(copy / "tests" / "test.sh", os.X_OK)
    assert os.readlink(copy / "tests" / "same.sh") == "test.sh"
    assert unpack_task(digest, data, "shell-sum") == copy  # once per content
    assert [p.name for p in copy.parent.iterdir()] == ["shell-sum"]  # no staging left


def test_bytes_that_are_not_what_was_sent_or_leave_the_folder_are_refused(tmp_path: Path) -> None:
    digest, data = pack_task(make_task(tmp_path))
    with pytest.raises(ValueError, match="do not match"):
        unpack_task(digest, data + b"x", "shell-sum")

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    evil = buffer.getvalue()
    with pytest.raises(tarfile.TarError):
        unpack_task(hashlib.sha256(evil).hexdigest(), evil, "evil")
    assert not list(tmp_path.rglob("escaped.txt"))


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", size: int = 0) -> Any:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, size
    return info


@pytest.mark.parametrize(
    "members",
    [
        [(_info("/etc/evil", size=1), b"x")],  # absolute
        [(_info("a/../../evil", size=1), b"x")],  # climbs out
        [(_info("up", tarfile.SYMTYPE, "../.."), None)],  # a link out
        [(_info("abs", tarfile.SYMTYPE, "/etc"), None)],  # an absolute link
        [(_info("hard", tarfile.LNKTYPE, "/etc/passwd"), None)],  # a hard link
        [(_info("dev", tarfile.CHRTYPE), None)],  # a device
        [(_info("d", tarfile.SYMTYPE, "sub"), None), (_info("d/x", size=1), b"x")],  # via link
    ],
)
def test_members_that_would_escape_or_are_no_plain_files_are_refused(
    members: list[tuple[tarfile.TarInfo, bytes | None]],
) -> None:
    evil = _tar(*members)
    name = f"evil-{hashlib.sha256(evil).hexdigest()[:8]}"
    with pytest.raises(tarfile.TarError):
        unpack_task(hashlib.sha256(evil).hexdigest(), evil, name)


def test_a_task_too_big_to_ship_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(task_bundle, "MAX_BYTES", 10)
    with pytest.raises(ValueError, match="filesystem every node"):
        pack_task(make_task(tmp_path))


def test_a_shipped_config_is_for_its_owner_only(tmp_path: Path) -> None:
    path = task_bundle.write_config(b'[llm]\napi_key = "sk-x"\n', ".toml")
    assert path.read_bytes() == b'[llm]\napi_key = "sk-x"\n' and path.suffix == ".toml"
    assert path.stat().st_mode & 0o077 == 0 and path.parent.stat().st_mode & 0o077 == 0
    assert task_bundle.write_config(b'[llm]\napi_key = "sk-x"\n', ".toml") == path
