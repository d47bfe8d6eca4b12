"""A whole session driven through the TUI: scripted LLM server, real local runtime and bash.

Typing a task, live shell output before the command ends, a queued message, an interrupt from
the shell pane, a rejected and an approved confirmation, and the finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from pilot_wait import waiter
from tui_support import controller_events, scripted_config

from workbench.config.schema import Config
from workbench.events import ConfirmationDecisionEvent, MessageEvent
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.messages import PromptSubmitted
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.status import StatusBar

SLOW_LOOP = "for i in 1 2 3 4 5 6 7 8 9 10; do echo tick$i; sleep 0.2; done"


def _bash(command: str, risk: str = "LOW") -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "execute_bash", "arguments": {"command": command, "security_risk": risk}}
        ]
    }


SCRIPT = {
    "steps": [
        _bash(SLOW_LOOP),
        _bash("sleep 30"),
        _bash("rm -rf ./build-output", "HIGH"),
        _bash("echo approved-$((6*7))", "HIGH"),
        {"tool_calls": [{"name": "finish", "arguments": {"message": "All done."}}]},
    ],
    "default": {"text": "nothing more"},
}


def _config(tmp_path: Path, base_url: str) -> Config:
    overrides = {
        "security.confirmation": "risky",
        "security.risk_threshold": "HIGH",
        "sandbox.soft_timeout_s": 1.0,
    }
    return scripted_config(tmp_path, base_url, overrides)


def _sleeping() -> bool:
    """A `sleep 30` runs in this test's sandbox (a descendant of this process)."""
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.cmdline() == ["sleep", "30"]:
                return True
    return False


_until = waiter(30)


def _keys(text: str) -> list[str]:
    return ["space" if char == " " else char for char in text]


def _shell_text(app: WorkbenchApp) -> str:
    return app.query_one(ShellPane).output.text()


def _events(app: WorkbenchApp) -> list[Any]:
    return controller_events(app)


@pytest.mark.timeout(120)
async def test_whole_session_through_the_tui(tmp_path: Path) -> None:
    with ScriptedLLMServer(SCRIPT) as server:
        config = _config(tmp_path, server.base_url)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(
            config,
            backend,
            clock=lambda: 0.0,
            image_mode="halfcell",
            user_themes=tmp_path / "themes",
        )
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
            # Type the task into the input box and send it.
            await pilot.click("#prompt")
            await pilot.press(*_keys("count the ticks"))
            await pilot.press("enter")
            # Live output: the first lines show while the loop still runs.
            shell = app.query_one(ShellPane)
            await _until(pilot, lambda: "tick2" in _shell_text(app), "live output", 60)
            assert "tick10" not in _shell_text(app)
            assert shell.state == "running"
            # A message typed while the agent works is queued.
            app.query_one(PromptInput).focus()
            await pilot.press(*_keys("also be brief"))
            await pilot.press("enter")
            await _until(pilot, lambda: "tick10" in _shell_text(app), "the loop's end")
            # The next command hangs; the agent's soft timeout (1 s here) hands it back, and the
            # pane soon shows the agent's next command: wait on the process, which stays.
            await _until(pilot, _sleeping, "sleep 30 to start")
            assert "$ sleep 30" in _shell_text(app)
            app.query_one("#shell-input").focus()
            await pilot.press("ctrl+c")
            await _until(pilot, lambda: not _sleeping(), "the interrupt", 15)
            # A risky command asks; reject it.
            panel = app.query_one(ConfirmPanel)
            await _until(pilot, lambda: panel.request is not None, "a confirmation")
            assert panel.has_class("-shown")
            await pilot.press("n")
            # The next one: approve it, and it runs.
            await _until(pilot, lambda: panel.request is not None, "a second confirmation")
            await pilot.press("y")
            await _until(pilot, lambda: "approved-42" in _shell_text(app), "the approved run")
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            events = _events(app)
            texts = [e.text for e in events if isinstance(e, MessageEvent) and e.source == "user"]
            assert texts == ["count the ticks", "also be brief"]
            decisions = [e.approved for e in events if isinstance(e, ConfirmationDecisionEvent)]
            assert decisions == [False, True]
            assert not (tmp_path / "ws" / "build-output").exists()
            sent = [m.get("content") for r in server.requests for m in r["messages"]]
            assert "also be brief" in sent
            await app.action_quit()
        await asyncio.sleep(0)


