"""One step numbering (issue 23, acceptance 2): a session run headless with the scripted LLM
server (a reply with two tool calls, a finish, then a resumed part), one step picked in each of
headless output, `workbench replay`, `workbench checkpoints` and the TUI's rewind screen, is the
same step for `workbench diff --step N` and `workbench rewind --to N`; a number out of range
names the valid range in that numbering. Real headless CLI, real local sandbox, real Pilot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from headless_harness import bash, cli_env, finish, run_cli
from pilot_wait import is_showing, waiter
from textual.widgets import Static

from workbench.config.load import load_config
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.rewind import RewindScreen
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.status import StatusBar

TWO_CALLS = {
    "tool_calls": [bash(c)["tool_calls"][0] for c in ("echo two > b.txt", "echo three > c.txt")]
}
FIRST_RUN = [bash("echo one > a.txt"), TWO_CALLS, bash("rm a.txt"), finish("made them")]
"""Steps 1 (a.txt), 2 and 3 (one reply: b.txt, c.txt), 4 (rm a.txt), 5 (finish)."""
RESUMED_RUN = [bash("echo four > d.txt"), finish("one more")]
"""Steps 6 (d.txt) and 7 (finish): a resumed session goes on from its parent's numbers."""


def numbered(text: str, command: str) -> int:
    """The `[N]` printed before `$ command` in `text` (exactly one such line)."""
    found = re.findall(rf"^\[(\d+)\] \$ {re.escape(command)}(?:  \[\w+\])?$", text, re.MULTILINE)
    assert len(found) == 1, f"no single [N] line for {command!r} in:\n{text}"
    return int(found[0])


def _files(ws: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}


def _screen_text(app: WorkbenchApp) -> str:
    return "\n".join(str(s.render()) for s in app.screen.query(Static))


def _state(pilot: Any) -> str:
    shown = [n.message for n in pilot.app._notifications]
    workers = [repr(w) + str(w.error) for w in pilot.app.workers]
    return str([*shown, *workers, repr(pilot.app.screen), repr(pilot.app.focused)])


_until = waiter(60, explain=_state)


def _run(tmp_path: Path, ws: Path, script: list[dict[str, Any]], *args: str) -> tuple[str, str]:
    """A headless run (human output) of `script`: its output and its session's id."""
    with ScriptedLLMServer({"steps": script, "default": {"text": "ok"}}) as server:
        env = cli_env(tmp_path, server.base_url)
        proc = run_cli(["--headless", *args], env, cwd=ws, timeout=120)
    assert proc.returncode == 0, proc.stderr
    session = re.search(r"session (\S+), exit 0$", proc.stdout.strip())
    assert session, proc.stdout
    return proc.stdout, session[1]


def _workbench(tmp_path: Path, ws: Path, *args: str) -> Any:
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    return run_cli(list(args), env, cwd=ws, timeout=120)


