"""The agent skills run for real on files under tmp_path; what they print is what is checked."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandbox.skills as skills
from sandbox.skills import (
    create_file,
    describe_skills,
    find_file,
    goto_line,
    open_file,
    scroll_down,
    scroll_up,
    search_dir,
    search_file,
)
from sandbox.skills.viewer import VIEWER


@pytest.fixture(autouse=True)
def fresh_viewer() -> Iterator[None]:
    VIEWER.reset()
    yield
    VIEWER.reset()


@pytest.fixture
def numbered_file(tmp_path: Path) -> Path:
    target = tmp_path / "numbers.txt"
    target.write_text("".join(f"line {i}\n" for i in range(1, 251)))
    return target


def output(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out


# ------------------------------------------------------------------ viewer


def test_open_file_shows_a_numbered_window(
    numbered_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    open_file(str(numbered_file))
    out = output(capsys)
    assert f"[File: {numbered_file} (250 lines total)]" in out
    assert "1|line 1\n" in out and "100|line 100\n" in out and "101|" not in out
    assert "(150 more lines below)" in out and "more lines above" not in out


def test_open_file_at_a_line_centres_on_it(
    numbered_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    open_file(str(numbered_file), line_number=120, context_lines=20)
    out = output(capsys)
    assert "(109 more lines above)" in out
    assert "110|line 110" in out and "120|line 120" in out and "129|line 129" in out
    assert "130|" not in out and "109|" not in out


def test_scroll_and_goto(numbered_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    open_file(str(numbered_file), context_lines=100)
    output(capsys)
    scroll_down()
    out = output(capsys)
    assert "101|line 101" in out and "200|line 200" in out and "(100 more lines above)" in out
    scroll_down()
    out = output(capsys)  # the last window is kept full and says it is the end
    assert "151|line 151" in out and "250|line 250" in out and "end of the file" in out
    scroll_up()
    assert "51|line 51" in output(capsys)
    goto_line(10)
    out = output(capsys)
    assert out.splitlines()[1] == "1|line 1"
    goto_line(999)
    assert "ERROR: line_number must be within [1, 250]" in output(capsys)


def test_viewer_without_an_open_file(capsys: pytest.CaptureFixture[str]) -> None:
    for call in (scroll_down, scroll_up, lambda: goto_line(3), lambda: search_file("x")):
        call()
        assert "ERROR: no file is open" in output(capsys)


def test_open_file_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    open_file(str(tmp_path / "missing.py"))
    assert f"ERROR: {tmp_path / 'missing.py'} does not exist" in output(capsys)
    open_file(str(tmp_path))
    assert "is a directory" in output(capsys)
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\x01\x02binary")
    open_file(str(blob))
    assert "binary" in output(capsys)
    small = tmp_path / "small.txt"
    small.write_text("a\nb\n")
    open_file(str(small), line_number=5)
    assert "ERROR: line_number must be within [1, 2]" in output(capsys)
    open_file(str(small), context_lines=0)
    assert "context_lines" in output(capsys)


def test_open_file_resolves_relative_paths_and_cuts_long_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "wide.txt").write_text("x" * 5000 + "\n\tindented\n")
    open_file("wide.txt")
    out = output(capsys)
    assert f"[File: {tmp_path / 'wide.txt'} (2 lines total)]" in out
    assert "[4000 more characters]" in out and "2|\tindented" in out


def test_create_file_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "pkg" / "mod.py"
    create_file(str(target), "x = 1\n")
    out = output(capsys)
    assert target.read_text() == "x = 1\n" and "1|x = 1" in out
    create_file(str(target), "y = 2\n")
    assert "already exists" in output(capsys)
    assert target.read_text() == "x = 1\n"


# ------------------------------------------------------------------ search


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "core.py").write_text("def handler():\n    return TODO\n")
    (tmp_path / "src" / "app.py").write_text("import pkg\n# TODO: wire handler\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "secret.py").write_text("TODO hidden\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "dep.js").write_text("// TODO dep\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\x00\x00TODO")
    return tmp_path


def test_search_dir_finds_lines_and_skips_hidden_and_binary(
    tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    search_dir("TODO", str(tree))
    out = output(capsys)
    assert '[Found 2 matches for "TODO" in 2 files' in out
    assert f"{tree / 'src' / 'app.py'} (Line 2): # TODO: wire handler" in out
    assert f"{tree / 'src' / 'pkg' / 'core.py'} (Line 2): return TODO" in out
    assert "secret" not in out and "dep.js" not in out and "image.png" not in out
    search_dir("nothing like this", str(tree))
    assert "No matches found" in output(capsys)
    search_dir("TODO", str(tree / "nope"))
    assert "is not a directory" in output(capsys)


def test_search_dir_defaults_to_the_current_directory(
    tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tree / "src")
    search_dir("handler")
    out = output(capsys)
    assert "Found 2 matches" in out and str(tree / "src" / "app.py") in out


def test_search_output_is_capped_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "many.txt"
    target.write_text("needle\n" * 130)
    search_dir("needle", str(tmp_path))
    out = output(capsys)
    assert out.count("(Line ") == 100 and "[30 more matches not shown" in out
    search_file("needle", str(target))
    out = output(capsys)
    assert out.count("Line ") == 100 and "[30 more matches not shown" in out


def test_search_file_uses_the_open_file(
    numbered_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    open_file(str(numbered_file))
    output(capsys)
    search_file("line 24")
    out = output(capsys)
    assert "[Found 11 matches" in out  # 24 and 240-249
    assert "Line 24: line 24\n" in out and "Line 240: line 240\n" in out
    search_file("")
    assert "search_term is empty" in output(capsys)


def test_find_file_by_name_and_pattern(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    find_file("core.py", str(tree))
    out = output(capsys)
    assert str(tree / "src" / "pkg" / "core.py") in out and "Found 1 files" in out
    find_file("*.py", str(tree))
    out = output(capsys)
    assert "Found 2 files" in out and "secret.py" not in out
    find_file("absent.txt", str(tree))
    assert "No files named" in output(capsys)
    find_file("src/app.py", str(tree))
    assert "without folders" in output(capsys)


# ------------------------------------------------------------------ documentation


def test_describe_skills_lists_every_skill_with_its_signature() -> None:
    doc = describe_skills()
    assert len(skills.__all__) >= 8
    for name in skills.__all__:
        function = getattr(skills, name)
        signature = str(inspect.signature(function, eval_str=True))
        assert f"{name}{signature}" in doc
        first_line = (inspect.getdoc(function) or "").splitlines()[0]
        assert first_line and first_line in doc
    assert "open_file(path: str, line_number: int = 1, context_lines: int = 100)" in doc
    assert "search_file(search_term: str, file_path: str | None = None)" in doc


def test_star_import_gives_exactly_the_skills() -> None:
    namespace: dict[str, object] = {}
    exec("from sandbox.skills import *", namespace)
    names = {name for name in namespace if not name.startswith("__")}
    assert names == set(skills.__all__)
