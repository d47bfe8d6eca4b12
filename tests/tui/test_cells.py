"""Cells for events that need more than one line of thought: agent text beside a tool call,
and workbench's own warnings (stuck detection), which must not look like the agent talking."""

from __future__ import annotations

from sandbox.protocol import CmdRunAction
from workbench.events import ActionEvent, MessageEvent
from workbench.tui.cells import cell_for_event, thought_cell


def test_agent_text_beside_a_tool_call_gets_its_own_cell() -> None:
    event = ActionEvent(
        id=5,
        source="agent",
        tool_name="execute_bash",
        tool_call_id="c1",
        action=CmdRunAction(command="ls"),
        thought="Let me look around first.",
    )
    thought = thought_cell(event, live=True)
    assert thought is not None and thought.role == "agent"
    assert thought.title == "Let me look around first." and thought.key != "e5"
    action = cell_for_event(event, live=True)
    assert action is not None and action.role == "action" and action.title == "ls"
    silent = event.model_copy(update={"thought": "  "})
    assert thought_cell(silent) is None


def test_a_workbench_warning_is_not_shown_as_the_agent() -> None:
    warning = MessageEvent(
        id=9, source="environment", text="You have run the same failing command 3 times."
    )
    cell = cell_for_event(warning, live=True)
    assert cell is not None
    assert cell.role != "agent" and cell.label == "workbench" and cell.icon == "⚠"
