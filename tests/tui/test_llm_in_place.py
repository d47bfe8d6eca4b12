"""A model call in the conversation, through the real backend, litellm and the scripted
server: a streamed reply shows as it streams with the call's clock beside it (issue 14, defect
5), and a retry is a row of its own, recorded in the session log and shown again on replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter
from tui_support import scripted_config

from workbench.config.schema import Config
from workbench.events import LLMRetryEvent, MessageEvent
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.status import StatusBar

REPLY = " ".join(f"word{n}" for n in range(60))


def _config(tmp_path: Path, base_url: str, **overrides: Any) -> Config:
    return scripted_config(tmp_path, base_url, overrides)


def _debug(pilot: Any) -> list[tuple[str, str]]:
    return [(c.key, c.title) for c in pilot.app.query_one(ConversationView).cells]


_until = waiter(30, step=0.02, explain=lambda pilot: str(_debug(pilot)))


def _last_key(view: ConversationView) -> str:
    return view.cells[-1].key if view.cells else ""


def _texts(view: ConversationView) -> list[str]:
    return [f"{cell.title}\n{cell.body}" for cell in view.cells]


async def _start(app: WorkbenchApp, pilot: Any, task: str) -> None:
    status = app.query_one(StatusBar)
    await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
    await _until(pilot, lambda: status.data.llm == "ready", "the LLM client", 60)
    assert app.backend is not None
    await app.backend.submit(task)


@pytest.mark.timeout(120)
async def test_a_streamed_reply_shows_as_it_streams(tmp_path: Path) -> None:
    # 60 words in pieces of 4 characters, 40 ms apart: ~3 s of streaming.
    step = {"text": REPLY, "stream": True, "chunk_chars": 4, "chunk_delay_s": 0.04}
    with ScriptedLLMServer({"steps": [step]}) as server:
        config = _config(tmp_path, server.base_url, **{"llm.stream": True})
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, image_mode="halfcell", user_themes=tmp_path / "t")
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.query_one(ConversationView)
            await _start(app, pilot, "say many words")
            # Before any text: a row says the model is working, and names it.
            await _until(pilot, lambda: _last_key(view) == "llm-live", "the model-call row")
            assert "openai/test-model" in view.cells[-1].title
            # Part of the reply shows while the rest is still on its way.
            await _until(
                pilot,
                lambda: _last_key(view) == "llm-live" and "word5 " in view.cells[-1].body,
                "streamed text",
            )
            live = view.cells[-1]
            assert live.key == "llm-live" and "word59" not in live.body
            assert live.title.startswith("writing · openai/test-model · ")
            assert live.expanded and live.inline
            # The clock ticks while the reply streams.
            first = live.title
            await _until(pilot, lambda: view.cells[-1].title != first, "the clock to tick", 5)
            # When the reply is complete it is the agent's message, and the row is gone.
            await _until(pilot, lambda: any("word59" in t for t in _texts(view)), "the end")
            await _until(pilot, lambda: _last_key(view) != "llm-live", "the row to go")
            assert sum("word59" in text for text in _texts(view)) == 1
            replies = [cell for cell in view.cells if cell.role == "agent"]
            assert [cell.body for cell in replies] == [REPLY] and replies[0].expanded


@pytest.mark.timeout(120)
async def test_a_retry_is_shown_in_place_recorded_and_replayed(tmp_path: Path) -> None:
    script = {
        "steps": [
            {"error": 503, "headers": {"Retry-After": "0"}},
            {"text": "Back again."},
        ]
    }
    with ScriptedLLMServer(script) as server:
        overrides = {"llm.retry_min_wait_s": 0.3, "llm.retry_max_wait_s": 0.3}
        config = _config(tmp_path, server.base_url, **overrides)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, image_mode="halfcell", user_themes=tmp_path / "t")
        notes: list[str] = []
        async with app.run_test(size=(120, 40)) as pilot:
            app.notify = lambda message, **kw: notes.append(str(message))  # type: ignore[method-assign]
            view = app.query_one(ConversationView)
            await _start(app, pilot, "hello")

            def retry_row() -> bool:
                return any(cell.icon == "↻" for cell in view.cells)

            await _until(pilot, retry_row, "the retry row")
            row = next(cell for cell in view.cells if cell.icon == "↻")
            assert row.title == "model call failed: server error (HTTP 503) · retry 1 in 0.3 s"
            assert "scripted error 503" in row.body  # the provider's own words
            await _until(pilot, lambda: "Back again." in "".join(_texts(view)), "the reply")
            assert not any("retry" in note for note in notes), notes  # no pop-up any more
            log_path = backend.current_log()
            assert log_path is not None
        retries = [e for e in read(log_path).events if isinstance(e, LLMRetryEvent)]
        assert [(e.retry, e.error_kind, e.wait_s) for e in retries] == [(1, "server", 0.3)]
        assert any(isinstance(e, MessageEvent) for e in read(log_path).events)

        # Opened again (replay, Ctrl-O): the retry shows where it happened.
        player = create_app(None, None, image_mode="halfcell", user_themes=tmp_path / "t")
        async with player.run_test(size=(120, 40)) as pilot:
            player.open_session_file(log_path)
            await pilot.pause()
            cells = player.query_one(ConversationView).cells
            icons = [cell.icon for cell in cells]
            assert "↻" in icons and icons.index("↻") < len(icons) - 1