@pytest.mark.timeout(120)
async def test_ctrl_c_in_the_shell_pane_interrupts_at_once(tmp_path: Path) -> None:
    script = {"steps": [_bash("sleep 30")], "default": {"text": "ok"}}
    with ScriptedLLMServer(script) as server:
        config = _config(tmp_path, server.base_url)
        config.sandbox.soft_timeout_s = 25.0
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(
            config,
            backend,
            clock=lambda: 0.0,
            image_mode="halfcell",
            user_themes=tmp_path / "themes",
        )
        async with app.run_test(size=(120, 40)) as pilot:
            shell = app.query_one(ShellPane)
            app.post_message(PromptSubmitted("sleep a while"))
            await _until(pilot, lambda: shell.state == "running", "sleep 30 to start", 60)
            await _until(pilot, _sleeping, "the sleep process itself", 30)
            app.query_one("#shell-input").focus()
            started = time.monotonic()
            await pilot.press("ctrl+c")
            try:
                await _until(pilot, lambda: shell.state != "running", "the interrupt", 8)
                assert time.monotonic() - started < 8
                assert shell.exit_code == 130
            finally:
                await app.action_quit()


def _app_for(tmp_path: Path, server: ScriptedLLMServer) -> WorkbenchApp:
    config = _config(tmp_path, server.base_url)
    backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
    return create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
    )


async def _queue_while_the_llm_thinks(pilot: Any, app: WorkbenchApp, server: Any) -> None:
    prompt = app.query_one(PromptInput)
    app.post_message(PromptSubmitted("write the notes"))
    await _until(pilot, lambda: len(server.requests) == 1, "the first LLM request", 60)
    prompt.focus()
    await pilot.press(*_keys("also add a title"), "enter")
    await _until(pilot, lambda: prompt.queued == ["also add a title"], "the queued note")
    assert "queued for the agent's next step: also add a title" in str(prompt.border_title)


@pytest.mark.timeout(120)
async def test_a_message_queued_as_the_agent_finishes_becomes_the_next_task(
    tmp_path: Path,
) -> None:
    finish = {"tool_calls": [{"name": "finish", "arguments": {"message": "Notes written."}}]}
    script = {"steps": [{**finish, "held": True}], "default": {"text": "Title added."}}
    with ScriptedLLMServer(script) as server:
        app = _app_for(tmp_path, server)
        async with app.run_test(size=(120, 40)) as pilot:
            await _queue_while_the_llm_thinks(pilot, app, server)
            server.release()  # the agent finishes with the note queued
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: len(server.requests) == 2, "the follow-up request")
            await _until(pilot, lambda: status.data.state == "awaiting_user", "the reply")
            events = _events(app)
            texts = [e.text for e in events if isinstance(e, MessageEvent) and e.source == "user"]
            assert texts == ["write the notes", "also add a title"]
            last = server.requests[1]["messages"][-1]
            assert last == {"role": "user", "content": "also add a title"}
            prompt = app.query_one(PromptInput)
            assert prompt.queued == [] and not prompt.border_title
            await app.action_quit()


@pytest.mark.timeout(120)
async def test_a_message_queued_when_the_agent_is_stopped_goes_back_to_the_input_box(
    tmp_path: Path,
) -> None:
    script = {"steps": [{"text": "late", "held": True}], "default": {"text": "ok"}}
    with ScriptedLLMServer(script) as server:
        app = _app_for(tmp_path, server)
        async with app.run_test(size=(120, 40)) as pilot:
            await _queue_while_the_llm_thinks(pilot, app, server)
            prompt = app.query_one(PromptInput)
            await pilot.press("f10")  # stop
            await _until(pilot, lambda: prompt.text == "also add a title", "the text's return")
            assert prompt.queued == [] and not prompt.border_title
            assert len(server.requests) == 1
            await app.action_quit()


RACE_SCRIPT = {
    "steps": [
        _bash("echo one"),
        {"tool_calls": [{"name": "finish", "arguments": {"message": "Both read."}}]},
    ],
    "default": {"text": "nothing more"},
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("when", ["before start-up ends", "while the session opens"])
async def test_two_tasks_sent_at_once_make_one_session_and_one_run(
    tmp_path: Path, when: str
) -> None:
    with ScriptedLLMServer(RACE_SCRIPT) as server:
        config = _config(tmp_path, server.base_url)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(
            config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
        )
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)
            if when == "while the session opens":
                await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox", 60)
                await _until(pilot, lambda: status.data.llm == "ready", "the LLM client", 60)
            # Both in the same tick: the second arrives while the first waits.
            app.post_message(PromptSubmitted("first task"))
            app.post_message(PromptSubmitted("and a second thought"))
            await _until(pilot, lambda: status.data.state == "finished", "the finish", 90)
            controller = backend.controller
            assert controller is not None
            users = [
                e.text
                for e in controller.events
                if isinstance(e, MessageEvent) and e.source == "user"
            ]
            assert users == ["first task", "and a second thought"]
            runs = [e for e in controller.events if getattr(e, "state", "") == "running"]
            assert len(runs) == 1
            # The agent read both before its first step, in one conversation.
            first = [m["content"] for m in server.requests[0]["messages"] if m["role"] == "user"]
            assert first == ["first task", "and a second thought"]
            assert len(server.requests) == 2
            # The input box no longer says a message is queued.
            assert not app.query_one(PromptInput).queued
            folder = controller.session.path.parent
    assert [path.name for path in folder.glob("*.jsonl")] == [controller.session.path.name]