@pytest.mark.timeout(300)
async def test_one_step_has_one_number_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(tmp_path / "data"))  # the runs' checkpoints
    ws = tmp_path / "ws"
    ws.mkdir()
    headless, parent = _run(tmp_path, ws, FIRST_RUN, "-t", "make the files")
    resumed, session = _run(tmp_path, ws, RESUMED_RUN, "--resume", parent, "-t", "one more")
    (log,) = (tmp_path / "data").rglob(f"{session}.jsonl")

    # Headless output: the first run's [N], and the resumed run's as it ran.
    assert numbered(headless, "echo one > a.txt") == 1
    assert numbered(headless, "echo two > b.txt") == 2
    assert numbered(headless, "echo three > c.txt") == 3  # the same reply as step 2
    assert numbered(headless, "rm a.txt") == 4
    assert numbered(resumed, "echo four > d.txt") == 6  # not [1]: it goes on from its parent

    # replay --headless of the resumed session: the same numbers.
    replayed = _workbench(tmp_path, ws, "replay", "--headless", session).stdout
    assert numbered(replayed, "echo three > c.txt") == 3
    assert numbered(replayed, "echo four > d.txt") == 6

    # checkpoints: the same numbers.
    listed = _workbench(tmp_path, ws, "checkpoints", session)
    assert listed.returncode == 0, listed.stderr
    rows = dict(re.findall(r"^\[(\d+)\] .*?  (\$ .*)$", listed.stdout, re.MULTILINE))
    assert rows["3"] == "$ echo three > c.txt" and rows["6"] == "$ echo four > d.txt"

    # The TUI's rewind screen, on the rows of those actions: the same numbers (the first call
    # of a reply of two is its own step, though the second was asked for with it).
    picked = await _tui_steps(tmp_path, ws, log)
    assert picked == {"echo two > b.txt": 2, "echo three > c.txt": 3, "echo four > d.txt": 6}

    # diff --step N is what that step did; rewind --to N the workspace after it.
    diff = _workbench(tmp_path, ws, "diff", session, "--step", "3")
    assert diff.returncode == 0 and "+three" in diff.stdout and "two" not in diff.stdout
    diff = _workbench(tmp_path, ws, "diff", session, "--step", "6")
    assert diff.returncode == 0 and "+four" in diff.stdout and "three" not in diff.stdout
    done = _workbench(tmp_path, ws, "rewind", session, "--to", "3", "--yes")
    assert done.returncode == 0, done.stderr
    assert _files(ws) == {"a.txt": "one\n", "b.txt": "two\n", "c.txt": "three\n"}
    done = _workbench(tmp_path, ws, "rewind", session, "--to", "6", "--yes")
    assert done.returncode == 0, done.stderr
    assert _files(ws) == {"b.txt": "two\n", "c.txt": "three\n", "d.txt": "four\n"}

    # The last step (finish) changed no files, yet is a step; one more is out of range.
    diff = _workbench(tmp_path, ws, "diff", session, "--step", "7")
    assert diff.returncode == 0 and "step 7 changed no files" in diff.stdout
    for command in (("diff", session, "--step", "8"), ("rewind", session, "--to", "8", "--yes")):
        refused = _workbench(tmp_path, ws, *command)
        assert refused.returncode == 2 and "step 8 is out of range" in refused.stderr
        assert "steps 0 to 7" in refused.stderr, refused.stderr
    assert _files(ws) == {"b.txt": "two\n", "c.txt": "three\n", "d.txt": "four\n"}


async def _tui_steps(tmp_path: Path, ws: Path, log: Path) -> dict[str, int]:
    """The step the TUI's rewind screen names for the rows of two actions of `log`."""
    env = cli_env(tmp_path, "http://127.0.0.1:9")
    config = load_config(env=env, overrides={"sandbox.workspace": str(ws)})
    backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
    app = create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
    )
    events = read(log).events
    found: dict[str, int] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        status = app.query_one(StatusBar)
        await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
        app.open_session_file(log)
        view = app.query_one(ConversationView)
        keys = lambda: {c.key for c in view.cells}  # noqa: E731
        for command in ("echo two > b.txt", "echo three > c.txt", "echo four > d.txt"):
            action = next(e for e in events if e.kind == "action" and command in str(e.action))
            key = f"e{action.id}"
            await _until(pilot, lambda: key in keys(), f"the row of {command}")  # noqa: B023
            row = next(i for i, c in enumerate(view.cells) if c.key == key)
            view.focus()
            await _until(pilot, lambda: app.focused is view, "the conversation's focus")
            view.action_cursor_to(row)
            await pilot.press("r")
            await _until(pilot, lambda: is_showing(app, RewindScreen), "the question")
            # The screen is pushed before its text is composed and mounted.
            await _until(pilot, lambda: "Rewind to step" in _screen_text(app), "its title")
            title = re.search(r"Rewind to step (\d+)", _screen_text(app))
            assert title, _screen_text(app)
            found[command] = int(title[1])
            await pilot.press("escape")
            await _until(pilot, lambda: not isinstance(app.screen, RewindScreen), "the answer")
        await app.action_quit()
    return found
