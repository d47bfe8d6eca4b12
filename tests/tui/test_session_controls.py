"""Session controls against a real session (scripted LLM server, local runtime, real bash) —
issue 23: ctrl+n ends the old session before the new one shows anything of it (item 5); F9
says "pausing…" at once (item 9); ctrl+n reads the config again, and a broken one is refused
with the old one kept (item 11); `/diff` and `/resume ID` on a real session's log (item 8)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import is_showing, waiter

from workbench.config.load import load_config
from workbench.config.schema import Config
from workbench.events import StateChangedEvent
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.diff import DiffScreen
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.status import StatusBar

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
FINISH = {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]}

_until = waiter(60)
WAIT_FOR_GO = "echo waiting; until [ -e go ]; do sleep 0.1; done; echo slept"
"""A command that runs until the test says go."""


def _bash(command: str) -> dict[str, Any]:
    call = {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
    return {"tool_calls": [call]}


def _env(tmp_path: Path, server: ScriptedLLMServer) -> dict[str, str]:
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "ws").mkdir(exist_ok=True)
    return {
        **server.llm_env(),
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
    }


def _app(config: Config, tmp_path: Path) -> tuple[WorkbenchApp, ControllerBackend]:
    backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
    app = create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
    )
    return app, backend


async def _send(pilot: Any, text: str) -> None:
    prompt = pilot.app.query_one(PromptInput)
    prompt.focus()
    prompt.load_text(text)
    prompt.move_cursor(prompt.document.end)
    await pilot.press("enter")


def _ended(log: Path) -> bool:
    states = [e.state for e in read(log).events if isinstance(e, StateChangedEvent)]
    return bool(states) and states[-1] == "stopped"


@pytest.mark.timeout(120)
async def test_ctrl_n_on_a_running_session_shows_nothing_of_it_after(tmp_path: Path) -> None:
    """Item 5: the old session's `■ stopped · interrupted` row headed the new conversation and
    the status bar said `stopped · step 0/100`."""
    with ScriptedLLMServer({"steps": [_bash(WAIT_FOR_GO)], "default": FINISH}) as server:
        config = load_config(
            env=_env(tmp_path, server), overrides={"sandbox.workspace": str(tmp_path / "ws")}
        )
        app, backend = _app(config, tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            status, shell = app.query_one(StatusBar), app.query_one(ShellPane)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await _send(pilot, "wait a while")
            await _until(pilot, lambda: "\nwaiting" in shell.output.text(), "the command")
            old = backend.current_log()
            assert old is not None
            await pilot.press("ctrl+n")
            await _until(pilot, lambda: backend.session is None and _ended(old), "its end")
            await _until(pilot, lambda: status.data.sandbox == "ready", "the new sandbox")
            await pilot.pause()
            cells = app.query_one(ConversationView).cells
            assert not [c.title for c in cells if "stopped" in c.title + c.body]
            assert status.data.state == "idle" and "stopped" not in status.render().plain
            assert "until [" not in shell.output.text()
            await app.action_quit()
        await asyncio.sleep(0)


@pytest.mark.timeout(120)
async def test_f9_says_pausing_at_once(tmp_path: Path) -> None:
    """Item 9: the status said "running" until the step ended (~35 s of a long command)."""
    script = {"steps": [_bash(WAIT_FOR_GO)], "default": FINISH}
    with ScriptedLLMServer(script) as server:
        config = load_config(
            env=_env(tmp_path, server), overrides={"sandbox.workspace": str(tmp_path / "ws")}
        )
        app, _ = _app(config, tmp_path)
        async with app.run_test(size=(120, 40)) as pilot:
            status, shell = app.query_one(StatusBar), app.query_one(ShellPane)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await _send(pilot, "sleep a bit")
            await _until(pilot, lambda: "\nwaiting" in shell.output.text(), "the command")
            await pilot.press("f9")
            await pilot.pause()
            assert status.data.state == "running"  # the command still runs...
            assert " pausing… " in status.render().plain  # ...and the bar says what comes
            (tmp_path / "ws" / "go").touch()
            await _until(pilot, lambda: status.data.state == "paused", "the pause")
            assert " paused " in status.render().plain and "slept" in shell.output.text()
            await pilot.press("f9")
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            assert "pausing" not in status.render().plain
            await app.action_quit()
        await asyncio.sleep(0)


def _tools(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


@pytest.mark.timeout(180)
async def test_ctrl_n_reads_the_config_again(tmp_path: Path) -> None:
    """Item 11: after fixing an MCP server's path in the config file, ctrl+n still used the
    old one. A config that no longer loads is refused, and the old one stays."""
    cfg = tmp_path / "cfg" / "config.toml"
    script = {"steps": [_bash("echo hi > made.txt"), FINISH, FINISH], "default": FINISH}
    with ScriptedLLMServer(script) as server:
        env = _env(tmp_path, server)
        cfg.write_text('[mcp.servers.demo]\ncommand = ["/nonexistent/demo-server"]\n')
        config = load_config(cfg, env, {"sandbox.workspace": str(tmp_path / "ws")})
        app, backend = _app(config, tmp_path)
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await _send(pilot, "make a file")
            await _until(pilot, lambda: status.data.state == "finished", "the first task")
            assert "mcp__demo__picture" not in _tools(server.requests[-1])
            first = backend.current_log()
            assert first is not None
            # /diff: what the session changed.
            await _send(pilot, "/diff")
            await _until(pilot, lambda: is_showing(app, DiffScreen), "the diff")
            assert isinstance(app.screen, DiffScreen)
            assert "made.txt" in app.screen.diff and "+hi" in app.screen.diff
            await pilot.press("escape")
            # A broken config: said, and the one in use stays.
            cfg.write_text('[mcp.servers.demo]\ncommand = "not a list"\n')
            await pilot.press("ctrl+n")
            await pilot.pause()
            errors = [str(n.message) for n in app._notifications if n.severity == "error"]
            assert any("not read again" in e and str(cfg) in e for e in errors), errors
            assert config.mcp.servers["demo"].command == ["/nonexistent/demo-server"]
            # Fixed: the next session has the server's tools.
            cfg.write_text(f'[mcp.servers.demo]\ncommand = ["{sys.executable}", "{DEMO}"]\n')
            await _send(pilot, "/new")
            await pilot.pause()
            assert backend.config.mcp.servers["demo"].command[-1] == str(DEMO)
            await _send(pilot, "draw")
            await _until(pilot, lambda: status.data.state == "finished", "the second task")
            assert "mcp__demo__picture" in _tools(server.requests[-1])
            # /resume ID: the first session, read-only until a message continues it.
            await _send(pilot, f"/resume {first.stem}")
            await _until(pilot, lambda: app.saved is not None, "the first session shown")
            assert app.saved is not None and app.saved.path == first
            assert status.data.mark == "read-only"
            await app.action_quit()
        await asyncio.sleep(0)


@pytest.mark.timeout(120)
async def test_ctrl_n_gives_back_a_task_that_waits_for_start_up(tmp_path: Path) -> None:
    """Item 5: a task sent before start-up was done started after ctrl+n, in the new session's
    view; it goes back into the input box instead, and no session begins."""
    from workbench.session.start_checks import StartQuestion

    with ScriptedLLMServer({"steps": [], "default": FINISH}) as server:
        config = load_config(
            env=_env(tmp_path, server), overrides={"sandbox.workspace": str(tmp_path / "ws")}
        )
        app, backend = _app(config, tmp_path)
        app.initial_task = "count the files"  # as `workbench -t TASK` sends it
        # Start-up waits for this answer, so the task surely waits.
        app.start_questions = [StartQuestion("Go on?", "A question before start-up.", "Yes")]
        async with app.run_test(size=(120, 40), notifications=True) as pilot:
            status, prompt = app.query_one(StatusBar), app.query_one(PromptInput)
            conversation = app.query_one(ConversationView)
            await _until(pilot, lambda: "Starting once" in conversation.empty_text, "the wait")
            app.action_new_session()
            await pilot.pause()
            assert "Starting once" not in conversation.empty_text
            await pilot.press("y")  # the sandbox starts now
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await _until(pilot, lambda: prompt.text == "count the files", "the task back")
            assert backend.session is None and server.requests == []
            assert status.data.state == "idle" and not conversation.cells
            await app.action_quit()
        await asyncio.sleep(0)
