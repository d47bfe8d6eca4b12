"""The replay player in the TUI: a session recorded by a real headless run (scripted LLM
server, real local sandbox) played, paused, stepped back and jumped through with Pilot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pilot_wait import holds, waiter
from textual.widgets import Static
from tui_support import make_config

from workbench.config.load import load_config
from workbench.replay.recording import load_recording
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.replay import ReplayApp, ReplayBar, create_player
from workbench.tui.rerun import RerunView, StepBlock
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput

_until = waiter(30, step=0.02)  # a step shown while playing is paused on soon after


def _bash(command: str) -> dict[str, Any]:
    args = {"command": command, "security_risk": "LOW"}
    return {"tool_calls": [{"name": "execute_bash", "arguments": args}]}


FINISH = {"tool_calls": [{"name": "finish", "arguments": {"message": "counted"}}]}


def record_session(tmp_path: Path, script: list[dict[str, Any]] | None = None) -> Path:
    """Run `script` headless in `tmp_path/ws` (default: echo one, two, three; finish);
    returns the log's path."""
    script = script or [_bash("echo one"), _bash("echo two"), _bash("echo three"), FINISH]
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (tmp_path / "cfg").mkdir()
    with ScriptedLLMServer(script) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
        env |= {
            "LLM_MODEL": "openai/test-model",
            "LLM_BASE_URL": server.base_url,
            "LLM_API_KEY": "sk-test-SECRET",
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
        }
        proc = subprocess.run(
            [sys.executable, "-m", "workbench", "--headless", "--json", "-t", "count"],
            env=env,
            cwd=workspace,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
    assert proc.returncode == 0, proc.stderr
    return Path(json.loads(proc.stdout.splitlines()[-1])["log"])


def titles(app: ReplayApp) -> list[str]:
    return [cell.title for cell in app.query_one(ConversationView).cells]


async def test_player_plays_pauses_steps_back_and_jumps(tmp_path: Path) -> None:
    recording = load_recording(record_session(tmp_path))
    app = create_player(
        recording,
        make_config(),
        speed=0.25,
        autoplay=False,
        clock=lambda: 0.0,
        image_mode="halfcell",
        user_themes=tmp_path / "none",
    )
    async with app.run_test(size=(120, 40)) as pilot:
        line = app.timeline
        assert not app.query_one(PromptInput).display  # nothing is sent while watching
        assert line.position == 0 and not titles(app)
        await pilot.press("space")  # play
        assert app.playing
        await _until(pilot, lambda: line.step >= 2, "step 2 played")
        await pilot.press("space")  # pause
        assert not app.playing and line.step >= 2
        held = line.position
        await holds(pilot, lambda: line.position == held, 0.3, "paused: nothing more shown")
        assert any("echo one" in title for title in titles(app))

        await pilot.press("g", "1", "enter")  # jump back to step 1
        assert line.step == 1 and line.position == line.end_of(1)
        assert any("echo one" in t for t in titles(app))
        assert not any("echo two" in t for t in titles(app))

        await pilot.press("g", "3", "enter")  # jump forward to step 3
        assert line.step == 3
        assert any("echo three" in t for t in titles(app))

        await pilot.press("left")  # step back: the end of step 2
        assert line.step == 2 and line.position == line.end_of(2)
        assert not any("echo three" in t for t in titles(app))

        await pilot.press("right", "right")  # steps 3 and 4: the whole recording
        assert line.at_end and any("counted" in t for t in titles(app))
        await pilot.press("plus", "plus", "minus")
        assert app.speed == 0.5
        bar = str(app.query_one(ReplayBar).render())
        assert "■ end" in bar and "step 4/4" in bar and "speed 0.5x" in bar


async def test_rerun_view_shows_recorded_and_new_side_by_side(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "data.txt").write_text("alpha\n")
    log = record_session(tmp_path, [_bash("cat data.txt"), _bash("echo same"), FINISH])
    again = tmp_path / "again"
    again.mkdir()
    (again / "data.txt").write_text("CHANGED\n")
    config = load_config(
        env={},
        overrides={
            "sandbox.workspace": str(again),
            "agent.enable_browser": False,
            "agent.enable_jupyter": False,
        },
    )
    app = RerunView(load_recording(log), config)
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.code is not None, "the rerun's end", 60)
        assert app.code == 11
        blocks = list(app.query(StepBlock))
        assert [b.has_class("-differs") for b in blocks] == [True, False, False]
        assert blocks[2].has_class("-skipped")  # finish
        recorded = str(blocks[0].query_one(".recorded", Static).render())
        new = str(blocks[0].query_one(".new", Static).render())
        assert "alpha" in recorded and "CHANGED" in new
        assert "[1] $ cat data.txt" in str(blocks[0].border_title)
        status = str(app.query_one("#rerun-status", Static).render())
        assert "1 differ, the first at step 1" in status
        await pilot.press("n")
        await pilot.press("q")
    assert app.return_value == 11


async def test_the_player_names_the_recorded_workspace(tmp_path: Path) -> None:
    """A user trial: `workbench replay` started in another folder titled the conversation
    with that folder, not the one the session worked in."""
    recording = load_recording(record_session(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = make_config()
    config.sandbox.workspace = str(elsewhere)
    app = create_player(
        recording,
        config,
        autoplay=False,
        clock=lambda: 0.0,
        image_mode="halfcell",
        user_themes=tmp_path / "none",
    )
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        title = str(app.query_one(ConversationView).border_title)
    assert str(tmp_path / "ws") in title and "elsewhere" not in title, title
