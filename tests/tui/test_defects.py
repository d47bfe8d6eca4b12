"""Defects a demanding user found in the TUI (issue 14), each driven through Textual's pilot:
stale rows after a new session, a click that toggled the wrong cell, F6/F7 swallowed by the
input box, ctrl+j lost in a burst of keys, a step counter past its limit, the shell pane's
focus and what it carried into a new session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter
from tui_support import image_cell, shot_drawn

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.events import (
    ActionEvent,
    Event,
    MessageEvent,
    ObservationEvent,
)
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.conversation import ConversationView

_until = waiter(30)


def _rows(view: ConversationView) -> list[str]:
    """The conversation's visible rows as text."""
    height = view.scrollable_content_region.height
    return [view.render_line(y).text.rstrip() for y in range(height)]


def _session(task: str, command: str) -> list[Event]:
    return [
        MessageEvent(id=1, source="user", text=task),
        ActionEvent(
            id=2, tool_name="execute_bash", tool_call_id="c1", action=CmdRunAction(command=command)
        ),
        ObservationEvent(
            id=3,
            cause=2,
            tool_call_id="c1",
            observation=CmdOutputObservation(command=command, content="ok", exit_code=0),
        ),
    ]


async def test_a_new_session_shows_none_of_the_previous_sessions_rows(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 1: cells of two sessions share keys (e1, e2 ...): no row of the first may stay."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(ConversationView)
        app.load_events(_session("first task: list the files", "ls -la /first"))
        await pilot.pause()
        assert any("first task" in row for row in _rows(view))
        app.action_new_session()
        app.load_events(_session("second task: count the lines", "wc -l /second"))
        await pilot.pause()
        rows = "\n".join(_rows(view))
        assert "second task" in rows and "wc -l /second" in rows
        assert "first" not in rows, rows


async def test_a_click_on_a_cell_toggles_that_cell(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 4: the pane's border made a click land one row lower, on the next cell."""
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(ConversationView)
        app.load_events(_session("a task", "echo clicked"))
        await pilot.pause()
        rows = _rows(view)
        index = next(i for i, cell in enumerate(view.cells) if "echo clicked" in cell.title)
        row = next(y for y, text in enumerate(rows) if "echo clicked" in text)
        top = view.content_region.y - view.region.y  # the border above the first row
        before = [cell.expanded for cell in view.cells]
        await pilot.click(ConversationView, offset=(4, top + row))
        await pilot.pause()
        assert view.cursor == index
        after = [cell.expanded for cell in view.cells]
        assert after[index] != before[index]  # the clicked cell toggled ...
        assert [e for i, e in enumerate(after) if i != index] == [
            e for i, e in enumerate(before) if i != index
        ]  # ... and no other


async def test_f6_and_f7_act_while_the_input_box_has_the_focus(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 9: the input box has the focus by default; F6 and F7 must still act."""
    from workbench.tui.widgets.prompt import PromptInput

    app = app_factory()
    async with app.run_test(size=(200, 60)) as pilot:
        prompt = app.query_one(PromptInput)
        assert prompt.has_focus
        size = app.tools_size
        await pilot.press("f7")
        await pilot.pause()
        assert app.tools_size == size - 5
        await pilot.press("f8")
        assert app.tools_size == size
        await pilot.press("f6")
        await pilot.pause()
        assert app.screen.maximized is not None
        await pilot.press("f6")
        await pilot.pause()
        assert app.screen.maximized is None


async def test_ctrl_j_in_a_burst_of_keys_lands_where_it_was_typed(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 10: keys that arrive together (as a fast typist's or a terminal's burst) are
    handled in order: ctrl+j makes its line break where it was pressed."""
    from textual import events

    from workbench.tui.widgets.prompt import PromptInput

    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        prompt = app.query_one(PromptInput)
        keys = [*"first", "ctrl+j", *"second", "ctrl+j", *"third"]
        for key in keys:  # all queued before any is handled
            char = key if len(key) == 1 else ("\n" if key == "ctrl+j" else None)
            app.post_message(events.Key(key, char))
        await pilot.pause()
        await pilot.pause()
        assert prompt.text == "first\nsecond\nthird"
        await pilot.press("ctrl+j", "x", "shift+enter", "y")
        assert prompt.text == "first\nsecond\nthird\nx\ny"


def _drawn(lines: list[str]) -> tuple[int, int]:
    """Columns x rows of half-cell blocks among `lines`."""
    rows = [line.count("▀") for line in lines if "▀" in line]
    return (max(rows) if rows else 0), len(rows)


async def test_images_keep_their_aspect_ratio_at_every_size(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 7: a 320x200 chart was drawn 60 columns x 6 rows whatever the room. A cell is
    about twice as tall as wide, so columns / (2 x rows) must stay near 320 / 200."""
    from tui_support import MemoryArtifacts, png

    from sandbox.protocol import IPythonAction, IPythonObservation
    from workbench.tui.widgets.browser import BrowserPane
    from workbench.tui.widgets.jupyter import JupyterPane

    chart = png(320, 200)
    sizes: dict[tuple[int, int], tuple[int, int]] = {}
    for size in ((80, 24), (200, 60)):
        app = app_factory()
        async with app.run_test(size=size) as pilot:
            app.action_show_pane("jupyter")  # opened: at 80x24 the panes are folded
            await pilot.pause()
            jupyter = app.query_one(JupyterPane)
            jupyter.loader = MemoryArtifacts({"chart.png": chart}).load
            app.feed_event(
                ActionEvent(
                    id=1,
                    tool_name="execute_ipython_cell",
                    tool_call_id="c1",
                    action=IPythonAction(code="plot()"),
                )
            )
            obs = IPythonObservation(code="plot()", content="", images=["chart.png"])
            app.feed_event(ObservationEvent(id=2, cause=1, tool_call_id="c1", observation=obs))
            await _until(pilot, lambda j=jupyter: image_cell(j), "the plot in the Jupyter pane")
            image = image_cell(jupyter)
            columns, rows = _drawn([strip.text for strip in jupyter._body(image)])
            assert rows > 6 and abs(columns / (2 * rows) - 1.6) < 0.15, (size, columns, rows)
            sizes[size] = (columns, rows)

            browser = app.query_one(BrowserPane)
            app.action_show_pane("browser")
            await browser.set_screenshot(chart)
            await _until(pilot, lambda b=browser: shot_drawn(b), "the screenshot drawn")
            shot = browser.query_one("#browser-shot")
            lines = [shot.render_line(y).text for y in range(shot.size.height)]
            columns, rows = _drawn(lines)
            assert rows >= 4 and abs(columns / (2 * rows) - 1.6) < 0.2, (size, columns, rows)
            assert columns <= shot.size.width and rows <= shot.size.height
    assert sizes[(200, 60)][0] > sizes[(80, 24)][0]  # more room, a larger picture


async def test_the_step_counter_never_passes_its_limit_and_says_how_to_go_on(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 11 (and friction 6): the limit is per run; a message after the limit starts a
    new run, so the bar counts that run's steps (`step 200/100` was the whole session's). At
    the limit the conversation says that a message goes on and how to raise the limit."""
    from workbench.events import LLMCallEvent, StateChangedEvent
    from workbench.tui.widgets.status import StatusBar

    def call(id: int) -> LLMCallEvent:
        return LLMCallEvent(
            id=id, model="m", prompt_tokens=1, completion_tokens=1, cost=0.0, latency_ms=1.0
        )

    limit = StateChangedEvent(
        id=4, state="stopped", reason="max_iterations: reached the limit of 2 steps"
    )
    first_run: list[Event] = [StateChangedEvent(id=1, state="running"), call(2), call(3), limit]
    app = app_factory()
    async with app.run_test(size=(120, 30)) as pilot:
        status = app.query_one(StatusBar)
        status.set(max_steps=2)
        for event in first_run:
            app.feed_event(event)
        await pilot.pause()
        assert " step 2/2 " in status.render().plain
        view = app.query_one(ConversationView)
        text = "\n".join(_rows(view))
        assert "send a message to go on" in text
        assert "max_iterations" in text and "--max-iterations" in text
        app.feed_event(MessageEvent(id=5, source="user", text="go on"))
        app.feed_event(StateChangedEvent(id=6, state="running"))
        app.feed_event(call(7))
        await pilot.pause()
        assert " step 1/2 " in status.render().plain and status.data.steps == 3
        # A saved session loaded whole counts its last run the same way.
        app.action_new_session()
        app.load_events([*first_run, StateChangedEvent(id=6, state="running"), call(7)])
        await pilot.pause()
        assert " step 1/2 " in status.render().plain


async def test_tab_reaches_the_shell_input_not_its_output_and_ctrl_n_clears_the_shell(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 13: Tab stopped on the shell's output view, where typed text went nowhere (an
    answer to a `read` prompt was lost); after Ctrl-N the header still showed the last
    session's command."""
    from textual.widgets import Input, Static

    from workbench.tui.widgets.shell import ShellPane

    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        shell = app.query_one(ShellPane)
        seen = []
        for _ in range(8):
            await pilot.press("tab")
            seen.append(app.focused)
        in_shell = [widget for widget in seen if widget is not None and shell in widget.ancestors]
        assert in_shell and all(isinstance(widget, Input) for widget in in_shell), seen

        for event in _session("a task", "cd /tmp && echo old-session-output"):
            app.feed_event(event)
        header = shell.query_one("#shell-header", Static)
        await _until(pilot, lambda: "old-session" in str(header.render()), "the old command")
        app.action_new_session()
        await _until(pilot, lambda: "old-session" not in str(header.render()), "a clean header")
        assert "old-session" not in shell.output.text()


async def test_the_shell_pane_wraps_long_lines_and_keeps_notes_for_the_model_out(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Friction 12: a long line was cut at the pane's edge; `[No new output ...]`, a note
    meant for the model, was printed among the output instead of a state in the header."""
    from textual.widgets import Static

    from workbench.tui.widgets.shell import ShellPane

    long_line = " ".join(f"word{n:03d}" for n in range(60))  # ~480 characters
    for size in ((80, 24), (200, 60)):
        app = app_factory()
        async with app.run_test(size=size) as pilot:
            app.action_show_pane("shell")  # opened: at 80x24 the panes are folded
            await pilot.pause()
            shell = app.query_one(ShellPane)
            app.feed_event(
                ActionEvent(
                    id=1,
                    tool_name="execute_bash",
                    tool_call_id="c1",
                    action=CmdRunAction(command="python long.py"),
                )
            )
            shell.output.append(long_line + "\n")
            view = shell.output

            def drawn(view: Any = view) -> list[str]:  # its rows once the wraps are laid out
                lines = [view.render_line(y).text.rstrip() for y in range(view.size.height)]
                return [line for line in lines if line]

            def state(view: Any = view) -> str:
                return f"{drawn()} {view.scroll_y}/{view.max_scroll_y} {view.size} {view.follow}"

            at_end = lambda: drawn() and drawn()[-1].endswith("word059")  # noqa: E731
            await _until(pilot, at_end, "the end", state=state)
            width = view.scrollable_content_region.width
            rows = drawn()
            assert all(len(row) <= width for row in rows)
            if view.row_count <= view.size.height:  # all of it fits: every character shown
                assert "".join(rows[1:]) == long_line, rows
            obs = CmdOutputObservation(
                command="python long.py",
                content="",
                exit_code=-1,
                running=True,
                cwd="/ws",
                note="No new output for 10 s; the command is still running. To continue, ...",
            )
            app.feed_event(ObservationEvent(id=2, cause=1, tool_call_id="c1", observation=obs))
            head = shell.query_one("#shell-header", Static)
            await _until(pilot, lambda h=head: "still running" in str(h.render()), "the header")
            assert "No new output" not in view.text()
            header = str(head.render())
            assert "still running" in header and "/ws" in header


async def test_a_new_session_starts_in_a_fresh_shell(tmp_path: Path) -> None:
    """Defect 13: after Ctrl-N the shell's folder (and whatever else the shell held) carried
    over into the new session."""
    from workbench.config.load import load_config
    from workbench.session.log import read
    from workbench.testing.llm_server import ScriptedLLMServer
    from workbench.tui.app import create_app
    from workbench.tui.bridge import ControllerBackend
    from workbench.tui.widgets.prompt import PromptInput
    from workbench.tui.widgets.status import StatusBar

    def bash(command: str) -> dict[str, Any]:
        call = {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
        return {"tool_calls": [call]}

    finish = {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]}
    script = [bash("cd /tmp && export LEFT=over"), finish, bash("pwd; echo left=$LEFT"), finish]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "cfg").mkdir()
    with ScriptedLLMServer(script) as server:
        env = {
            **server.llm_env(),
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
        }
        config = load_config(env=env, overrides={"sandbox.workspace": str(workspace)})
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(
            config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path
        )
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)

            async def until(check: Callable[[], bool], what: str) -> None:
                await _until(pilot, check, what, 60)

            app.query_one(PromptInput).focus()
            await pilot.press(*"first", "enter")
            await until(lambda: status.data.state == "finished", "the first task")
            first_log = backend.current_log()
            await pilot.press("ctrl+n")
            await until(lambda: backend.session is None, "the new session")
            await pilot.press(*"second", "enter")
            await until(
                lambda: (
                    backend.current_log() not in (None, first_log)
                    and status.data.state == "finished"
                ),
                "the second task",
            )
            log = backend.current_log()
            assert log is not None
            await app.action_quit()
    outputs = [
        event.observation.content
        for event in read(log).events
        if isinstance(event, ObservationEvent)
        and isinstance(event.observation, CmdOutputObservation)
    ]
    assert outputs == [f"{workspace}\nleft=\n"], outputs


async def test_a_reopened_session_shows_its_images_from_its_files_folder(tmp_path: Path) -> None:
    """Defect 8: a reopened session's Jupyter image and browser screenshot were asked of the
    sandbox, which is gone (HTTP 404), and the browser pane showed its URL over a blank pane."""
    from tui_support import make_config, png

    from sandbox.protocol import BrowseAction, BrowseObservation, IPythonAction, IPythonObservation
    from workbench.session.log import SessionLog, make_header
    from workbench.testing.fake_backend import FakeBackend
    from workbench.tui.app import create_app
    from workbench.tui.widgets.browser import BrowserPane
    from workbench.tui.widgets.jupyter import JupyterPane

    sid = "20260301-101500-abc123"
    log = SessionLog.create(tmp_path / "s", make_header(sid, str(tmp_path), "openai/m"))
    url = "http://127.0.0.1:8000/"
    for event in (
        MessageEvent(id=1, source="user", text="chart and page"),
        ActionEvent(
            id=2,
            tool_name="execute_ipython_cell",
            tool_call_id="c1",
            action=IPythonAction(code="p"),
        ),
        ObservationEvent(
            id=3,
            cause=2,
            tool_call_id="c1",
            observation=IPythonObservation(code="p", content="", images=["ipython-1.png"]),
        ),
        ActionEvent(
            id=4,
            tool_name="browser",
            tool_call_id="c2",
            action=BrowseAction(action=f'goto("{url}")'),
        ),
        ObservationEvent(
            id=5,
            cause=4,
            tool_call_id="c2",
            observation=BrowseObservation(
                action=f'goto("{url}")', url=url, title="Demo", screenshot="shot-1.png"
            ),
        ),
    ):
        log.append(event)
    log.close()
    files = tmp_path / "s" / f"{sid}.files"
    files.mkdir()
    (files / "ipython-1.png").write_bytes(png(64, 40))
    (files / "shot-1.png").write_bytes(png(160, 100))
    for task in ("", "go on"):  # Ctrl-O; `--resume ID -t TASK`, which continues it at once
        backend = FakeBackend()  # the sandbox that made them is gone: it has none of them
        app = create_app(
            make_config(), backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path
        )
        app.initial_session, app.initial_task = (log.path, task) if task else (None, "")
        async with app.run_test(size=(160, 48)) as pilot:
            if not task:
                app.open_session_file(log.path)
            jupyter = app.query_one(JupyterPane)
            await _until(pilot, lambda j=jupyter: image_cell(j), "the saved plot shown")
            assert [text for _, text, _ in backend.continued] == ([task] if task else [])
            images = [cell for cell in jupyter.cells if cell.key.startswith("i")]
            assert images and images[0].image is not None, [c.title for c in jupyter.cells]
            app.action_show_pane("browser")
            browser = app.query_one(BrowserPane)
            await _until(pilot, lambda b=browser: shot_drawn(b), "the saved screenshot drawn")
            shots = browser.query("#browser-shot")
            assert shots, "no screenshot drawn"
            shot = shots.first()
            assert shot.size.height > 0 and shot.display
            assert any("▀" in shot.render_line(y).text for y in range(shot.size.height))
            await app.action_quit()


@pytest.mark.timeout(120)
async def test_a_jupyter_cell_s_output_shows_while_it_runs(tmp_path: Path) -> None:
    """Defect 6: a cell printing every second showed nothing until it ended. Real kernel,
    real sandbox stream."""
    from sandbox.protocol import IPythonObservation
    from workbench.config.load import load_config
    from workbench.testing.llm_server import ScriptedLLMServer
    from workbench.tui.app import create_app
    from workbench.tui.bridge import ControllerBackend
    from workbench.tui.widgets.jupyter import JupyterPane
    from workbench.tui.widgets.prompt import PromptInput
    from workbench.tui.widgets.status import StatusBar

    code = (
        "import time\nfor i in range(1, 5):\n    print('tick', i, flush=True)\n    time.sleep(0.7)"
    )
    cell = {"name": "execute_ipython_cell", "arguments": {"code": code, "security_risk": "LOW"}}
    finish = {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "cfg").mkdir()
    with ScriptedLLMServer([{"tool_calls": [cell]}, finish]) as server:
        env = {
            **server.llm_env(),
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        }
        config = load_config(env=env, overrides={"sandbox.workspace": str(workspace)})
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(
            config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path
        )
        results: list[Event] = []
        async with app.run_test(size=(120, 40)) as pilot:
            original = app.feed_event

            def watch(event: Event, live: bool = True) -> None:
                if isinstance(event, ObservationEvent) and isinstance(
                    event.observation, IPythonObservation
                ):
                    results.append(event)
                original(event, live)

            app.feed_event = watch  # type: ignore[method-assign]
            jupyter = app.query_one(JupyterPane)
            status = app.query_one(StatusBar)
            app.query_one(PromptInput).focus()
            await pilot.press(*"count", "enter")
            shown = lambda: any("tick 1" in c.body for c in jupyter.cells)  # noqa: E731
            await _until(pilot, shown, "live output", 60)
            assert not results, "the output came only with the result"
            await _until(pilot, lambda: status.data.state == "finished", "the finish", 60)
            outs = [c for c in jupyter.cells if c.icon == "Out"]
            assert len(outs) == 1 and outs[0].body.splitlines() == [
                f"tick {i}" for i in range(1, 5)
            ]
            await app.action_quit()


async def test_a_maximized_pane_draws_its_image_larger(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """Defect 7, as tried at 80x24: F6 on the Jupyter pane gives the chart the room, its
    aspect ratio kept."""
    from tui_support import MemoryArtifacts, png

    from sandbox.protocol import IPythonAction, IPythonObservation
    from workbench.tui.widgets.jupyter import JupyterPane

    app = app_factory()
    async with app.run_test(size=(80, 40)) as pilot:
        jupyter = app.query_one(JupyterPane)
        jupyter.loader = MemoryArtifacts({"chart.png": png(320, 200)}).load
        action = IPythonAction(code="plot()")
        app.feed_event(
            ActionEvent(id=1, tool_name="execute_ipython_cell", tool_call_id="c1", action=action)
        )
        obs = IPythonObservation(code="plot()", content="", images=["chart.png"])
        app.feed_event(ObservationEvent(id=2, cause=1, tool_call_id="c1", observation=obs))
        await _until(pilot, lambda j=jupyter: image_cell(j), "the plot in the Jupyter pane")
        image = image_cell(jupyter)
        small = _drawn([strip.text for strip in jupyter._body(image)])
        app.action_show_pane("jupyter")
        jupyter.focus()
        await pilot.press("f6")
        await _until(
            pilot,
            lambda: _drawn([strip.text for strip in jupyter._body(image)])[1] > small[1],
            "the plot drawn larger in the maximized pane",
        )
        large = _drawn([strip.text for strip in jupyter._body(image)])
        assert large[1] > small[1] and abs(large[0] / (2 * large[1]) - 1.6) < 0.15, (small, large)


async def test_a_command_refused_as_busy_leaves_the_running_one_in_the_shell_header(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """A user trial (a fork loop the agent left running): its next command was refused
    ("busy"), yet the shell's header said "● running $ echo still alive" for good."""
    from textual.widgets import Static

    from sandbox.protocol import ErrorObservation
    from workbench.tui.widgets.shell import ShellPane

    loop = "for i in $(seq 2000); do sleep 30 & done"
    running = CmdOutputObservation(command=loop, content="[1] 5\n", exit_code=-1, running=True)
    busy = ErrorObservation(error_kind="busy", content="Not executed: `echo alive`. ...")
    events = [
        ActionEvent(
            id=1, tool_name="execute_bash", tool_call_id="c1", action=CmdRunAction(command=loop)
        ),
        ObservationEvent(id=2, cause=1, tool_call_id="c1", observation=running),
        ActionEvent(
            id=3,
            tool_name="execute_bash",
            tool_call_id="c2",
            action=CmdRunAction(command="echo alive"),
        ),
        ObservationEvent(id=4, cause=3, tool_call_id="c2", observation=busy),
    ]
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        shell = app.query_one(ShellPane)
        for event in events:
            app.feed_event(event)
        head = shell.query_one("#shell-header", Static)
        await _until(pilot, lambda: "seq 2000" in str(head.render()), "the running command")
        header = str(head.render())
        assert "still running" in header and "seq 2000" in header, header
        assert "echo alive" not in header, header
        assert f"(not run: `{loop}` is still running)" in shell.output.text()
