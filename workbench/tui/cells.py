"""Compact cells: what one session event looks like in the conversation, as plain data.

A cell has a one-line title (always shown) and a body (shown when expanded) in one of a few
formats; the widget that draws cells (`widgets/cell_list.py`) turns them into rows on demand.
Nothing here imports Textual, so building 10 000 cells costs only the string work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
    SetEnvAction,
    SetEnvObservation,
)
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    FinishAction,
    MessageEvent,
    ObservationEvent,
    RejectedObservation,
    StateChangedEvent,
    ThinkAction,
)

Role = Literal["user", "agent", "action", "observation", "error", "confirm", "state"]
BodyFormat = Literal["markdown", "code", "text"]

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_MD_LINK_RE = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_MD_MARK_RE = re.compile(r"\*\*|`")
_SHOWN_STATES = {"paused", "awaiting_user", "finished", "error", "stopped"}
_EXT_LEXERS = {
    ".py": "python",
    ".sh": "bash",
    ".js": "javascript",
    ".ts": "typescript",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".c": "c",
    ".rs": "rust",
    ".go": "go",
}


def strip_ansi(text: str) -> str:
    """`text` without terminal escape sequences (colours, cursor moves, titles)."""
    return ANSI_RE.sub("", text) if "\x1b" in text else text


@dataclass(eq=False)
class Cell:
    """One row group: a title line, and a body shown when `expanded`."""

    key: str
    role: Role
    icon: str
    title: str
    body: str = ""
    body_format: BodyFormat = "text"
    lexer: str = "text"
    expanded: bool = False
    image: bytes | None = None
    """A PNG drawn below the body (Jupyter output)."""
    label: str = ""
    """Shown instead of the title while expanded (messages, whose body repeats the title)."""

    @property
    def expandable(self) -> bool:
        """True when the body holds more than the title shows."""
        return bool(self.body) or self.image is not None

    def copy_text(self) -> str:
        """The text a person copies out of this cell."""
        return self.body or self.title


def first_line(text: str, limit: int = 200) -> str:
    """The first non-empty line of `text`, cut to `limit` characters."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def last_line(text: str, limit: int = 200) -> str:
    """The last non-empty line of `text`, cut to `limit` characters."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:limit]
    return ""


def plain_line(text: str, limit: int = 200) -> str:
    """The first line of Markdown `text` as a title: no `**`, backticks, heading marks or
    link targets."""
    line = _MD_LINK_RE.sub(r"\1", first_line(text, limit))
    return _MD_MARK_RE.sub("", line.lstrip("#").strip()) or line


def lexer_for_path(path: str) -> str:
    """A Pygments lexer name guessed from a file name."""
    return _EXT_LEXERS.get(PurePosixPath(path).suffix.lower(), "text")


def _action_cell(event: ActionEvent) -> Cell:
    # What the agent said beside the call is a cell of its own (`thought_cell`), not repeated here.
    key, act = f"e{event.id}", event.action
    if isinstance(act, CmdRunAction):
        icon = "⌨" if act.is_input else "$"
        title = first_line(act.command) or "(empty)"
        return Cell(key, "action", icon, title, act.command, "code", "bash")
    if isinstance(act, FileEditAction):
        title = f"{act.command} {act.path}"
        if act.command == "create" and act.file_text is not None:
            return Cell(key, "action", "✎", title, act.file_text, "code", lexer_for_path(act.path))
        if act.command == "str_replace":
            old = "".join(f"-{line}\n" for line in (act.old_str or "").splitlines())
            new = "".join(f"+{line}\n" for line in (act.new_str or "").splitlines())
            return Cell(key, "action", "✎", title, old + new, "code", "diff")
        if act.command == "insert":
            body = f"after line {act.insert_line}:\n{act.new_str or ''}"
            return Cell(key, "action", "✎", title, body, "text")
        return Cell(key, "action", "✎", title)
    if isinstance(act, IPythonAction):
        return Cell(key, "action", "In", first_line(act.code), act.code, "code", "python")
    if isinstance(act, BrowseAction):
        return Cell(key, "action", "@", act.action)
    if isinstance(act, SetEnvAction):
        return Cell(key, "action", "$", f"set env {', '.join(sorted(act.env))}")
    if isinstance(act, ThinkAction):
        return Cell(key, "agent", "…", plain_line(act.thought), act.thought, "markdown")
    assert isinstance(act, FinishAction)
    done = act.outcome == "success"
    return Cell(
        key,
        "agent",
        "✔" if done else "✖",
        plain_line(act.message) or "finished",
        act.message,
        "markdown",
        expanded=True,
        label="finished" if done else "gave up",  # the expanded body repeats the title
    )


def _observation_cell(event: ObservationEvent) -> Cell | None:
    key, obs = f"e{event.id}", event.observation
    if isinstance(obs, CmdOutputObservation):
        content = strip_ansi(obs.content)
        if obs.note:
            content = f"{content}\n[{obs.note}]" if content else f"[{obs.note}]"
        lines = len(content.splitlines())  # "hi\n" is one line
        if obs.running or obs.exit_code == -1:
            icon, state = "…", "running"
        else:
            icon, state = ("✓" if obs.exit_code == 0 else "✗"), f"exit {obs.exit_code}"
        role: Role = "observation" if obs.exit_code in (0, -1) else "error"
        # A failing command usually says why on its last line; other output starts the title.
        shown = last_line(content, 120) if role == "error" else first_line(content, 120)
        title = f"{state} · {lines} line{'s' if lines != 1 else ''} · {shown}"
        return Cell(key, role, icon, title.rstrip(" ·"), content, "text")
    if isinstance(obs, FileEditObservation):
        title = f"{obs.command} {obs.path}"
        if obs.diff:
            return Cell(key, "observation", "✓", title, obs.diff, "code", "diff")
        return Cell(key, "observation", "✓", title, obs.content, "text")
    if isinstance(obs, IPythonObservation):
        content = strip_ansi(obs.content)
        extra = f" · {len(obs.images)} image(s)" if obs.images else ""
        if obs.error:  # a traceback ends with what went wrong: that is the title
            title = (last_line(content) or "the cell failed") + extra
            return Cell(key, "error", "✗", title, content, "text")
        title = (first_line(content) or "(no output)") + extra
        return Cell(key, "observation", "Out", title, content, "text")
    if isinstance(obs, BrowseObservation):
        if obs.error:
            return Cell(key, "error", "@", f"{obs.action}: {first_line(obs.error)}", obs.error)
        return Cell(
            key,
            "observation",
            "@",
            f"{obs.title or obs.url} {obs.url}".strip(),
            obs.content,
            "text",
        )
    if isinstance(obs, ErrorObservation):
        return Cell(
            key, "error", "!", f"{obs.error_kind}: {first_line(obs.content)}", obs.content, "text"
        )
    if isinstance(obs, RejectedObservation):
        return Cell(key, "error", "✗", f"not run: {first_line(obs.content)}", obs.content)
    if isinstance(obs, SetEnvObservation):
        return Cell(key, "observation", "✓", f"set {', '.join(obs.names)}")
    return None  # a thought's acknowledgement says nothing new


def decision_title(event: ConfirmationDecisionEvent) -> str:
    """How a confirmation was answered, naming its rule only where the reason does not."""
    verdict = "approved" if event.approved else "rejected"
    title = event.reason or verdict
    if not title.startswith((verdict, "always allowed", "stopped")):
        title = f"{verdict} · {title}"
    patterns = [part.strip().split(":", 1)[-1] for part in event.rule.split(",")]
    named = event.rule in ("", "user") or event.rule.startswith("headless:")
    if not named and not all(pattern in title for pattern in patterns):
        title += f" ({event.rule})"
    return title


def thought_cell(event: Event, live: bool = False) -> Cell | None:
    """What the agent said alongside a tool call, as its own agent cell (None if nothing)."""
    if not isinstance(event, ActionEvent) or isinstance(event.action, ThinkAction):
        return None
    thought = event.thought.strip()
    if not thought:
        return None
    return Cell(
        f"e{event.id}t",
        "agent",
        "●",
        plain_line(thought),
        thought,
        "markdown",
        label="agent",
        expanded=live and "\n" in thought,
    )


def cell_for_event(event: Event, live: bool = False) -> Cell | None:
    """The cell that shows `event`, or None for events the conversation leaves out.

    `live` cells (events of the running session) open messages and errors expanded; a loaded
    session starts all collapsed, so opening 10 000 events renders only what is on screen.
    """
    key = f"e{event.id}"
    cell: Cell | None
    if isinstance(event, MessageEvent):
        if event.source == "user":
            cell = Cell(key, "user", "❯", first_line(event.text), event.text, "text", label="you")  # noqa: RUF001
            cell.expanded = live and "\n" in event.text.strip()
        elif event.source == "environment":  # workbench itself speaking, e.g. a stuck warning
            cell = Cell(
                key,
                "confirm",
                "⚠",
                first_line(event.text),
                event.text,
                "text",
                label="workbench",
                expanded=live,
            )
        else:
            cell = Cell(
                key,
                "agent",
                "●",
                plain_line(event.text),
                event.text,
                "markdown",
                label="agent",
                expanded=live,
            )
        return cell
    if isinstance(event, ActionEvent):
        return _action_cell(event)
    if isinstance(event, ObservationEvent):
        return _observation_cell(event)
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
    return None  # LLM accounting goes to the status bar
