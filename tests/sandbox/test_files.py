"""The file editor (`str_replace_editor`) on real files: every command and every refusal."""

# ruff: noqa: RUF001  (Cyrillic and CJK samples: their look-alike letters are the point)

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox.core import Sandbox
from sandbox.executors import files_view
from sandbox.executors.files import FileEditor
from sandbox.protocol import (
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    Observation,
)


@pytest.fixture
def editor(tmp_path: Path) -> FileEditor:
    return FileEditor(tmp_path)


def run(editor: FileEditor, command: str, path: Path | str, **fields: object) -> Observation:
    return editor.execute(FileEditAction(command=command, path=str(path), **fields))


def ok(editor: FileEditor, command: str, path: Path | str, **fields: object) -> FileEditObservation:
    obs = run(editor, command, path, **fields)
    assert isinstance(obs, FileEditObservation), obs
    return obs


def refused(editor: FileEditor, command: str, path: Path | str, **fields: object) -> str:
    obs = run(editor, command, path, **fields)
    assert isinstance(obs, ErrorObservation), obs
    assert obs.error_kind == "bad_action"
    return obs.content


# ------------------------------------------------------------------ paths


def test_relative_path_is_refused_with_the_absolute_suggestion(
    editor: FileEditor, tmp_path: Path
) -> None:
    message = refused(editor, "view", "src/app.py")
    assert "not an absolute path" in message
    assert str(tmp_path / "src/app.py") in message


def test_missing_file_names_the_path_and_suggests_close_names(
    editor: FileEditor, tmp_path: Path
) -> None:
    (tmp_path / "config.py").write_text("x = 1\n")
    message = refused(editor, "view", tmp_path / "confg.py")
    assert f"{tmp_path / 'confg.py'} does not exist" in message
    assert str(tmp_path / "config.py") in message
    assert "does not exist" in refused(editor, "str_replace", tmp_path / "nope.py", old_str="a")


def test_directory_given_to_a_file_command(editor: FileEditor, tmp_path: Path) -> None:
    message = refused(editor, "str_replace", tmp_path, old_str="a", new_str="b")
    assert "is a directory" in message
    assert "is a directory" in refused(editor, "insert", tmp_path, insert_line=0, new_str="x")
    assert "is a directory" in refused(editor, "create", tmp_path, file_text="x")
    assert "view_range" in refused(editor, "view", tmp_path, view_range=[1, 2])


def test_wrong_action_kind_is_an_error_not_a_crash(editor: FileEditor) -> None:
    obs = editor.execute(CmdRunAction(command="ls"))
    assert isinstance(obs, ErrorObservation)


# ------------------------------------------------------------------ view


def test_view_numbers_lines_and_keeps_tabs(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("def f():\n\treturn 1\n\n# end\n")
    content = ok(editor, "view", target).content
    assert "     1\tdef f():\n     2\t\treturn 1\n     3\t\n     4\t# end" in content
    assert "     5" not in content


def test_view_range_and_end_of_file(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "n.txt"
    target.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    content = ok(editor, "view", target, view_range=[3, 5]).content
    assert "     3\tline 3\n     4\tline 4\n     5\tline 5" in content
    assert "line 2\n" not in content and "line 6" not in content
    tail = ok(editor, "view", target, view_range=[18, -1]).content
    assert "    18\tline 18" in tail and "    20\tline 20" in tail
    clipped = ok(editor, "view", target, view_range=[19, 40]).content
    assert "    20\tline 20" in clipped and "has only 20 lines" in clipped


@pytest.mark.parametrize(
    ("view_range", "expected"),
    [
        ([21, 25], "start must be within [1, 20]"),
        ([0, 5], "start must be 1 or more"),
        ([5, 3], "end must be -1"),
        ([1, 2, 3], "two numbers"),
    ],
)
def test_view_range_out_of_range(
    editor: FileEditor, tmp_path: Path, view_range: list[int], expected: str
) -> None:
    target = tmp_path / "n.txt"
    target.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    assert expected in refused(editor, "view", target, view_range=view_range)


def test_view_of_an_empty_file(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "empty.txt"
    target.write_text("")
    assert "is empty" in ok(editor, "view", target).content


def test_long_view_is_cut_with_a_pointer_to_the_rest(tmp_path: Path) -> None:
    editor = FileEditor(tmp_path, max_view_chars=2000)
    target = tmp_path / "long.txt"
    target.write_text("".join(f"row {i}\n" for i in range(1, 1001)))
    content = ok(editor, "view", target).content
    assert len(content) < 2500
    assert "Output cut at line" in content and "view_range" in content


def test_view_directory_two_levels_without_hidden(editor: FileEditor, tmp_path: Path) -> None:
    (tmp_path / "src" / "pkg" / "deep").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "deep" / "x.py").write_text("")
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / "README.md").write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".env").write_text("")
    (tmp_path / "src" / ".cache").mkdir()
    content = ok(editor, "view", tmp_path).content
    assert f"{tmp_path}/README.md" in content
    assert f"{tmp_path}/src/" in content
    assert f"{tmp_path}/src/main.py" in content
    assert f"{tmp_path}/src/pkg/" in content
    assert "pkg/deep" not in content
    assert ".git" not in content.split("\n\n")[0] and ".env" not in content
    assert "3 hidden files/directories" in content


