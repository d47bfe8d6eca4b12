"""Re-runs that do not cry wolf (issue 23, item 6): a session with a plot (a real Jupyter kernel),
`ls -l` and a created file, recorded headless (scripted LLM server, real local sandbox), re-run
in a fresh workspace reports no difference; an imported OpenHands trajectory whose files come
out byte-equal reports none; a real difference is still reported, with the line saying why."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from headless_harness import bash, cli_env, create, finish, json_lines, run_cli

from workbench.replay.normalise import normalise
from workbench.testing.llm_server import ScriptedLLMServer

OPENHANDS = Path(__file__).resolve().parents[2] / "data" / "openhands"
JUPYTER = {"WORKBENCH_AGENT_ENABLE_JUPYTER": "true"}
AGENTS = "# Agents\n\nRun the tests with scripts/test before you commit anything.\n"
PLOT = """\
import struct, zlib
from IPython.display import Image, display
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
shade = len(open("AGENTS.md").read()) % 256  # the picture depends on the workspace
rows = b"".join(b"\\x00" + bytes([shade, 90, 200 - y]) * 48 for y in range(32))
png = (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 48, 32, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
display(Image(png))
print("plotted")
"""


def ipython(code: str) -> dict[str, Any]:
    """A script step: one execute_ipython_cell call."""
    args = {"code": code, "security_risk": "LOW"}
    return {"tool_calls": [{"name": "execute_ipython_cell", "arguments": args}]}


def replay(tmp_path: Path, *args: str) -> Any:
    """`workbench replay ARGS` as a subprocess (no LLM reachable), Jupyter on."""
    env = cli_env(tmp_path, "http://127.0.0.1:9", **JUPYTER)
    return run_cli(["replay", *args], env, cwd=tmp_path, timeout=180)


def record_plot_session(tmp_path: Path) -> Path:
    """Record: a plot, `ls -l`, a created file, `ls -l` and `cat` again; returns the log."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text(AGENTS)
    script = [
        ipython(PLOT),
        bash("ls -l"),
        create(workspace / "notes.txt", "first note\n"),
        bash("ls -l && cat notes.txt && date"),
        finish(),
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url, **JUPYTER)
        proc = run_cli(["--headless", "--json", "-t", "plot and list"], env, cwd=workspace)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = Path(json_lines(proc.stdout)[-1]["log"])
    images = list(log.with_name(f"{log.stem}.files").glob("ipython-*.png"))
    assert len(images) == 1  # the plot was kept with the session
    return log


def test_a_plot_ls_l_and_a_created_file_rerun_in_a_fresh_workspace_match(tmp_path: Path) -> None:
    log = record_plot_session(tmp_path)
    shutil.rmtree(tmp_path / "ws")  # the start comes out of the checkpoint store, not the folder
    proc = replay(tmp_path, "--rerun", "--json", str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    assert [line["type"] for line in lines] == ["start", "summary"], lines
    assert "checkpoint 0 (1 file;" in lines[0]["starts_from"]
    assert lines[-1]["compared"] == 4 and lines[-1]["differences"] == 0
    fresh = Path(lines[-1]["workspace"])
    assert (fresh / "AGENTS.md").read_text() == AGENTS
    shutil.rmtree(fresh)

    proc = replay(tmp_path, "--rerun", "--headless", str(log))  # the human report says why
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "the workspace starts as session " in out and "its checkpoint 0" in out
    assert "why: images equal by content (sha256), not by name: ipython-001-" in out
    # ls -l: the name after the time is kept, and the file is there from the start
    assert (
        "$ ls -l\n    = as recorded (exit code 0)\n      why: equal once the workspace path "
        "and times were masked" in out
    )
    assert (
        "notes.txt\n    = as recorded\n      why: equal once the workspace path was masked" in out
    )
    shutil.rmtree(re.findall(r"; workspace (\S+);", out)[-1])


def test_a_real_difference_is_still_reported_with_its_reason(tmp_path: Path) -> None:
    log = record_plot_session(tmp_path)
    changed = tmp_path / "changed"
    changed.mkdir()
    (changed / "AGENTS.md").write_text(AGENTS.replace("tests", "TESTS ALL"))
    proc = replay(tmp_path, "--rerun", "--json", str(log), "--workspace", str(changed))
    assert proc.returncode == 11, proc.stdout + proc.stderr
    lines = json_lines(proc.stdout)
    assert lines[0]["starts_from"].startswith(f"as {changed} is (not empty")
    differences = {line["step"]: line for line in lines if line["type"] == "difference"}
    assert set(differences) == {1, 2, 4}, differences  # the plot, both `ls -l`; not the create
    plot = differences[1]
    assert plot["why"].startswith("differs at line 1: recorded '[image saved as <image sha256:")
    assert plot["why"].endswith("(an image's content differs)")
    listing = differences[2]["why"]
    assert listing.startswith("differs at line 2: recorded '-rw-r--r-- 1 ")
    foreign = tmp_path / "from-elsewhere.jsonl"  # a log from outside the sessions folder
    shutil.copy(log, foreign)
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = replay(tmp_path, "--rerun", "--json", str(foreign), "--workspace", str(empty))
    assert proc.returncode == 11, proc.stdout + proc.stderr
    assert json_lines(proc.stdout)[0]["starts_from"].startswith(
        "from an empty folder: the log is not in your sessions folder"
    )
    assert not (empty / "AGENTS.md").exists() and (empty / "notes.txt").is_file()
    before, after = len(AGENTS), len(AGENTS.replace("tests", "TESTS ALL"))
    assert f" {before} <time> AGENTS.md', re-run '" in listing
    assert listing.endswith(f" {after} <time> AGENTS.md'")


def test_an_openhands_trajectory_with_byte_equal_files_reports_no_difference(
    tmp_path: Path,
) -> None:
    for name, edits in (("edit_args.json", 1), ("translated_ipython.json", 2)):
        workspace = tmp_path / name
        workspace.mkdir()
        trajectory = OPENHANDS / name
        proc = replay(
            tmp_path, "--rerun", "--headless", str(trajectory), "--workspace", str(workspace)
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "the workspace starts from an empty folder: an OpenHands trajectory" in proc.stdout
        assert proc.stdout.count("why: equal by effect: <workspace>/") == edits
        assert "is byte-equal to the recorded file" in proc.stdout


def test_an_openhands_edit_that_leaves_another_file_differs(tmp_path: Path) -> None:
    items = json.loads((OPENHANDS / "edit_args.json").read_text())
    for item in items:
        if item.get("observation") == "edit":
            item["extras"]["new_content"] = "print(2 + 4)\n"  # what OpenHands' file held
    trajectory = tmp_path / "changed.json"
    trajectory.write_text(json.dumps(items))
    workspace = tmp_path / "rerun"
    workspace.mkdir()
    proc = replay(tmp_path, "--rerun", "--json", str(trajectory), "--workspace", str(workspace))
    assert proc.returncode == 11, proc.stdout + proc.stderr
    (difference,) = [line for line in json_lines(proc.stdout) if line["type"] == "difference"]
    assert difference["why"] == (
        "differs by effect: <workspace>/app.py after the step, line 1: recorded "
        "'print(2 + 4)', re-run 'print(2 + 3)'"
    )


def test_masking_hides_the_time_and_leaves_the_rest_of_the_line() -> None:
    listing = (
        "total 8\n"
        "-rw-r--r-- 1 me me   74 Nov 26 11:34 AGENTS.md\n"
        "-rw-r--r-- 1 me me    3 Nov  6 09:05 UTC\n"
        "-rw-r--r-- 1 me me    9 Jan  2  2025 2024.txt\n"
    )
    assert normalise(listing) == (
        "total 8\n"
        "-rw-r--r-- 1 me me   74 <time> AGENTS.md\n"
        "-rw-r--r-- 1 me me    3 <time> UTC\n"
        "-rw-r--r-- 1 me me    9 <time> 2024.txt"
    )
    assert normalise("Thu Nov 26 11:34:56 UTC 2026\nnext") == "<time>\nnext"
