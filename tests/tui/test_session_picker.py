"""The session picker (issue 14, friction 11): search, and each session's steps, cost,
duration and outcome, read from real session logs."""

from __future__ import annotations

from pathlib import Path

from pilot_wait import waiter
from textual.widgets import Input, OptionList
from tui_support import make_config

from workbench.events import LLMCallEvent, MessageEvent, StateChangedEvent
from workbench.session.log import SessionLog, make_header
from workbench.session.stats import session_stats
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.screens.sessions import SessionPicker
from workbench.tui.widgets.conversation import ConversationView

T0 = 1_790_000_000.0
SESSIONS = (
    ("20260101-000000-aaaaaa", "write hi.sh", "finished", 3, 0.01, 65.0),
    ("20260102-000000-bbbbbb", "fix the flaky test then push", "error", 1, 0.25, 7.5),
    ("20260103-000000-cccccc", "draw a chart of sales", "stopped", 0, 0.0, 2.0),
)


def _write_sessions(directory: Path) -> None:
    for sid, task, end, steps, cost, duration in SESSIONS:
        header = make_header(sid, "/home/me/project", "openai/m")
        header = header.model_copy(update={"created": T0})
        log = SessionLog.create(directory, header)
        log.append(MessageEvent(id=1, timestamp=T0, source="user", text=task))
        for step in range(steps):
            log.append(
                LLMCallEvent(
                    id=2 + step,
                    timestamp=T0 + step,
                    model="openai/m",
                    prompt_tokens=10,
                    completion_tokens=5,
                    cost=cost,
                    latency_ms=5,
                )
            )
        log.append(StateChangedEvent(id=99, timestamp=T0 + duration, state=end))  # type: ignore[arg-type]
        log.close()


def test_the_figures_come_from_the_whole_log(tmp_path: Path) -> None:
    _write_sessions(tmp_path)
    stats = session_stats(tmp_path / "20260101-000000-aaaaaa.jsonl", T0)
    assert (stats.steps, round(stats.cost, 4), stats.duration_s) == (3, 0.03, 65.0)
    assert session_stats(tmp_path / "missing.jsonl", T0).steps == 0


_until = waiter(30)


async def _picker(app: WorkbenchApp, pilot: object) -> SessionPicker:
    await pilot.press("ctrl+o")  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, SessionPicker)
    await _until(pilot, lambda: len(screen.stats) == len(SESSIONS), "every session's figures")
    await pilot.pause()  # type: ignore[attr-defined]
    return screen


def _shown(screen: SessionPicker) -> list[str]:
    options = screen.query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_picker_shows_steps_cost_duration_and_outcome(tmp_path: Path) -> None:
    config = make_config()
    config.session.dir = str(tmp_path / "sessions")
    _write_sessions(tmp_path / "sessions")
    app = create_app(config, None, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await _picker(app, pilot)
        shown = _shown(screen)
    assert shown[0].startswith("draw a chart of sales\n") and "stopped  0 steps" in shown[0]
    assert "error  1 step  $0.2500  7s" in shown[1]
    assert "finished  3 steps  $0.0300  1m05s" in shown[2]


async def test_typing_searches_and_enter_opens_the_match(tmp_path: Path) -> None:
    config = make_config()
    config.session.dir = str(tmp_path / "sessions")
    _write_sessions(tmp_path / "sessions")
    app = create_app(config, None, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await _picker(app, pilot)
        assert screen.query_one(Input).has_focus
        await pilot.press(*"hi.sh")
        assert [line.split("\n")[0] for line in _shown(screen)] == ["write hi.sh"]
        await pilot.press("ctrl+u", *"ERROR flaky")  # every word, any case
        assert [line.split("\n")[0] for line in _shown(screen)] == ["fix the flaky test then push"]
        await pilot.press("ctrl+u", *"nothing like this")
        assert _shown(screen) == []
        await pilot.press("ctrl+u")
        await pilot.press("down", "enter")  # the second newest
        await pilot.pause()
        assert not isinstance(app.screen, SessionPicker)
        cells = app.query_one(ConversationView).cells
        assert cells[0].title == "fix the flaky test then push"