def test_view_of_50_lines_of_a_20000_line_file_is_fast(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "big.py"
    target.write_text(
        "".join(f"    value_{i} = compute(argument_{i}, other)\n" for i in range(20000))
    )
    action = FileEditAction(command="view", path=str(target), view_range=[10_000, 10_049])

    def floor() -> str:  # the least a view can do without a cache: read, split, number 50 lines
        lines = target.read_text().splitlines()[9_999:10_049]
        return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, 10_000))

    # This thread's CPU time, not the clock: under load a call's wall time also holds the
    # moments it waited for the CPU, or for the GIL another thread was preempted holding, and a
    # view makes more system calls than the floor (each one a chance to lose the GIL).
    views, floors = [], []
    for _ in range(15):  # alternated, so that a busy machine slows both alike
        start = time.thread_time()
        obs = editor.execute(action)
        views.append(time.thread_time() - start)
        start = time.thread_time()
        floor()
        floors.append(time.thread_time() - start)
    assert isinstance(obs, FileEditObservation)
    assert obs.content.count("\n") == 50
    # About 1x here; 3x leaves room for noise and still catches per-line work on the whole file.
    view, least = min(views), min(floors)  # extra work per call shows in every call
    assert view <= 3 * least, f"view {view * 1000:.1f} ms vs floor {least * 1000:.1f} ms"


class _ClockAhead:
    """`time` for the view cache, seconds ahead: files look older than they are."""

    def __init__(self, ahead_s: float) -> None:
        self.ahead_s = ahead_s

    def time(self) -> float:
        return time.time() + self.ahead_s


