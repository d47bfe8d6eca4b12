"""A re-run in the TUI asks the person at the screen, on the same confirmation panel as a live
session: it used to answer "nobody to ask in headless mode" for them. A real headless run
records three actions (the last two declared HIGH); the re-run view runs them again in a real
sandbox: the first unasked, the second approved with y, the third rejected with n."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter
from test_replay_player import FINISH, record_session
from textual.widgets import Static

from workbench.config.load import load_config
from workbench.replay.recording import load_recording
from workbench.tui.rerun import RerunView, StepBlock
from workbench.tui.widgets import confirm
from workbench.tui.widgets.confirm import ConfirmPanel

_until = waiter(60)


def bash(command: str, risk: str) -> dict[str, Any]:
    args = {"command": command, "security_risk": risk}
    return {"tool_calls": [{"name": "execute_bash", "arguments": args}]}


@pytest.mark.timeout(180)
async def test_a_rerun_in_the_tui_asks_on_the_confirmation_panel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confirm, "ARM_S", 0.0)  # no typing to guard against here
    script = [
        bash("echo one > a.txt", "LOW"),
        bash("echo two > b.txt", "HIGH"),
        bash("echo three > c.txt", "HIGH"),
        FINISH,
    ]
    log = record_session(tmp_path, script)
    again = tmp_path / "again"
    again.mkdir()
    overrides = {
        "sandbox.workspace": str(again),
        "agent.enable_browser": False,
        "agent.enable_jupyter": False,
    }
    app = RerunView(load_recording(log), load_config(env={}, overrides=overrides))
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(ConfirmPanel)

        def asking(text: str) -> bool:
            shown = panel.has_class("-shown") and panel.action is not None
            return shown and text in str(panel.action.action) and app.focused is panel

        await _until(pilot, lambda: asking("b.txt"), "the question about b.txt")
        title = str(panel.query_one("#confirm-title", Static).render())
        assert "risk HIGH" in title and (again / "a.txt").exists()
        assert not (again / "b.txt").exists()  # nothing runs before the answer
        await pilot.press("y")
        await _until(pilot, lambda: asking("c.txt"), "the question about c.txt")
        assert (again / "b.txt").read_text() == "two\n"
        await pilot.press("n")
        await _until(pilot, lambda: app.code is not None, "the end of the re-run")
        assert not panel.has_class("-shown")
        assert not (again / "c.txt").exists()
        blocks = list(app.query(StepBlock))
        new = [str(b.query_one(".new", Static).render()) for b in blocks[:3]]
        assert "rejected in the re-run" in new[2], new
        assert not any("nobody to ask" in text for text in new), new


@pytest.mark.timeout(180)
async def test_the_rerun_outcome_is_read_whole_at_80x24(tmp_path: Path) -> None:
    """A user trial: the last line ("done in /tmp/workbench-replay-…: 1 differ, the first at
    step 1 (n: next); exit 11 (q quits)") was one row high at 80 columns: the exit code and q
    were cut off."""
    log = record_session(tmp_path, [bash("echo one > a.txt", "LOW"), FINISH])
    again = tmp_path / "a-rather-long-folder-name-for-the-re-run-to-work-in"
    again.mkdir()
    overrides = {
        "sandbox.workspace": str(again),
        "agent.enable_browser": False,
        "agent.enable_jupyter": False,
    }
    app = RerunView(load_recording(log), load_config(env={}, overrides=overrides))
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: app.code is not None, "the end of the re-run")
        status = app.query_one("#rerun-status", Static)
        await _until(pilot, lambda: "(q quits)" in str(status.render()), "the outcome line")
        text = str(status.render())
        assert len(text) > status.region.width  # the case this is about
        assert status.region.width * status.region.height >= len(text), (text, status.region)
