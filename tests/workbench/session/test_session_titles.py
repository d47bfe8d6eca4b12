"""A resumed session is listed by its own task (`workbench sessions`, `--json`, the TUI's
picker), not by its root's; `sessions show ID` prints the transcript, `--json` too (issue 23,
item 10). Sessions recorded by the real headless CLI with the scripted LLM server."""

from __future__ import annotations

import json
from pathlib import Path

from headless_harness import bash, cli_env, finish, json_lines, run_cli

from workbench.session.summaries import summarize
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.screens.sessions import matches, summary_text


def run(tmp_path: Path, workspace: Path, script: list[dict[str, object]], *args: str) -> str:
    """One headless --json run of `script`; returns its session id."""
    with ScriptedLLMServer(script) as server:
        proc = run_cli(
            ["--headless", "--json", *args], cli_env(tmp_path, server.base_url), workspace
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return str(json_lines(proc.stdout)[0]["session_id"])


def sessions(tmp_path: Path, *args: str) -> str:
    """`workbench sessions ARGS`'s output."""
    proc = run_cli(["sessions", *args], cli_env(tmp_path, "http://127.0.0.1:9"), tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_resumed_session_has_its_own_title_and_show_prints_the_transcript(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = run(tmp_path, workspace, [bash("echo first-run"), finish("ok")], "-t", "count the files")
    script = [bash("echo second-run"), finish("added")]
    child = run(tmp_path, workspace, script, "--resume", root, "-t", "now add a README")

    listing = sessions(tmp_path)
    line = next(row for row in listing.splitlines() if row.startswith(child))
    assert "now add a README" in line and "count the files" not in line
    assert f"<- {root}" in line
    rows = {row["session_id"]: row for row in json_lines(sessions(tmp_path, "--json"))}
    assert rows[child]["task"] == "now add a README"
    assert rows[root]["task"] == "count the files"

    log = Path(rows[child]["log"])  # the picker: its title line and its search
    shown = summary_text(summarize(log), None).plain
    assert shown.splitlines()[0] == "now add a README"
    assert matches(summarize(log), "README") and not matches(summarize(log), "count")

    out = sessions(tmp_path, "show", child)
    assert "task:      now add a README" in out
    transcript = out[out.index("\ntranscript:\n") :]
    order = [
        "  user: count the files",
        "  [1] $ echo first-run",
        "      first-run",
        f"  -- this session starts here (above: the history of {root})",
        "  user: now add a README",
        "$ echo second-run",
        "      second-run",
        "finish (success): added",
    ]
    at = [transcript.index(text) for text in order]
    assert at == sorted(at), transcript

    facts = json.loads(sessions(tmp_path, "show", child, "--json"))
    assert facts["task"] == "now add a README"
    entries = facts["transcript"]
    users = [(e["text"], e["inherited"]) for e in entries if e["kind"] == "message"]
    assert ("user: count the files", True) in users and ("user: now add a README", False) in users
    actions = [e for e in entries if e["kind"] == "action"]
    assert [e["text"].split("] ", 1)[1].removesuffix("  [LOW]") for e in actions] == [
        "$ echo first-run",
        "finish (success): ok",
        "$ echo second-run",
        "finish (success): added",
    ]
    assert [e["inherited"] for e in actions] == [True, True, False, False]
    assert all(isinstance(e["step"], int) and e["event"] > 0 for e in entries)
