"""Snapshots of how the conversation shows what happened, at 80x24 and 160x48: a long agent
text beside a tool call, an edit with its +/- counts, commands' outcomes, a model call in
flight (and streaming) and a retry. Each test's docstring says what the picture should show.
Update with `--snapshot-update` and look at the SVGs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pilot_wait import waiter
from textual.pilot import Pilot
from tui_support import T0

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    FileEditAction,
    FileEditObservation,
)
from workbench.events import (
    ActionEvent,
    Event,
    LLMActivity,
    LLMRetryEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput

_until = waiter(30)
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
MODEL = "openai/test-model"
LONG_TASK = (
    "The nightly build of the parser fails since yesterday's merge. Find out why, fix it with "
    "the smallest change that keeps the public API as it is, and run the parser's tests."
)
LONG_THOUGHT = (
    "The failure comes from `tokenize()`: since the merge it returns a generator, and "
    "`parse_all` indexes into its result. I will look at the call site first, then change "
    "`parse_all` to build a list once, which keeps the public API unchanged.\n\n"
    "- `src/parser.py`: the call site\n- `tests/test_parser.py`: the failing test"
)
DIFF = (
    "--- a/src/parser.py\n+++ b/src/parser.py\n@@ -10,4 +10,5 @@\n def parse_all(text):\n"
    "-    tokens = tokenize(text)\n-    return [parse(tokens[i]) for i in range(len(tokens))]\n"
    "+    tokens = list(tokenize(text))\n+    # tokenize() yields since 2.0\n"
    "+    return [parse(token) for token in tokens]\n"
)


def _action(n: int, action: Any, thought: str = "", tool: str = "execute_bash") -> ActionEvent:
    return ActionEvent(
        id=n, timestamp=T0 + n, tool_name=tool, tool_call_id=f"c{n}", action=action, thought=thought
    )


def _result(n: int, observation: Any) -> ObservationEvent:
    return ObservationEvent(
        id=n, timestamp=T0 + n, cause=n - 1, tool_call_id=f"c{n - 1}", observation=observation
    )


def story() -> list[Event]:
    """A task, a long thought beside a command, an edit, a failed and a passing command."""
    failing = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/ws/src/parser.py", line 12, in parse_all',
            "    return [parse(tokens[i]) for i in range(len(tokens))]",
            "TypeError: object of type 'generator' has no len()",
            "FAILED tests/test_parser.py::test_parse_all",
            "1 failed, 11 passed in 0.41s",
        ]
    )
    return [
        StateChangedEvent(id=1, timestamp=T0, state="running"),
        MessageEvent(id=2, timestamp=T0, source="user", text=LONG_TASK),
        _action(3, CmdRunAction(command="python -m pytest -q tests/test_parser.py"), LONG_THOUGHT),
        _result(4, CmdOutputObservation(command="pytest", content=failing, exit_code=1)),
        _action(
            5,
            FileEditAction(
                command="str_replace",
                path="/ws/src/parser.py",
                old_str="tokens = tokenize(text)",
                new_str="tokens = list(tokenize(text))",
            ),
            tool="str_replace_editor",
        ),
        _result(
            6,
            FileEditObservation(
                command="str_replace", path="/ws/src/parser.py", content="edited", diff=DIFF
            ),
        ),
        _action(7, CmdRunAction(command="git push origin fix-parser")),
        _result(
            8,
            CmdOutputObservation(
                command="git push",
                content="fatal: 'origin' does not appear to be a git repository\n"
                "fatal: Could not read from remote repository.\n\n"
                "Please make sure you have the correct access rights\n"
                "and the repository exists.",
                exit_code=128,
            ),
        ),
        _action(9, CmdRunAction(command="python -m pytest -q tests/test_parser.py")),
        _result(
            10,
            CmdOutputObservation(
                command="pytest", content="............\n12 passed in 0.38s", exit_code=0
            ),
        ),
    ]


async def _show(pilot: Pilot[Any], events: list[Event], expand: int | None = None) -> None:
    app = pilot.app
    assert isinstance(app, WorkbenchApp)
    app.query_one(PromptInput).cursor_blink = False  # a blink must not decide the picture
    for event in events:
        app.feed_event(event)
    await pilot.pause()
    view = app.query_one(ConversationView)
    if expand is not None:
        view.focus()
        view.action_cursor_to(expand)
        view.action_toggle_cell()
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
def test_long_text_beside_a_tool_call(
    snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    """The task and the agent's long thought shown whole, wrapped under their first row (with
    its Markdown list); then one row per action: the failed pytest run titled by its
    exception (`✗ exit 1 · 6 lines · TypeError: ...`), the edit with `+3 -2`, the git push
    by its `fatal:` line, the passing run `✓ exit 0 · 2 lines · 12 passed in 0.38s`."""

    async def before(pilot: Pilot[Any]) -> None:
        await _show(pilot, story())

    assert snap_compare(app_factory(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_an_edit_expanded_shows_its_diff(
    snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    """The edit's row (`str_replace /ws/src/parser.py` … `+3 -2`) expanded under the cursor:
    the diff, highlighted, below it; the other rows as in the story."""

    async def before(pilot: Pilot[Any]) -> None:
        await _show(pilot, story()[:6], expand=3)

    assert snap_compare(app_factory(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_a_failed_command_expanded_shows_its_output(
    snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    """The failed `git push` row, red, titled `✗ exit 128 · 5 lines · fatal: 'origin' does
    not appear ...`, expanded: its whole output below."""

    async def before(pilot: Pilot[Any]) -> None:
        events = story()
        await _show(pilot, [events[1], *events[6:8]], expand=1)

    assert snap_compare(app_factory(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_a_model_call_in_flight(
    snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    """After the task, the last row says `◌ thinking · openai/test-model · 12 s`."""

    async def before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, WorkbenchApp)
        await _show(pilot, story()[:2])
        app.query_one(ConversationView).show_activity(LLMActivity("start", MODEL, -12.0))
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_a_reply_streaming(
    snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    """The reply so far shown whole as it streams (Markdown, a cursor block at its end), then
    `writing · openai/test-model · 3 s` in italics under it."""

    async def before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, WorkbenchApp)
        await _show(pilot, story()[:2])
        view = app.query_one(ConversationView)
        view.show_activity(LLMActivity("start", MODEL, -3.0))
        view.show_activity(LLMActivity("text", MODEL, -3.0, LONG_THOUGHT[:180]))
        streamed = LONG_THOUGHT[:180]  # drawn at the conversation's next tick
        await _until(pilot, lambda: view.cells[-1].body.startswith(streamed), "the reply drawn")
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES)
def test_a_retry(
    snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
) -> None:
    """A red `↻ model call failed: server error (HTTP 503) · retry 1 in 2.0 s` row, then the
    call going on:
    `◌ thinking · openai/test-model · 5 s · retry 1`."""

    async def before(pilot: Pilot[Any]) -> None:
        app = pilot.app
        assert isinstance(app, WorkbenchApp)
        await _show(pilot, story()[:2])
        view = app.query_one(ConversationView)
        view.show_activity(LLMActivity("start", MODEL, -5.0))
        app.feed_event(
            LLMRetryEvent(
                id=3,
                timestamp=T0 + 3,
                model=MODEL,
                retry=1,
                wait_s=2.0,
                error_kind="server",
                message="The LLM server failed for openai/test-model (HTTP 503: overloaded).",
            )
        )
        view.show_activity(LLMActivity("retry", MODEL, -5.0))
        await pilot.pause()

    assert snap_compare(app_factory(), terminal_size=size, run_before=before)
