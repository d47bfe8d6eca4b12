""" "Rewind to here" in the TUI: `r` on a cell shows what rewinding the workspace's files to that
step changes and changes nothing until the person says yes; then the files are those of that
step, the session goes on from there as a branch, and the present can be put back.
Scripted LLM server, real local sandbox with checkpoints, the real backend."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import is_showing, waiter
from textual.widgets import Static

from workbench.checkpoints.points import load_checkpoints, open_store, undo_plan
from workbench.config.load import load_config
from workbench.session.log import read
from workbench.session.resume import load_history
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.screens.rewind import RewindScreen
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar


def bash(command: str) -> dict[str, Any]:
    return {
        "tool_calls": [
            {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
        ]
    }


FINISH = {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]}
STEPS = [bash("echo one > a.txt"), bash("echo two > b.txt && rm a.txt"), FINISH, FINISH]


def _app(tmp_path: Path, server: ScriptedLLMServer) -> WorkbenchApp:
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "ws").mkdir(exist_ok=True)
    env = {
        "LLM_MODEL": "openai/test-model",
        "LLM_BASE_URL": server.base_url,
        "LLM_API_KEY": "test-key-123456",
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
    }
    overrides = {"sandbox.workspace": str(tmp_path / "ws"), "session.dir": str(tmp_path / "s")}
    config = load_config(env=env, overrides=overrides)
    backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
    return create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
    )


def _state(pilot: Any) -> str:
    notes = [n.message for n in pilot.app._notifications]
    notes += [repr(w) + str(w.error) for w in pilot.app.workers]
    notes.append(repr(pilot.app.focused))
    return str(notes)


_until = waiter(60, explain=_state)


def _files(ws: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(ws.iterdir()) if p.is_file()}


def _screen_text(app: WorkbenchApp) -> str:
    return "\n".join(str(s.render()) for s in app.screen.query(Static))


@pytest.mark.timeout(180)
async def test_r_on_a_cell_asks_then_rewinds_the_files_and_branches_there(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    with ScriptedLLMServer({"steps": STEPS, "default": {"text": "ok"}}) as server:
        app = _app(tmp_path, server)
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            prompt = app.query_one(PromptInput)
            prompt.focus()
            await pilot.press(*"go", "enter")
            await _until(pilot, lambda: status.data.state == "finished", "the run")
            assert _files(ws) == {"b.txt": "two\n"}
            backend = app.backend
            assert isinstance(backend, ControllerBackend) and backend.session is not None
            log = backend.session.path
            first = next(
                e.id
                for e in read(log).events
                if getattr(e, "kind", "") == "action" and "a.txt" in str(e.action)
            )
            view = app.query_one(ConversationView)
            index = next(i for i, c in enumerate(view.cells) if c.key == f"e{first}")

            # Each action's row says what its step changed; expanded, the diff of the step.
            second = next(i for i, c in enumerate(view.cells) if "rm a.txt" in c.title)
            assert view.cells[second].summary.endswith("files +1 ~0 -1")
            assert view.cells[index].summary.endswith("files +1 ~0 -0")
            view.focus()
            view.action_cursor_to(second)
            await pilot.press("enter")
            shown = "\n".join(section.text for section in view.cells[second].more)
            assert view.cells[second].expanded
            assert "+two" in shown and "-one" in shown and "b/b.txt" in shown
            await pilot.press("enter")

            # Asked first, and "no" (or escape) changes nothing.
            view.focus()
            view.action_cursor_to(index)
            await pilot.press("r")
            await _until(pilot, lambda: is_showing(app, RewindScreen), "the question")
            # The list sits in a scrolling box, mounted a moment after the screen.
            await _until(pilot, lambda: "+ a.txt" in _screen_text(app), "the files listed")
            shown = _screen_text(app)
            assert "Rewind to step 1" in shown
            assert "+ a.txt" in shown and "- b.txt" in shown
            await pilot.press("enter")  # the focus starts on Cancel: a stray Enter is harmless
            await _until(pilot, lambda: not isinstance(app.screen, RewindScreen), "the answer")
            assert _files(ws) == {"b.txt": "two\n"}
            assert status.data.mark == ""

            # Yes: the files of step 1, a branch at that cell, the present kept for --undo.
            view.focus()
            view.action_cursor_to(index)
            await pilot.press("r")
            await _until(pilot, lambda: is_showing(app, RewindScreen), "the question")
            await _until(pilot, lambda: "Rewind to step" in _screen_text(app), "its title")
            await pilot.press("y")
            await _until(pilot, lambda: status.data.mark == "branch", "the branch")
            assert status.data.state == "idle"  # the history was cut mid-run: nothing runs
            assert _files(ws) == {"a.txt": "one\n"}
            upto = load_history(log, first).upto  # the action, its result and checkpoint
            assert f"Branch of {log.stem} at event {upto}" in str(prompt.placeholder)
            await _until(
                pilot,
                lambda: any("Files rewound (+1 ~0 -1)" in n.message for n in app._notifications),
                "the files-rewound toast",
            )
            found = load_checkpoints(log)
            back = undo_plan(found, open_store(found))
            assert back.changes.added == ("b.txt",) and back.changes.deleted == ("a.txt",)

            # Typing goes on from there: a new session linked to the cell's event.
            prompt.focus()
            await pilot.press(*"again", "enter")
            await _until(pilot, lambda: len(server.requests) >= 4, "the branch's request")
            await _until(pilot, lambda: backend.session is not None, "the branch session")
            assert backend.session is not None
            header = read(backend.session.path).header
            assert (header.parent_id, header.parent_event) == (log.stem, upto)
            assert _files(ws) == {"a.txt": "one\n"}  # going on keeps the rewound files

            # A reopened session's rows read their diffs from the same checkpoints.
            await _until(pilot, lambda: status.data.state == "finished", "the branch's end")
            app.open_session_file(log)
            await pilot.pause()
            second = next(i for i, c in enumerate(view.cells) if "rm a.txt" in c.title)
            assert view.cells[second].summary.endswith("files +1 ~0 -1")
            view.focus()
            view.action_cursor_to(second)
            view.cells[second].expanded = False
            await pilot.press("enter")
            shown = "\n".join(section.text for section in view.cells[second].more)
            assert "+two" in shown and "-one" in shown
            await app.action_quit()


@pytest.mark.timeout(120)
async def test_rewinding_without_checkpoints_says_why_and_changes_nothing(tmp_path: Path) -> None:
    with ScriptedLLMServer({"steps": [*STEPS[:1], FINISH]}) as server:
        app = _app(tmp_path, server)
        assert app.config is not None
        app.config.checkpoints.enabled = False
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            app.query_one(PromptInput).focus()
            await pilot.press(*"go", "enter")
            await _until(pilot, lambda: status.data.state == "finished", "the run")
            view = app.query_one(ConversationView)
            view.focus()
            view.action_cursor_to(0)
            await pilot.press("r")
            said = lambda: [n for n in app._notifications if "Cannot rewind" in n.message]  # noqa: E731
            await _until(pilot, said, "the refusal")
            assert "checkpoint" in said()[0].message
            assert not isinstance(app.screen, RewindScreen)
            assert _files(tmp_path / "ws") == {"a.txt": "one\n"}
            await app.action_quit()
