"""The screen watching an eval run (`workbench eval watch DIR`), driven with Textual's Pilot on
an OUT folder written as the evaluation contract says: trial folders appear and finish while
it watches, a finished trial opens its real conversation (a session log from a real headless
session), and the table fits 80x24 as well as a wide terminal."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from eval_fixtures import run_real_session, write_trial
from pilot_wait import is_showing, waiter
from textual.widgets import DataTable

from workbench.cli.eval_watch import main_watch, watch_command
from workbench.tui.screens.eval_run import (
    EvalRunScreen,
    EvalWatchApp,
    ReadOnlyConversation,
    TrialConversationScreen,
)

_until = waiter(10.0)
LONG = "a-task-with-a-rather-long-name-that-goes-on-and-on"
MARKUP = "[bold red]not markup"


@pytest.fixture(scope="module")
def session_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session log from a real headless session."""
    return run_real_session(tmp_path_factory.mktemp("session"))


def _out(tmp_path: Path, session_log: Path) -> Path:
    out = tmp_path / "out"
    write_trial(out, "alpha", 1, reward=1.0, cost=0.0123, session_log=session_log)
    write_trial(out, MARKUP, 1, reward=0.0)
    planned = ["alpha__1", "alpha__2", f"{LONG}__1", f"{MARKUP}__1"]
    (out / "run.json").write_text(json.dumps({"trials": planned}))
    return out


def _screen(app: EvalWatchApp) -> EvalRunScreen:
    screen = app.screen
    assert isinstance(screen, EvalRunScreen), screen
    return screen


def _states(app: EvalWatchApp) -> dict[str, str]:
    return {tid: t.state for tid, t in _screen(app).trials.items()}


def _fits(app: EvalWatchApp) -> bool:
    table = _screen(app).query_one(DataTable)
    return table.virtual_size.width <= table.scrollable_content_region.width


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_trials_appear_finish_and_open(
    tmp_path: Path, session_log: Path, size: tuple[int, int]
) -> None:
    out = _out(tmp_path, session_log)
    app = EvalWatchApp(out, poll_s=0.1)
    async with app.run_test(size=size) as pilot:
        first_scan = lambda: is_showing(app, EvalRunScreen) and _screen(app).polls  # noqa: E731
        await _until(pilot, first_scan, "a first scan")
        assert _states(app) == {
            "alpha__1": "done",
            "alpha__2": "queued",
            f"{LONG}__1": "queued",
            f"{MARKUP}__1": "done",
        }
        assert _fits(app), "the table is wider than the screen"
        table = _screen(app).query_one(DataTable)
        task_cell = table.get_cell(f"{LONG}__1", "task")
        if size[0] == 80:
            assert task_cell.plain.endswith("…") and len(task_cell.plain) < len(LONG)
        else:
            assert task_cell.plain == LONG
        assert table.get_cell(f"{MARKUP}__1", "task").plain == MARKUP  # shown, not applied
        assert table.get_cell("alpha__1", "cost").plain == "$0.0123"
        # a trial starts (the driver marks it), is written aside, then lands as an error
        marker = out / "trials" / ".alpha__2.running"
        marker.touch()
        await _until(pilot, lambda: _states(app).get("alpha__2") == "running", "alpha__2 running")
        partial = write_trial(out / "partial", "alpha", 2, status="error", error="sandbox failed")
        partial.rename(out / "trials" / "alpha__2")
        marker.unlink()
        await _until(pilot, lambda: _states(app).get("alpha__2") == "error", "alpha__2 error")
        summary = _screen(app).query_one("#eval-summary").render()
        assert "1 error" in str(summary) and "success 1/2" in str(summary)
        # enter on a queued trial says why there is nothing to open
        table.move_cursor(row=list(_screen(app).trials).index(f"{LONG}__1"))
        await pilot.press("enter")
        await _until(pilot, lambda: _screen(app).last_notice, "a notice")
        assert _screen(app).last_notice == f"{LONG}__1 has not started."
        # enter on the finished trial opens its conversation
        table.move_cursor(row=list(_screen(app).trials).index("alpha__1"))
        await pilot.press("enter")
        await _until(pilot, lambda: is_showing(app, TrialConversationScreen), "the trial")
        view = app.screen.query_one(ReadOnlyConversation)
        await _until(pilot, lambda: view.cells, "the conversation's cells")
        texts = [cell.copy_text() for cell in view.cells]
        assert any("say hello" in text for text in texts), texts
        assert any("Writing it." in text for text in texts), texts
        await pilot.press("escape")
        await _until(pilot, lambda: is_showing(app, EvalRunScreen), "back to the trials")


def test_watch_refuses_a_folder_that_is_not_there(tmp_path: Path) -> None:
    args = argparse.Namespace(dir=tmp_path / "missing", poll=1.0)
    assert main_watch(args) == 2
    assert watch_command([str(tmp_path), "--poll", "0"]) == 2
