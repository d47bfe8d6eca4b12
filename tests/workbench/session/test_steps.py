"""The one step numbering (`workbench/session/steps.py`) on a log laid out as the controller writes
one: a reply with two tool calls logs both actions before their results and checkpoints.
The whole path (headless, replay, checkpoints, diff, rewind, TUI) is walked on real runs in
tests/tui/test_step_numbers.py."""

from __future__ import annotations

import io
from pathlib import Path

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.events import (
    ActionEvent,
    CheckpointEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.headless.output import HumanPrinter
from workbench.replay.recording import Recording
from workbench.replay.resume import history_to
from workbench.replay.timeline import Timeline
from workbench.session.steps import StepCounter, last_step, step_numbers, step_reached


def _call(id: int) -> LLMCallEvent:
    return LLMCallEvent(
        id=id, model="m", prompt_tokens=1, completion_tokens=1, cost=0.0, latency_ms=1.0
    )


def _action(id: int, command: str) -> ActionEvent:
    return ActionEvent(
        id=id, tool_name="execute_bash", tool_call_id=f"c{id}", action=CmdRunAction(command=command)
    )


def _result(id: int, cause: int) -> ObservationEvent:
    observation = CmdOutputObservation(command="", content="", exit_code=0, cwd="/ws")
    return ObservationEvent(id=id, cause=cause, tool_call_id=f"c{cause}", observation=observation)


def _checkpoint(id: int, step: int, cause: int | None) -> CheckpointEvent:
    return CheckpointEvent(id=id, step=step, cause=cause, commit=f"{id:040x}")


def session() -> list[Event]:
    """The task; reply 1 with two calls (steps 1, 2); reply 2 with one (step 3); a message."""
    return [
        MessageEvent(id=1, source="user", text="task"),
        StateChangedEvent(id=2, state="running"),
        _call(3),
        _action(4, "echo a > a"),
        _action(5, "echo b > b"),
        _checkpoint(6, 0, None),  # taken before the reply's first action runs
        _result(7, 4),
        _checkpoint(8, 1, 4),
        _result(9, 5),
        _checkpoint(10, 2, 5),
        _call(11),
        _action(12, "echo c > c"),
        _result(13, 12),
        _checkpoint(14, 3, 12),
        _call(15),
        MessageEvent(id=16, source="agent", text="done"),
    ]


def test_each_action_is_a_step_and_its_events_go_with_it() -> None:
    events = session()
    assert step_numbers(events) == [1, 1, 1, 1, 2, 0, 1, 1, 2, 2, 3, 3, 3, 3, 3, 3]
    assert last_step(events) == 3
    # The recorded checkpoint numbers are this numbering's.
    numbers = dict(zip((e.id for e in events), step_numbers(events), strict=True))
    assert all(numbers[e.id] == e.step for e in events if isinstance(e, CheckpointEvent))


def test_a_resumed_session_goes_on_from_its_parents_numbers() -> None:
    events = session()
    counter = StepCounter(events)
    assert counter.see(_action(17, "echo d > d")) == 4
    out = io.StringIO()
    printer = HumanPrinter(out=out)
    printer.skip(events)  # a resumed run's printer is given the earlier events first
    printer.event(_action(17, "echo d > d"))
    assert printer.steps == 4 and out.getvalue() == "[4] $ echo d > d\n"


def test_the_step_reached_at_a_row_waits_for_a_later_calls_result() -> None:
    events = session()
    index = {e.id: i for i, e in enumerate(events)}
    # Kept up to the second call's checkpoint: both calls of reply 1 are done.
    assert step_reached(events, index[10] + 1) == 2
    # Kept up to the first call's checkpoint: the second was asked for, not yet done.
    assert step_reached(events, index[8] + 1) == 1
    assert step_reached(events, index[3] + 1) == 0  # only the task and the model's call


def test_continue_from_a_step_leaves_the_later_calls_of_its_reply_out() -> None:
    events = session()
    recording = Recording(Path("x.jsonl"), "workbench", "s", "m", "/ws", events)
    assert [e.id for e in history_to(recording, 1)] == [1, 2, 3, 4, 6, 7, 8]
    assert [e.id for e in history_to(recording, 0)] == [1, 2, 6]
    assert [e.id for e in history_to(recording, 3)] == [e.id for e in events]


def test_the_player_moves_by_these_steps() -> None:
    line = Timeline(session())
    assert line.last_step == 3
    assert line.jump(1) == 8 and line.step == 1  # through the first call's checkpoint
    assert [e.id for e in line.forward()] == [9, 10] and line.step == 2
    assert line.back() == 8 and line.step == 1
    assert line.jump(3) == len(line.events) and line.at_end


def test_an_imported_environments_own_action_is_no_step() -> None:
    setup = _action(1, "git config user.name x").model_copy(update={"source": "environment"})
    events: list[Event] = [setup, _action(2, "ls")]
    assert step_numbers(events) == [1, 1]
    out = io.StringIO()
    printer = HumanPrinter(out=out)
    for event in events:
        printer.event(event)
    assert out.getvalue() == "[env] $ git config user.name x\n[1] $ ls\n"
