"""Compact cells: what one session event looks like in the conversation, as plain data.

A cell has a one-line title (always shown) and a body (shown when expanded) in one of a few
formats; the widget that draws cells (`widgets/cell_list.py`) turns them into rows on demand.
Actions and their results are drawn as their tool says (`Tool.action_cell`,
`Tool.observation_cell`); the `Cell` itself and its text helpers are in `workbench.display`.
Nothing here imports Textual, so building 10 000 cells costs only the string work.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from sandbox.checkpoint_changes import Changes
from workbench.display import (
    BodyFormat,
    Cell,
    Role,
    Section,
    first_line,
    last_line,
    lexer_for_path,
    plain_line,
    strip_ansi,
)
from workbench.event_lines import condensation_line, instructions_line
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    CheckpointEvent,
    CondensationEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    InstructionsEvent,
    LLMActivity,
    LLMRetryEvent,
    LLMWaitEvent,
    MessageEvent,
    NetworkEvent,
    ObservationEvent,
    StateChangedEvent,
)

if TYPE_CHECKING:
    from workbench.tools.registry import ToolRegistry

__all__ = [
    "Cell",
    "Role",
    "cell_for_event",
    "decision_title",
    "first_line",
    "last_line",
    "lexer_for_path",
    "llm_call_cell",
    "plain_line",
    "result_cell",
    "strip_ansi",
    "thought_cell",
]

_HTTP_STATUS = re.compile(r"\bHTTP (\d{3})\b")
_SHOWN_STATES = {"paused", "awaiting_user", "finished", "error", "stopped"}
STEP_LIMIT_HELP = (
    "The step limit is agent.max_iterations. Send a message to go on: "
    "each message starts a new run with the full limit again.\n"
    "To raise the limit: set max_iterations under [agent] in the config file, "
    "or WORKBENCH_AGENT_MAX_ITERATIONS=N, or start with --max-iterations N."
)
"""What the step limit's state cell says, expanded, about going on and raising the limit."""


def decision_title(event: ConfirmationDecisionEvent) -> str:
    """How a confirmation was answered, naming its rule only where the reason does not."""
    verdict = "approved" if event.approved else "rejected"
    title = event.reason or verdict
    if not title.startswith((verdict, "always allowed", "allowed for this", "stopped")):
        title = f"{verdict} · {title}"
    patterns = [part.strip().split(":", 1)[-1] for part in event.rule.split(",")]
    named = event.rule in ("", "user") or event.rule.startswith("headless:")
    if not named and not all(pattern in title for pattern in patterns):
        title += f" ({event.rule})"
    return title


def _tools() -> ToolRegistry:
    """The tool registry: imported at the first cell, not before the first paint (it loads
    every tool and the security analyzer)."""
    from workbench.tools.registry import REGISTRY

    return REGISTRY


def thought_cell(event: Event, live: bool = False) -> Cell | None:
    """What the agent said alongside a tool call, as its own agent cell (None if nothing)."""
    if not isinstance(event, ActionEvent):
        return None
    if not _tools().for_action(event.action).reply_text_cell:
        return None
    thought = event.thought.strip()
    if not thought:
        return None
    return _message(f"e{event.id}t", "agent", "●", thought, "markdown", live)


def _message(key: str, role: Role, icon: str, text: str, form: BodyFormat, live: bool) -> Cell:
    """A message shown whole, wrapped (`inline`); collapsed, its first line."""
    title = plain_line(text) if form == "markdown" else first_line(text)
    return Cell(key, role, icon, title, text, form, expanded=live, inline=True)