def test_view_cache_never_serves_a_stale_file(
    editor: FileEditor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "cached.txt"
    target.write_text("alpha\nbeta\n")
    old = time.time() - 60
    os.utime(target, (old, old))
    # ctime changed with utime, and the cache keeps only files unchanged for RACY_S: the
    # cache's clock runs ahead instead of the test waiting for it.
    monkeypatch.setattr(files_view, "time", _ClockAhead(files_view.RACY_S + 1))
    assert "alpha" in ok(editor, "view", target).content
    assert "alpha" in ok(editor, "view", target).content  # served from the cache
    with open(target, "r+") as handle:  # same size, same mtime: only ctime tells
        handle.write("gamma")
    os.utime(target, (old, old))
    assert "gamma" in ok(editor, "view", target).content


# ------------------------------------------------------------------ create


def test_create_makes_parents_and_refuses_to_overwrite(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "new" / "dir" / "hello.py"
    obs = ok(editor, "create", target, file_text="print('hi')\n")
    assert target.read_text() == "print('hi')\n"
    assert obs.diff is not None and "+print('hi')" in obs.diff
    message = refused(editor, "create", target, file_text="other\n")
    assert "already exists" in message and "str_replace" in message
    assert target.read_text() == "print('hi')\n"
    assert "file_text" in refused(editor, "create", tmp_path / "x.py")


# ------------------------------------------------------------------ str_replace


def test_str_replace_one_match_shows_a_numbered_snippet_and_diff(
    editor: FileEditor, tmp_path: Path
) -> None:
    target = tmp_path / "m.py"
    target.write_text("".join(f"line {i}\n" for i in range(1, 21)))
    obs = ok(editor, "str_replace", target, old_str="line 10\n", new_str="ten\nTEN\n")
    assert target.read_text().count("\n") == 21
    assert "    10\tten\n    11\tTEN" in obs.content
    assert "     6\tline 6" in obs.content and "line 1\n" not in obs.content
    assert obs.diff is not None
    assert "@@ -7,7 +7,8 @@" in obs.diff
    assert "-line 10\n+ten\n+TEN" in obs.diff


def test_str_replace_with_absent_old_str(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("def f():\n\treturn 1\n")
    message = refused(editor, "str_replace", target, old_str="return 2", new_str="x")
    assert "did not appear verbatim" in message and str(target) in message
    hint = refused(editor, "str_replace", target, old_str="def f():\n    return 1", new_str="x")
    assert "Lines 1-2 match if whitespace is ignored" in hint
    assert target.read_text() == "def f():\n\treturn 1\n"


def test_str_replace_with_several_matches_lists_their_lines(
    editor: FileEditor, tmp_path: Path
) -> None:
    target = tmp_path / "m.py"
    target.write_text("x = 1\ny = 2\nx = 1\n\nx = 1\n")
    message = refused(editor, "str_replace", target, old_str="x = 1", new_str="x = 3")
    assert "3 times" in message and "[1, 3, 5]" in message
    assert target.read_text() == "x = 1\ny = 2\nx = 1\n\nx = 1\n"


def test_str_replace_deletes_with_empty_new_str(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("keep\ndrop me\nkeep too\n")
    ok(editor, "str_replace", target, old_str="drop me\n", new_str="")
    assert target.read_text() == "keep\nkeep too\n"
    ok(editor, "str_replace", target, old_str="keep\n")  # no new_str at all: also a deletion
    assert target.read_text() == "keep too\n"


def test_str_replace_argument_errors(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text("a\n")
    assert "non-empty `old_str`" in refused(editor, "str_replace", target, new_str="b")
    assert "identical" in refused(editor, "str_replace", target, old_str="a", new_str="a")


# ------------------------------------------------------------------ insert


def test_insert_top_middle_and_end(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "i.txt"
    target.write_text("one\ntwo\n")
    ok(editor, "insert", target, insert_line=0, new_str="zero")
    ok(editor, "insert", target, insert_line=2, new_str="one and a half\n")
    obs = ok(editor, "insert", target, insert_line=4, new_str="three\nfour")
    assert target.read_text() == "zero\none\none and a half\ntwo\nthree\nfour\n"
    assert "     5\tthree\n     6\tfour" in obs.content
    assert obs.diff is not None and "+three\n+four" in obs.diff


def test_insert_after_a_last_line_without_newline(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "i.txt"
    target.write_text("one\ntwo")
    ok(editor, "insert", target, insert_line=2, new_str="three")
    assert target.read_text() == "one\ntwo\nthree"


def test_insert_line_out_of_range(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "i.txt"
    target.write_text("one\ntwo\nthree\n")
    message = refused(editor, "insert", target, insert_line=7, new_str="x")
    assert "Invalid insert_line 7" in message and "[0, 3]" in message
    assert "[0, 3]" in refused(editor, "insert", target, insert_line=-1, new_str="x")
    assert "insert_line" in refused(editor, "insert", target, new_str="x")
    assert "new_str" in refused(editor, "insert", target, insert_line=1)
    assert target.read_text() == "one\ntwo\nthree\n"


# ------------------------------------------------------------------ undo


def test_undo_without_history(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "u.txt"
    target.write_text("x\n")
    assert "No edit history" in refused(editor, "undo_edit", target)


def test_undo_several_levels(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "u.txt"
    target.write_text("v0\n")
    for n in range(1, 4):
        ok(editor, "str_replace", target, old_str=f"v{n - 1}", new_str=f"v{n}")
    obs = ok(editor, "undo_edit", target)
    assert target.read_text() == "v2\n" and "     1\tv2" in obs.content
    assert obs.diff is not None and "-v3\n+v2" in obs.diff
    ok(editor, "undo_edit", target)
    ok(editor, "undo_edit", target)
    assert target.read_text() == "v0\n"
    assert "No edit history" in refused(editor, "undo_edit", target)


def test_undo_history_depth_is_bounded(tmp_path: Path) -> None:
    editor = FileEditor(tmp_path, history_depth=2)
    target = tmp_path / "u.txt"
    target.write_text("v0\n")
    for n in range(1, 4):
        ok(editor, "str_replace", target, old_str=f"v{n - 1}", new_str=f"v{n}")
    ok(editor, "undo_edit", target)
    ok(editor, "undo_edit", target)
    assert target.read_text() == "v1\n"
    refused(editor, "undo_edit", target)


def test_undo_of_create_removes_the_file(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "made.txt"
    ok(editor, "create", target, file_text="hello\n")
    assert "removed" in ok(editor, "undo_edit", target).content
    assert not target.exists()


# ------------------------------------------------------------------ refusals: binary, size


def test_binary_file_is_refused(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "blob.bin"
    target.write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00binary")
    message = refused(editor, "view", target)
    assert "binary" in message and str(target) in message
    assert "binary" in refused(editor, "str_replace", target, old_str="ELF", new_str="x")
    noisy = tmp_path / "noise.dat"
    noisy.write_bytes(bytes(range(1, 32)) * 40 + b"\xff\xfe\x80")
    assert "binary" in refused(editor, "view", noisy)


def test_file_over_the_size_limit(tmp_path: Path) -> None:
    editor = FileEditor(tmp_path, max_file_bytes=1000)
    target = tmp_path / "huge.log"
    target.write_text("".join(f"entry {i}\n" for i in range(500)))
    message = refused(editor, "str_replace", target, old_str="entry 1\n", new_str="x\n")
    assert "over the editor's limit" in message and "KB" in message
    assert "view_range" in refused(editor, "view", target)
    part = ok(editor, "view", target, view_range=[100, 102]).content
    assert "   100\tentry 99\n   101\tentry 100\n   102\tentry 101" in part
    assert "fewer than 900 lines" in refused(editor, "view", target, view_range=[900, 901])
    big = "x" * 2000
    assert "limit" in refused(editor, "create", tmp_path / "big.txt", file_text=big)


# ------------------------------------------------------------------ encodings and line endings


def test_crlf_and_tabs_are_preserved(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "win.c"
    target.write_bytes(b"int main() {\r\n\treturn 0;\r\n}\r\n")
    obs = ok(
        editor,
        "str_replace",
        target,
        old_str="\treturn 0;\n",
        new_str='\tputs("x");\n\treturn 1;\n',
    )
    assert target.read_bytes() == b'int main() {\r\n\tputs("x");\r\n\treturn 1;\r\n}\r\n'
    assert "\r" not in obs.content
    ok(editor, "insert", target, insert_line=0, new_str="#include <stdio.h>\n")
    assert target.read_bytes().startswith(b"#include <stdio.h>\r\nint main() {\r\n\tputs")
    view = ok(editor, "view", target).content
    assert "\r" not in view and '     3\t\tputs("x");' in view


def test_latin1_file_stays_latin1(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "old.txt"
    target.write_bytes("café = 1\nniño = 2\n".encode("latin-1"))
    ok(editor, "str_replace", target, old_str="niño = 2", new_str="señor = 3")
    assert target.read_bytes() == "café = 1\nseñor = 3\n".encode("latin-1")
    message = refused(editor, "str_replace", target, old_str="café", new_str="€uro")
    assert "latin-1" in message and "'€'" in message
    assert target.read_bytes() == "café = 1\nseñor = 3\n".encode("latin-1")


def test_utf8_bom_and_utf16_are_kept(editor: FileEditor, tmp_path: Path) -> None:
    bom = tmp_path / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfname = 'J\xc3\xbcrgen'\n")
    ok(editor, "str_replace", bom, old_str="Jürgen", new_str="Zoë")
    assert bom.read_bytes() == b"\xef\xbb\xbfname = 'Zo\xc3\xab'\n"
    wide = tmp_path / "wide.txt"
    wide.write_bytes(b"\xff\xfe" + "a = 1\r\nb = 2\r\n".encode("utf-16-le"))
    assert "     2\tb = 2" in ok(editor, "view", wide).content
    ok(editor, "str_replace", wide, old_str="b = 2", new_str="b = 3")
    assert wide.read_bytes() == b"\xff\xfe" + "a = 1\r\nb = 3\r\n".encode("utf-16-le")


RUSSIAN = """# Настройки приложения для учёта учеников
# Этот файл описывает общие параметры: изменяйте его осторожно.

[общие]
название = "Средняя школа номер пять"
город = "Новосибирск"
директор = "Ирина Петровна Смирнова"

[сообщения]
приветствие = "Добро пожаловать в школу! Ученики должны приходить вовремя."
закрытие = "Школа закрыта на зимние каникулы."
"""
FRENCH = """# Configuration de l'application de gestion des élèves
# Ce fichier décrit les paramètres généraux : ne le modifiez qu'avec précaution.

[général]
nom = "École élémentaire Jean-Jacques Rousseau"
ville = "Besançon"
directrice = "Hélène Lefèvre"

[messages]
bienvenue = "Bienvenue à l'école ! Les élèves sont priés d'arriver à l'heure."
remarque = "Ça marche très bien, même après la mise à jour."
"""
JAPANESE = """# アプリケーションの設定ファイル
# このファイルには一般的なパラメータが含まれています。注意して変更してください。

[一般]
名前 = "東京市立第一小学校"
都市 = "東京"
校長 = "山田太郎"

[メッセージ]
歓迎 = "学校へようこそ！生徒は時間通りに来てください。"
休校 = "冬休みの間、学校は休みです。"
"""
CHINESE = """# 应用程序的配置文件
# 此文件包含一般参数：请谨慎修改。

[常规]
名称 = "北京市第一小学"
城市 = "北京"
校长 = "王小明"

[消息]
欢迎 = "欢迎来到学校！学生应按时到校。"
关闭 = "寒假期间学校关闭。"
"""


def test_cp1251_file_is_viewed_edited_and_kept_in_cp1251(
    editor: FileEditor, tmp_path: Path
) -> None:
    target = tmp_path / "school.ini"
    target.write_bytes(RUSSIAN.encode("cp1251"))
    view = ok(editor, "view", target).content
    assert '     6\tгород = "Новосибирск"' in view

    edited = ok(editor, "str_replace", target, old_str="Новосибирск", new_str="Томск")
    text = RUSSIAN.replace("Новосибирск", "Томск")
    assert target.read_bytes() == text.encode("cp1251")
    assert '-город = "Новосибирск"' in (edited.diff or "")
    assert '+город = "Томск"' in (edited.diff or "")
    assert 'город = "Томск"' in edited.content

    ok(editor, "insert", target, insert_line=7, new_str='завуч = "Олег Иванович"\n')
    lines = text.split("\n")
    text = "\n".join([*lines[:7], 'завуч = "Олег Иванович"', *lines[7:]])
    assert target.read_bytes() == text.encode("cp1251")

    undone = ok(editor, "undo_edit", target)
    assert target.read_bytes() == RUSSIAN.replace("Новосибирск", "Томск").encode("cp1251")
    assert '-завуч = "Олег Иванович"' in (undone.diff or "")
    ok(editor, "undo_edit", target)
    assert target.read_bytes() == RUSSIAN.encode("cp1251")


def test_cp1251_file_refuses_a_character_it_cannot_hold(editor: FileEditor, tmp_path: Path) -> None:
    target = tmp_path / "school.ini"
    target.write_bytes(RUSSIAN.encode("cp1251"))
    message = refused(editor, "str_replace", target, old_str="Томск", new_str="x")
    assert "did not appear verbatim" in message
    message = refused(editor, "str_replace", target, old_str="пять", new_str="五")
    assert "cp1251" in message and "'五'" in message
    assert target.read_bytes() == RUSSIAN.encode("cp1251")


@pytest.mark.parametrize(
    ("text", "encoding", "old", "new"),
    [
        (FRENCH, "latin-1", "Besançon", "Valençay"),
        (JAPANESE, "shift_jis", "山田太郎", "鈴木花子"),
        (CHINESE, "gb2312", "王小明", "李华"),
    ],
    ids=["latin-1 French", "Shift-JIS", "GB2312"],
)
def test_legacy_encodings_are_detected_and_kept(
    editor: FileEditor, tmp_path: Path, text: str, encoding: str, old: str, new: str
) -> None:
    target = tmp_path / "settings.ini"
    target.write_bytes(text.encode(encoding))
    assert old in ok(editor, "view", target).content
    ok(editor, "str_replace", target, old_str=old, new_str=new)
    assert target.read_bytes() == text.replace(old, new).encode(encoding)


@pytest.mark.parametrize(
    "data",
    [b"\xe9\n", "Привет\n".encode("cp1251"), b"x = 1  # \xa0\xe9\n"],
    ids=["one byte", "one cp1251 word", "code with two high bytes"],
)
def test_short_ambiguous_file_falls_back_to_latin1_and_keeps_its_bytes(
    editor: FileEditor, tmp_path: Path, data: bytes
) -> None:
    target = tmp_path / "short.txt"
    target.write_bytes(data)
    shown = ok(editor, "view", target).content
    assert data.decode("latin-1").rstrip("\n") in shown
    ok(editor, "insert", target, insert_line=0, new_str="# header\n")
    assert target.read_bytes() == b"# header\n" + data


def test_big_cp1251_file_is_viewed_in_its_encoding(tmp_path: Path) -> None:
    editor = FileEditor(tmp_path, max_file_bytes=1024)
    target = tmp_path / "big.ini"
    target.write_bytes((RUSSIAN * 20).encode("cp1251"))
    part = ok(editor, "view", target, view_range=[5, 6]).content
    assert "too big to edit" in part
    assert '     6\tгород = "Новосибирск"' in part


# ------------------------------------------------------------------ through the sandbox


def test_sandbox_routes_edit_actions_to_the_editor(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path, artifacts=tmp_path / "artifacts")
    try:
        target = tmp_path / "via_sandbox.txt"
        obs = sandbox.execute(FileEditAction(command="create", path=str(target), file_text="hi\n"))
        assert isinstance(obs, FileEditObservation)
        assert target.read_text() == "hi\n"
    finally:
        sandbox.close()


def test_the_checkpoint_store_is_out_of_reach_even_through_a_symlink(tmp_path: Path) -> None:
    """An agent linked the store into the workspace and edited its git config through the
    link; the editor refuses every command on the store, however the path gets there."""
    workspace, store = tmp_path / "ws", tmp_path / "data" / "store.git"
    workspace.mkdir()
    store.mkdir(parents=True)
    (store / "config").write_text("[core]\n")
    (workspace / "cpstore").symlink_to(store)
    editor = FileEditor(workspace, protected=(store,))
    for action in (
        FileEditAction(command="str_replace", path=str(workspace / "cpstore/config"),
                       old_str="[core]", new_str="[core]\n\tfsmonitor = x"),
        FileEditAction(command="create", path=str(workspace / "cpstore/hooks"), file_text="x"),
        FileEditAction(command="create", path=str(store / "new"), file_text="x"),
        FileEditAction(command="view", path=str(workspace / "cpstore")),
    ):  # fmt: skip
        result = editor.execute(action)
        assert isinstance(result, ErrorObservation), action
        assert "checkpoint store" in result.content
    assert (store / "config").read_text() == "[core]\n"
    assert sorted(p.name for p in store.iterdir()) == ["config"]
    # The workspace itself is still the editor's.
    made = editor.execute(
        FileEditAction(command="create", path=str(workspace / "ok.txt"), file_text="fine\n")
    )
    assert not isinstance(made, ErrorObservation)
