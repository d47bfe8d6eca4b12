"""One row per action with its outcome, failures titled by their most telling line, messages
shown whole (issue 14, friction 1, 2 and 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
)
from workbench.display import telling_line
from workbench.events import ActionEvent, Event, MessageEvent, ObservationEvent
from workbench.tui.app import create_app
from workbench.tui.widgets.conversation import OPEN_TAIL, ConversationView

GIT_PUSH = (
    "fatal: 'origin' does not appear to be a git repository\n"
    "fatal: Could not read from remote repository.\n\n"
    "Please make sure you have the correct access rights\nand the repository exists.\n"
)
PYTEST = (
    "Traceback (most recent call last):\n"
    '  File "/ws/a.py", line 3, in <module>\n'
    "    main()\n"
    "KeyError: 'config'\n"
    "1 failed, 11 passed in 0.41s\n"
)
DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n-x = 1\n-y = 2\n+x = 10\n+y = 20\n+z = 30\n"


def test_a_failure_is_titled_by_its_most_telling_line() -> None:
    assert telling_line(GIT_PUSH) == "fatal: 'origin' does not appear to be a git repository"
    assert telling_line(PYTEST) == "KeyError: 'config'"
    compiler = "cc -c x.c\nx.c:3:1: error: expected ';'\nmake: *** [x.o] Error 1\n"
    assert telling_line(compiler) == "x.c:3:1: error: expected ';'"
    missing = "starting\nbash: foo: command not found\n"
    assert telling_line(missing) == "bash: foo: command not found"
    assert telling_line("one\ntwo\n") == "two"  # nothing telling: the last line
    assert telling_line("") == ""


def _action(n: int, action: Any, tool: str = "execute_bash", thought: str = "") -> ActionEvent:
    return ActionEvent(id=n, tool_name=tool, tool_call_id=f"c{n}", action=action, thought=thought)


def _result(n: int, observation: Any) -> ObservationEvent:
    return ObservationEvent(id=n, cause=n - 1, tool_call_id=f"c{n - 1}", observation=observation)


def _story() -> list[Event]:
    edit = FileEditAction(command="str_replace", path="/ws/a.py", old_str="x = 1", new_str="x")
    return [
        MessageEvent(id=1, source="user", text="Push the fix."),
        _action(2, CmdRunAction(command="git push origin main"), thought="Pushing now."),
        _result(3, CmdOutputObservation(command="git push", content=GIT_PUSH, exit_code=128)),
        _action(4, edit, tool="str_replace_editor"),
        _result(
            5, FileEditObservation(command="str_replace", path="/ws/a.py", content="", diff=DIFF)
        ),
        _action(6, CmdRunAction(command="python a.py\necho done")),
        _result(7, CmdOutputObservation(command="python a.py", content=PYTEST, exit_code=1)),
        _action(8, IPythonAction(code="print(42)"), tool="execute_ipython_cell"),
        _result(9, IPythonObservation(code="print(42)", content="42\n")),
    ]


def _rows(view: ConversationView) -> list[tuple[str, str, str]]:
    return [(cell.key, cell.title, cell.summary) for cell in view.cells]


async def _check_one_row_per_action(live: bool) -> None:
    app = create_app(None, None, image_mode="halfcell", user_themes=Path("/nonexistent"))
    async with app.run_test(size=(120, 40)) as pilot:
        view = app.query_one(ConversationView)
        if live:
            for event in _story():
                app.feed_event(event)
        else:
            app.load_events(_story())
        await pilot.pause()
        assert _rows(view) == [
            ("e1", "Push the fix.", ""),
            ("e2t", "Pushing now.", ""),
            (
                "e2",
                "git push origin main",
                "✗ exit 128 · 5 lines · fatal: 'origin' does not appear to be a git repository",
            ),
            ("e4", "str_replace /ws/a.py", "+3 −2"),  # noqa: RUF001
            ("e6", "python a.py", "✗ exit 1 · 5 lines · KeyError: 'config'"),
            ("e8", "print(42)", "✓ 1 line · 42"),
        ]
        by_key = {cell.key: cell for cell in view.cells}
        assert by_key["e2"].role == "error" and by_key["e4"].role == "action"
        # Expanded: an edit shows its diff; a command of two lines shows itself, then output.
        assert by_key["e4"].body == DIFF and by_key["e4"].lexer == "diff"
        assert by_key["e6"].body == "python a.py\necho done"
        assert [part.text for part in by_key["e6"].more] == [PYTEST]
        assert by_key["e2"].body == GIT_PUSH.strip("\n") or GIT_PUSH in by_key["e2"].body


async def test_an_action_and_its_result_share_one_row() -> None:
    await _check_one_row_per_action(live=True)


async def test_a_loaded_session_shows_one_row_per_action_too() -> None:
    await _check_one_row_per_action(live=False)


async def test_a_long_message_is_shown_whole_and_wrapped() -> None:
    long = " ".join(f"word{n}" for n in range(80))  # ~550 characters: several rows
    app = create_app(None, None, image_mode="halfcell", user_themes=Path("/nonexistent"))
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(ConversationView)
        app.feed_event(MessageEvent(id=1, source="user", text=long))
        app.feed_event(_action(2, CmdRunAction(command="ls"), thought=long))
        await pilot.pause()
        rows: list[str] = []
        height = view.size.height
        for top in range(0, view.virtual_size.height, height):
            view.scroll_to(y=top, animate=False, immediate=True)
            first = top - round(view.scroll_y)  # the last page may start higher
            rows += ["".join(seg.text for seg in view.render_line(y)) for y in range(first, height)]
        text = " ".join(" ".join(rows).split())
        # Every word of both, nothing cut to one line.
        assert text.count("word79") == 2 and text.count("word40") == 2, rows
        assert view.virtual_size.height >= 2 * (len(long) // view.size.width) + 1


async def test_a_loaded_session_opens_the_messages_near_its_end() -> None:
    events: list[Event] = [
        MessageEvent(id=n, source="agent", text=f"Step {n}.\n\nA second paragraph.")
        for n in range(1, OPEN_TAIL + 51)
    ]
    app = create_app(None, None, image_mode="halfcell", user_themes=Path("/nonexistent"))
    async with app.run_test(size=(80, 24)) as pilot:
        app.load_events(events)
        await pilot.pause()
        cells = app.query_one(ConversationView).cells
        assert not any(cell.expanded for cell in cells[:50])
        assert all(cell.expanded and cell.inline for cell in cells[50:])
