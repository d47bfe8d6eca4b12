"""Continuing saved sessions in the TUI: Ctrl-O shows one read-only, typing resumes it; "branch
here" on a cell starts a linked session from that point. Scripted LLM server, real local
sandbox, the real backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import is_showing, waiter
from textual.widgets import OptionList

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.config.load import load_config
from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.session.log import SessionLog, make_header, read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.branch import BranchScreen
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PLACEHOLDER, PromptInput
from workbench.tui.widgets.status import StatusBar

SID = "20260301-101500-abc123"
MODEL = "openai/test-model"
GONE = "The shell's state did not survive"
FINISH = {"tool_calls": [{"name": "finish", "arguments": {"message": "continued"}}]}


def _config(tmp_path: Path, base_url: str) -> Config:
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "ws").mkdir(exist_ok=True)
    env = {
        "LLM_MODEL": MODEL,
        "LLM_BASE_URL": base_url,
        "LLM_API_KEY": "test-key-123456",
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
    }
    overrides = {"sandbox.workspace": str(tmp_path / "ws"), "session.dir": str(tmp_path / "s")}
    return load_config(env=env, overrides=overrides)


def _saved_session(tmp_path: Path, workspace: str = "ws") -> Path:
    """A finished session: the task, two commands and their results, the finish."""
    (tmp_path / workspace).mkdir(exist_ok=True)
    log = SessionLog.create(tmp_path / "s", make_header(SID, str(tmp_path / workspace), MODEL))
    steps: list[Any] = [
        StateChangedEvent(id=1, state="running"),
        MessageEvent(id=2, source="user", text="read the notes"),
    ]
    for n, (call, output) in enumerate((("c1", "first-note"), ("c2", "second-result"))):
        base = 3 + 3 * n
        steps += [
            LLMCallEvent(
                id=base,
                model=MODEL,
                prompt_tokens=100,
                completion_tokens=10,
                cost=0.01,
                latency_ms=5,
            ),
            ActionEvent(
                id=base + 1,
                tool_name="execute_bash",
                tool_call_id=call,
                action=CmdRunAction(command=f"echo {output}"),
            ),
            ObservationEvent(
                id=base + 2,
                cause=base + 1,
                tool_call_id=call,
                observation=CmdOutputObservation(content=output, command="echo", exit_code=0),
            ),
        ]
    steps.append(StateChangedEvent(id=9, state="finished", reason="success"))
    for event in steps:
        log.append(event)
    log.close()
    return log.path


def _app(tmp_path: Path, server: ScriptedLLMServer) -> WorkbenchApp:
    config = _config(tmp_path, server.base_url)
    backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
    return create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
    )


_until = waiter(60)


def _keys(text: str) -> list[str]:
    return ["space" if char == " " else char for char in text]


def _contents(request: dict[str, Any]) -> list[str]:
    return [str(message.get("content") or "") for message in request["messages"]]


def _has(contents: list[str], text: str) -> bool:
    return any(text in content for content in contents)


async def _open_with_ctrl_o(pilot: Any, app: WorkbenchApp) -> None:
    await pilot.press("ctrl+o")
    await _until(pilot, lambda: app.screen.query(OptionList), "the session picker")
    app.screen.query_one(OptionList).highlighted = 0
    await pilot.press("enter")
    await _until(pilot, lambda: app.saved is not None, "the session to open")


def _status_line(app: WorkbenchApp) -> str:
    return app.query_one(StatusBar).render().plain


@pytest.mark.timeout(180)
async def test_ctrl_o_is_read_only_and_typing_resumes_it_then_branch_the_live_one(
    tmp_path: Path,
) -> None:
    saved = _saved_session(tmp_path)
    with ScriptedLLMServer({"steps": [FINISH, FINISH], "default": {"text": "ok"}}) as server:
        app = _app(tmp_path, server)
        async with app.run_test(size=(140, 40)) as pilot:
            status = app.query_one(StatusBar)
            prompt = app.query_one(PromptInput)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await _open_with_ctrl_o(pilot, app)
            # Marked read-only where the person looks: the status bar and the input box.
            assert _status_line(app).lstrip().startswith("READ-ONLY")
            assert str(prompt.placeholder).startswith(f"Read-only: saved session {SID}")
            assert status.data.steps == 2
            prompt.focus()
            await pilot.press(*_keys("go on please"), "enter")
            await _until(pilot, lambda: server.requests, "the first request")
            contents = _contents(server.requests[0])
            assert contents[1] == "read the notes"
            assert _has(contents, "first-note") and _has(contents, "second-result")
            assert any(GONE in text and f"resumed from session {SID}" in text for text in contents)
            assert contents[-1] == "go on please"
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            # The mark is gone, the numbers are the resumed session's (history + 1 step).
            assert status.data.mark == "" and str(prompt.placeholder) == PLACEHOLDER
            assert "READ-ONLY" not in _status_line(app)
            assert status.data.steps == 3
            backend = app.backend
            assert isinstance(backend, ControllerBackend) and backend.session is not None
            resumed_log = backend.session.path
            assert read(resumed_log).header.parent_id == SID
            assert any("Resuming session" in n.message for n in app._notifications)

            # Branch the live (resumed) session at its "go on please" message, from the palette.
            view = app.query_one(ConversationView)
            index = next(i for i, c in enumerate(view.cells) if c.title == "go on please")
            view.action_cursor_to(index)
            app.action_branch_here()
            assert status.data.mark == "branch"
            assert str(prompt.placeholder).startswith("Branch of ")
            assert view.cells[-1].title == "go on please"  # the view ends at the branch point
            prompt.focus()
            await pilot.press(*_keys("another way"), "enter")
            await _until(pilot, lambda: len(server.requests) == 2, "the branch's request")
            contents = _contents(server.requests[1])
            assert contents.count("go on please") == 1 and contents[-1] == "another way"
            assert any("branched from session" in text for text in contents)
            assert backend.session is not None and backend.session.path != resumed_log
            header = read(backend.session.path).header
            assert header.parent_id == resumed_log.stem
            assert saved.exists()
            await app.action_quit()


@pytest.mark.timeout(180)
async def test_b_on_a_cell_branches_a_saved_session_there(tmp_path: Path) -> None:
    _saved_session(tmp_path)
    with ScriptedLLMServer({"steps": [FINISH], "default": {"text": "ok"}}) as server:
        app = _app(tmp_path, server)
        async with app.run_test(size=(140, 40)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await _open_with_ctrl_o(pilot, app)
            view = app.query_one(ConversationView)
            # The first command's cell: branching there keeps its result, not the second's.
            index = next(i for i, c in enumerate(view.cells) if c.key == "e4")
            view.focus()
            view.action_cursor_to(index)
            # Typing that begins with "b" is typing: asked, and the letters go on to the box.
            await pilot.press("b", "u", "i")
            await pilot.pause()
            assert status.data.mark == "read-only" and not isinstance(app.screen, BranchScreen)
            prompt = app.query_one(PromptInput)
            await _until(pilot, lambda: prompt.text == "bui", "the letters in the input box")
            prompt.clear()
            view.focus()
            view.action_cursor_to(index)
            await pilot.press("b")
            await _until(pilot, lambda: is_showing(app, BranchScreen), "the question")
            await pilot.press("y")
            await _until(pilot, lambda: status.data.mark == "branch", "the branch")
            assert _status_line(app).lstrip().startswith("BRANCH")
            assert "at event 5" in str(app.query_one(PromptInput).placeholder)
            app.query_one(PromptInput).focus()
            await pilot.press(*_keys("try otherwise"), "enter")
            await _until(pilot, lambda: server.requests, "the first request")
            contents = _contents(server.requests[0])
            assert "read the notes" in contents and _has(contents, "first-note")
            assert not _has(contents, "second-result")
            assert not any("echo second" in str(m) for m in server.requests[0]["messages"])
            assert contents[-1] == "try otherwise"
            backend = app.backend
            assert isinstance(backend, ControllerBackend) and backend.session is not None
            header = read(backend.session.path).header
            assert (header.parent_id, header.parent_event) == (SID, 5)
            await app.action_quit()


async def test_resume_from_the_command_line_shows_the_session_then_continues_it(
    tmp_path: Path,
) -> None:
    from workbench.testing.fake_backend import FakeBackend

    saved = _saved_session(tmp_path)
    config = _config(tmp_path, "http://127.0.0.1:9")
    for task, expected in (("", []), ("carry on", [(saved, "carry on", None)])):
        backend = FakeBackend()
        app = create_app(
            config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path
        )
        app.initial_session, app.initial_task = saved, task
        async with app.run_test(size=(120, 40)) as pilot:
            view = app.query_one(ConversationView)
            await _until(
                pilot,
                lambda v=view, t=task, b=backend: v.cells and (not t or b.continued),
                "the history on screen (and the task sent on)",
            )
            assert backend.continued == expected
            assert view.cells[0].title == "read the notes"  # the history is on screen
            marked = app.query_one(StatusBar).data.mark
            assert marked == ("read-only" if not task else "")
            await app.action_quit()


async def test_a_saved_session_shows_its_own_images(tmp_path: Path) -> None:
    from workbench.testing.fake_backend import FakeBackend

    saved = _saved_session(tmp_path)
    folder = saved.with_name(f"{SID}.files")
    folder.mkdir()
    (folder / "plot.png").write_bytes(b"\x89PNG stored")
    config = _config(tmp_path, "http://127.0.0.1:9")
    backend = FakeBackend({"live.png": b"from the backend"})
    app = create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path
    )
    async with app.run_test(size=(120, 40)) as pilot:
        app.open_session_file(saved)
        view = app.query_one(ConversationView)
        await _until(pilot, lambda: view.cells, "the saved session on screen")
        assert await app.load_artifact("plot.png") == b"\x89PNG stored"
        assert await app.load_artifact("live.png") == b"from the backend"
        await app.action_quit()


@pytest.mark.timeout(120)
async def test_a_session_whose_workspace_is_gone_stays_read_only_and_keeps_the_text(
    tmp_path: Path,
) -> None:
    saved = _saved_session(tmp_path, "old")
    (tmp_path / "old").rmdir()
    with ScriptedLLMServer({"steps": [FINISH]}) as server:
        app = _app(tmp_path, server)
        async with app.run_test(size=(140, 40)) as pilot:
            app.open_session_file(saved)
            prompt = app.query_one(PromptInput)
            prompt.focus()
            await pilot.press(*_keys("go on"), "enter")
            errors = lambda: [n for n in app._notifications if "no longer exists" in n.message]  # noqa: E731
            await _until(pilot, errors, "the error")
            assert str(tmp_path / "old") in errors()[0].message
            assert app.saved is not None and app.query_one(StatusBar).data.mark == "read-only"
            assert prompt.text == "go on"
            assert not server.requests
            await app.action_quit()