def cell_for_event(event: Event, live: bool = False) -> Cell | None:
    """The cell that shows `event`, or None for events the conversation leaves out.

    `live` cells (events of the running session) open messages and errors expanded; a loaded
    session starts all collapsed (the view opens the messages near its end), so opening
    10 000 events renders only what is on screen.
    """
    key = f"e{event.id}"
    if isinstance(event, MessageEvent):
        if event.source == "user":
            return _message(key, "user", "❯", event.text, "text", live)  # noqa: RUF001
        if event.source == "environment":  # workbench itself speaking, e.g. a stuck warning
            return _message(key, "confirm", "⚠", event.text, "text", live)
        return _message(key, "agent", "●", event.text, "markdown", live)
    if isinstance(event, ActionEvent):
        # What the agent said beside the call is a cell of its own (`thought_cell`).
        return _tools().for_action(event.action).action_cell(key, event.action)
    if isinstance(event, ObservationEvent):
        obs = event.observation
        return _tools().for_observation(obs).observation_cell(key, obs)
    if isinstance(event, AgentErrorEvent):
        body = f"{event.content}\n\narguments: {event.arguments}"
        return Cell(
            key,
            "error",
            "!",
            f"bad call to {event.tool_name}: {first_line(event.content)}",
            body,
            "text",
        )
    if isinstance(event, ConfirmationRequestEvent):
        return Cell(key, "confirm", "?", f"needs confirmation · {event.risk} · {event.reason}")
    if isinstance(event, ConfirmationDecisionEvent):
        return Cell(key, "confirm", "✓" if event.approved else "✗", decision_title(event))
    if isinstance(event, StateChangedEvent):
        if event.state not in _SHOWN_STATES:
            return None
        why = event.reason.strip()
        if event.state == "finished":  # "success: <message>": the finish cell shows the message
            why = why.split(":", 1)[0]
        reason = f" · {plain_line(why)}" if why else ""
        if why.startswith("max_iterations"):  # not an end: the person may go on
            return Cell(
                key,
                "state",
                "■",
                f"{event.state.replace('_', ' ')} at the step limit · send a message to go on",
                f"{why.split(':', 1)[-1].strip()}. {STEP_LIMIT_HELP}",
                "text",
                expanded=live,
            )
        return Cell(key, "state", "■", f"{event.state.replace('_', ' ')}{reason}")
    if isinstance(event, ErrorEvent):
        return Cell(
            key,
            "error",
            "!",
            f"{event.error_kind}: {first_line(event.message)}",
            event.message,
            "text",
            expanded=live,
        )
    if isinstance(event, LLMRetryEvent):  # the provider's own words (often JSON) on expand
        status = _HTTP_STATUS.search(event.message)
        what = event.error_kind.replace("_", " ")
        what += f" error (HTTP {status.group(1)})" if status else " error"
        return Cell(
            key,
            "error",
            "↻",
            f"model call failed: {what} · retry {event.retry} in {event.wait_s:.1f} s",
            f"{event.model}: {event.message}",
            "text",
        )
    if isinstance(event, LLMWaitEvent):  # a long wait must not look like nothing happening
        until = f" · gives up at {event.deadline_s:g} s" if event.deadline_s else ""
        return Cell(
            key,
            "state",
            "…",
            f"waiting for {event.model} · no answer after {event.waited_s:g} s{until}",
        )
    if isinstance(event, NetworkEvent) and (event.asked or not event.allowed):
        # A host asked about or refused (reached by a rule: the session log keeps it).
        verdict = "reached" if event.allowed else "refused"
        why = event.rule if event.allowed else event.reason
        return Cell(key, "confirm", "⇄", f"network {event.host}:{event.port} {verdict} · {why}")
    if isinstance(event, CondensationEvent):
        body = f"Summary sent in place of the events it covers:\n\n{event.summary}"
        return Cell(key, "state", "⇣", condensation_line(event), body if event.summary else "")
    if isinstance(event, InstructionsEvent):
        return Cell(key, "state", "§", instructions_line(event))
    return None  # LLM accounting goes to the status bar


def result_cell(
    action: ActionEvent, observation: ObservationEvent, cell: Cell | None = None
) -> Cell | None:
    """One row for an action and its result: the action's cell (`cell`, changed in place, or
    a new one), its outcome at the right (None when the result has no cell: the action's own
    cell stays as it is)."""
    outcome = (
        _tools()
        .for_observation(observation.observation)
        .observation_cell(f"e{observation.id}", observation.observation)
    )
    if outcome is None:
        return None
    tool = _tools().for_action(action.action)
    if cell is None:
        cell = tool.action_cell(f"e{action.id}", action.action)
    return tool.result_cell(cell, action.action, outcome)


def llm_call_cell(activity: LLMActivity, now: float, retries: int = 0) -> Cell:
    """The model call in flight: its model and elapsed time (`now` - start, monotonic), what
    it has streamed so far shown whole."""
    elapsed = max(0.0, now - activity.started)
    again = f" · retry {retries}" if retries else ""
    title = f"{activity.model or 'the model'} · {elapsed:.0f} s{again}"
    if not activity.text:
        return Cell("llm-live", "state", "◌", f"thinking · {title}")
    return Cell(
        "llm-live",
        "agent",
        "●",
        f"writing · {title}",
        f"{activity.text}▌\n\n_writing · {title}_",
        "markdown",
        expanded=True,
        inline=True,
    )


FILES_SHOWN = 50
"""Changed files listed on a row at most; the rest are counted."""
DIFF_LINES = 400
"""Lines of a step's diff shown on its row; `workbench diff` gives the whole."""


def with_files(cell: Cell, event: CheckpointEvent, counts: bool = True) -> None:
    """Add what the step of `event` changed in the workspace to its action's row: file counts
    beside its outcome (when `counts`), the files themselves on expand."""
    changes = Changes(tuple(event.added), tuple(event.changed), tuple(event.deleted))
    lines = changes.lines(FILES_SHOWN)
    if counts:
        files = f"files +{len(event.added)} ~{len(event.changed)} -{len(event.deleted)}"
        cell.summary = f"{cell.summary} · {files}" if cell.summary else files
    listed = "\n".join(lines)
    cell.more = (*cell.more, Section(f"files changed by step {event.step}:\n{listed}"))


def show_diff(
    cell: Cell, diff_of: Callable[[str | None, str], str], before: str | None, after: str
) -> None:
    """Put the diff of the step (checkpoints `before` to `after`) in place of its file list."""
    try:
        text = diff_of(before, after)
    except Exception as exc:  # a store gone or unreadable: the file list stays, with why
        note = f"(the diff could not be read from the checkpoints: {exc})"
        last = cell.more[-1] if cell.more else Section("")
        cell.more = (*cell.more[:-1], Section(f"{last.text}\n{note}"))
        return
    lines = text.splitlines()
    if len(lines) > DIFF_LINES:
        more = len(lines) - DIFF_LINES
        text = "\n".join([*lines[:DIFF_LINES], f"… {more} more lines (`workbench diff`)"])
    if text.strip():
        cell.more = (*cell.more[:-1], Section(text, "code", "diff"))
