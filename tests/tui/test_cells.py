"""Cells for events that need more than one line of thought: agent text beside a tool call,
and workbench's own warnings (stuck detection), which must not look like the agent talking."""

from __future__ import annotations

from sandbox.protocol import CmdRunAction
from workbench.events import ActionEvent, ConfirmationDecisionEvent, LLMWaitEvent, MessageEvent
from workbench.tui.cells import cell_for_event, decision_title, thought_cell


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
    assert cell.role != "agent" and cell.icon == "⚠" and cell.inline and cell.expanded


def test_output_line_count_does_not_count_the_final_newline() -> None:
    from sandbox.protocol import CmdOutputObservation
    from workbench.events import ObservationEvent

    def title(content: str) -> str:
        obs = CmdOutputObservation(command="ls", content=content, exit_code=0)
        cell = cell_for_event(ObservationEvent(id=3, cause=2, tool_call_id="c", observation=obs))
        assert cell is not None
        return cell.title

    assert title("hi.sh\n") == "exit 0 · 1 line · hi.sh"
    assert title("a\nb") == "exit 0 · 2 lines · b"  # output often ends with its summary
    assert title("") == "exit 0 · 0 lines"


def test_a_failed_command_is_titled_by_its_last_line() -> None:
    from sandbox.protocol import CmdOutputObservation
    from workbench.events import ObservationEvent

    obs = CmdOutputObservation(
        command="bash hi.sh; ls /nope",
        content="hello\nls: cannot access '/nope': No such file or directory\n",
        exit_code=2,
    )
    cell = cell_for_event(ObservationEvent(id=3, cause=2, tool_call_id="c", observation=obs))
    assert cell is not None and cell.role == "error"
    assert cell.title == "exit 2 · 2 lines · ls: cannot access '/nope': No such file or directory"


def test_finish_shows_its_message_once_and_the_state_line_only_the_outcome() -> None:
    from workbench.events import FinishAction, StateChangedEvent

    message = "hi.sh prints **hi**.\n\n- created `hi.sh`\n- ran it"
    finish = ActionEvent(
        id=7, tool_name="finish", tool_call_id="c9", action=FinishAction(message=message)
    )
    cell = cell_for_event(finish, live=True)
    assert cell is not None and cell.expanded and cell.body == message
    assert cell.inline  # the body is drawn from the title row on: the message shows once
    state = StateChangedEvent(id=8, state="finished", reason=f"success: {message}")
    line = cell_for_event(state)
    assert line is not None and line.title == "finished · success"  # the message is above
    assert cell.title == "hi.sh prints hi."  # a title is plain text, not Markdown


def test_markdown_titles_are_plain() -> None:
    from workbench.tui.cells import plain_line

    assert plain_line("Done: `hi.sh` now prints **hello**.") == "Done: hi.sh now prints hello."
    assert plain_line("## Summary\nmore") == "Summary"
    assert plain_line("see [the docs](https://x.y/z)") == "see the docs"
    assert plain_line("edit `__init__.py`, 2 * 3") == "edit __init__.py, 2 * 3"


def test_a_failed_jupyter_cell_is_titled_by_its_error_not_its_first_output() -> None:
    from sandbox.protocol import IPythonObservation
    from workbench.events import ObservationEvent

    traceback = (
        "3.141592653589793\n"
        "\x1b[0;31m-------------------------------------------------------\x1b[0m\n"
        "ZeroDivisionError                         Traceback (most recent call last)\n"
        "----> 3 1/0\n\n"
        "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero\n"
    )

    def cell(obs: IPythonObservation) -> tuple[str, str, str]:
        made = cell_for_event(ObservationEvent(id=3, cause=2, tool_call_id="c", observation=obs))
        assert made is not None
        return made.role, made.icon, made.title

    failed = IPythonObservation(code="1/0", content=traceback, error=True)
    assert cell(failed) == ("error", "✗", "ZeroDivisionError: division by zero")
    ok = IPythonObservation(code="print(1)", content="1\n")
    assert cell(ok) == ("observation", "Out", "1")


def test_a_decision_names_its_rule_only_where_the_reason_does_not() -> None:
    def title(approved: bool, rule: str, reason: str) -> str:
        event = ConfirmationDecisionEvent(
            id=2, cause=1, approved=approved, rule=rule, reason=reason
        )
        return decision_title(event)

    assert title(True, "user", "approved in the TUI") == "approved in the TUI"
    assert title(False, "user", "") == "rejected"
    assert (
        title(True, "allow:run:rm -rf build*", "always allowed in the TUI")
        == "always allowed in the TUI (allow:run:rm -rf build*)"
    )
    assert (
        title(
            True,
            "allow:run:git *, allow:run:ls*",
            "each of its commands matches an allow rule ('run:git *', 'run:ls*')",
        )
        == "approved · each of its commands matches an allow rule ('run:git *', 'run:ls*')"
    )
    assert (
        title(False, "deny:run:curl*", "matches the deny rule 'run:curl*'")
        == "rejected · matches the deny rule 'run:curl*'"
    )
    assert (
        title(True, "headless:on-confirm=approve", "approved without asking (--on-confirm approve)")
        == "approved without asking (--on-confirm approve)"
    )


def test_a_long_wait_for_the_model_is_a_line_in_the_conversation() -> None:
    wait = LLMWaitEvent(id=4, model="openai/m", waited_s=20.0, deadline_s=300.0)
    cell = cell_for_event(wait, live=True)
    assert cell is not None and cell.role == "state"
    assert cell.title == "waiting for openai/m · no answer after 20 s · gives up at 300 s"
    endless = cell_for_event(LLMWaitEvent(id=5, model="openai/m", waited_s=10.5))
    assert endless is not None and endless.title.endswith("after 10.5 s")


def test_a_condensation_is_a_cell_with_its_figures_and_summary() -> None:
    from workbench.events import CondensationEvent

    event = CondensationEvent(
        id=40,
        reason="refused",
        elided=[4, 7, 10],
        summary="Reports 1-5 were printed.",
        summarized_from=2,
        summarized_to=18,
        tokens_before=17_000,
        tokens_after=7_000,
        window=16_000,
    )
    cell = cell_for_event(event)
    assert cell is not None
    assert cell.title == (
        "condensed history (after the provider refused a request for its length): "
        "17000 → 7000 tokens of 16000, 3 outputs elided, events 2-18 summarised"
    )
    assert "Reports 1-5 were printed." in cell.body


def test_the_instructions_read_are_a_cell() -> None:
    from workbench.events import InstructionsEvent

    event = InstructionsEvent(
        id=1, files=["AGENTS.md"], chars=120, notes=["repo.md was not read: it is binary"]
    )
    cell = cell_for_event(event)
    assert cell is not None
    assert cell.title == (
        "project instructions: AGENTS.md (120 characters); repo.md was not read: it is binary"
    )
