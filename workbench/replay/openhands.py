"""OpenHands V0 trajectories (the JSON `save_trajectory_path` writes) read as our events
(`openhands_export.py` writes ours in that format).

A trajectory is a JSON list of events: `id` (with gaps), `timestamp` (ISO, no zone), `source`
(`user`/`agent`/`environment`), `message`, then either `action` + `args` or `observation` +
`content` + `extras` (+ `cause`, the action's id). Edits come in two styles: later files carry
`command`, `path`, `file_text` ... in `args`; early-2025 files leave `args.content` empty and
keep the real call only in `translated_ipython_code`, `print(file_editor(**{...}))`, which is
read with `ast.literal_eval`, never run. Exit codes are in `extras.metadata.exit_code` (older
files: `extras.exit_code`). Kinds with nothing to show (`system`, `recall`, `null`) are left
out; an unknown kind, or an event that does not fit its kind, is skipped with a note.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

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
)
from workbench.events import (
    ActionEvent,
    AgentState,
    AnyAction,
    AnyObservation,
    Event,
    FinishAction,
    MessageEvent,
    ObservationEvent,
    RejectedObservation,
    StateChangedEvent,
    ThinkAction,
    ThinkObservation,
)

OPENHANDS_WORKSPACE = "/workspace"
"""Where OpenHands' sandbox keeps the workspace; a re-run maps it to its own."""
_SILENT_KINDS = frozenset({"system", "recall", "null"})
"""Known kinds with nothing to play: the system prompt, memory recalls, empty observations."""
STATES: dict[str, AgentState] = {
    "init": "idle",
    "running": "running",
    "awaiting_user_input": "awaiting_user",
    "awaiting_user_confirmation": "awaiting_confirmation",
    "paused": "paused",
    "stopped": "stopped",
    "finished": "finished",
    "rejected": "stopped",
    "error": "error",
}
_TOOL_NAMES = {
    "run": "execute_bash",
    "run_ipython": "execute_ipython_cell",
    "read": "str_replace_editor",
    "write": "str_replace_editor",
    "edit": "str_replace_editor",
    "browse": "browser",
    "browse_interactive": "browser",
    "think": "think",
    "finish": "finish",
}
EDIT_FIELDS = ("file_text", "old_str", "new_str", "insert_line", "view_range")


class _Skip(Exception):
    """This event is left out; the message says why."""


def trajectory_items(data: Any) -> list[Any]:
    """The events of a loaded trajectory file (a list, or a dict holding one as
    `trajectory`); ValueError for anything else."""
    if isinstance(data, dict) and isinstance(data.get("trajectory"), list):
        data = data["trajectory"]
    if not isinstance(data, list):
        raise ValueError(
            f"an OpenHands trajectory is a JSON list of events; this is a {type(data).__name__}"
        )
    return data


def model_of(items: list[Any]) -> str:
    """The model named in the trajectory's LLM metrics ("openhands" when none is)."""
    for item in items:
        metrics = item.get("llm_metrics") if isinstance(item, dict) else None
        if isinstance(metrics, dict):
            usage = metrics.get("accumulated_token_usage")
            if isinstance(usage, dict) and usage.get("model"):
                return str(usage["model"])
    return "openhands"


class _Reader:
    """Turns trajectory items into our events, keeping which action each observation answers."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.notes: list[str] = []
        self.actions: dict[Any, ActionEvent] = {}  # trajectory id -> our action event
        self.effects: dict[int, str] = {}
        """Our action id -> the edited file's content after it (`extras.new_content`)."""

    def take(self, index: int, item: Any) -> None:
        where = f"event {item.get('id', index) if isinstance(item, dict) else index}"
        try:
            if not isinstance(item, dict):
                raise _Skip(f"not a JSON object ({type(item).__name__})")
            if "action" in item:
                event = self._action(item)
            elif "observation" in item:
                event = self._observation(item)
            else:
                raise _Skip("neither an action nor an observation")
        except _Skip as why:
            if str(why):
                self.notes.append(f"{where} skipped: {why}")
            return
        except (ValidationError, TypeError, ValueError) as exc:
            first = str(exc).splitlines()[0]
            self.notes.append(f"{where} skipped: it does not fit its kind ({first})")
            return
        self.events.append(event)
        if isinstance(event, ActionEvent):
            self.actions[item.get("id")] = event

    def _next_id(self) -> int:
        return len(self.events) + 1

    def _common(self, item: dict[str, Any]) -> dict[str, Any]:
        source = item.get("source")
        return {
            "id": self._next_id(),
            "timestamp": _timestamp(item.get("timestamp")),
            "source": source if source in ("user", "agent", "environment") else "environment",
        }

    def _action(self, item: dict[str, Any]) -> Event:
        kind = str(item["action"])
        args = item.get("args") or {}
        if not isinstance(args, dict):
            raise _Skip("its args are not an object")
        common = self._common(item)
        if kind in _SILENT_KINDS:
            raise _Skip("")
        if kind == "message":
            text = str(args.get("content") or item.get("message") or "")
            return MessageEvent(**common, text=text)
        if kind == "change_agent_state":
            return _state_event(common, args.get("agent_state"))
        make = _ACTIONS.get(kind)
        if make is None:
            raise _Skip(f"unknown action kind {kind!r}")
        action = make(args, item)
        metadata = item.get("tool_call_metadata") or {}
        call_id = metadata.get("tool_call_id") if isinstance(metadata, dict) else None
        name = metadata.get("function_name") if isinstance(metadata, dict) else None
        return ActionEvent(
            **common,
            tool_name=str(name or _TOOL_NAMES[kind]),
            tool_call_id=str(call_id or f"openhands_{item.get('id', common['id'])}"),
            action=action,
            thought=str(args.get("thought") or ""),
        )

    def _observation(self, item: dict[str, Any]) -> Event:
        kind = str(item["observation"])
        extras = item.get("extras") or {}
        if not isinstance(extras, dict):
            raise _Skip("its extras are not an object")
        common = self._common(item)
        if kind in _SILENT_KINDS:
            raise _Skip("")
        if kind == "agent_state_changed":
            return _state_event(common, extras.get("agent_state"))
        make = _OBSERVATIONS.get(kind)
        if make is None:
            raise _Skip(f"unknown observation kind {kind!r}")
        action = self.actions.get(item.get("cause"))
        if action is None:
            raise _Skip(f"it answers no action read before it (cause {item.get('cause')!r})")
        content = item.get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        observation = make(text, extras, action.action)
        changed = isinstance(action.action, FileEditAction) and action.action.command != "view"
        if changed and kind in ("edit", "write") and isinstance(extras.get("new_content"), str):
            self.effects[action.id] = extras["new_content"]
        return ObservationEvent(
            **common | {"source": "environment"},
            cause=action.id,
            tool_call_id=action.tool_call_id,
            observation=observation,
        )


def events_from_trajectory(items: list[Any]) -> tuple[list[Event], list[str]]:
    """Our events for a trajectory's items, and a note for each item skipped."""
    events, notes, _ = read_trajectory_items(items)
    return events, notes


def read_trajectory_items(items: list[Any]) -> tuple[list[Event], list[str], dict[int, str]]:
    """Our events for a trajectory's items, a note for each item skipped, and the content each
    edit left its file with (by our action id; what a re-run compares the edit by)."""
    reader = _Reader()
    for index, item in enumerate(items):
        reader.take(index, item)
    return reader.events, reader.notes, reader.effects


def _timestamp(value: Any) -> float:
    """An ISO time without a zone (OpenHands writes UTC) as seconds since the epoch."""
    if isinstance(value, int | float):
        return float(value)
    try:
        parsed = datetime.fromisoformat(str(value))
    except ValueError:
        return 0.0
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _state_event(common: dict[str, Any], state: Any) -> Event:
    ours = STATES.get(str(state))
    if ours is None:
        raise _Skip("")  # loading, rate_limited ...: nothing our states say
    return StateChangedEvent(**common | {"source": "environment"}, state=ours)


# ---------------------------------------------------------------------- actions


def editor_call(code: str) -> dict[str, Any]:
    """The arguments of `print(file_editor(**{...}))` (or `file_editor(k=v, ...)`), read with
    `ast` and `literal_eval`: nothing in `code` is run."""
    try:
        tree = ast.parse(code, mode="exec")
    except SyntaxError as exc:
        raise ValueError(f"translated_ipython_code does not parse: {exc.msg}") from None
    calls = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "file_editor"
    ]
    if len(calls) != 1 or calls[0].args:
        raise ValueError("translated_ipython_code holds no single file_editor(...) call")
    args: dict[str, Any] = {}
    for keyword in calls[0].keywords:
        try:
            value = ast.literal_eval(keyword.value)
        except ValueError:
            raise ValueError(
                "translated_ipython_code gives file_editor more than plain values (never run)"
            ) from None
        if keyword.arg is None:  # **{...}
            if not isinstance(value, dict):
                raise ValueError("file_editor(**...) is not given a dict")
            args.update(value)
        else:
            args[keyword.arg] = value
    return args


def _edit_action(args: dict[str, Any], item: dict[str, Any]) -> FileEditAction:
    call = {k: args.get(k) for k in ("command", "path", *EDIT_FIELDS)}
    if not call.get("command") and args.get("translated_ipython_code"):
        call = editor_call(str(args["translated_ipython_code"]))
    if not call.get("command"):
        raise _Skip("an edit by line range and content (the LLM editor) cannot be re-run")
    fields = {k: call[k] for k in EDIT_FIELDS if call.get(k) is not None}
    return FileEditAction(command=call["command"], path=str(call["path"]), **fields)


def _run_action(args: dict[str, Any], item: dict[str, Any]) -> CmdRunAction:
    timeout = item.get("timeout") or args.get("timeout")
    return CmdRunAction(
        command=str(args.get("command", "")),
        is_input=str(args.get("is_input", "false")).lower() == "true",
        timeout=float(timeout) if timeout else None,
    )


def _read_action(args: dict[str, Any], item: dict[str, Any]) -> FileEditAction:
    view_range = args.get("view_range")
    return FileEditAction(command="view", path=str(args["path"]), view_range=view_range or None)


def _write_action(args: dict[str, Any], item: dict[str, Any]) -> FileEditAction:
    return FileEditAction(
        command="create", path=str(args["path"]), file_text=str(args.get("content", ""))
    )


def _finish_action(args: dict[str, Any], item: dict[str, Any]) -> FinishAction:
    message = args.get("final_thought") or args.get("message") or item.get("message") or ""
    completed = str(args.get("task_completed", "true")).lower()
    return FinishAction(
        message=str(message), outcome="gave_up" if completed == "false" else "success"
    )


_ACTIONS: dict[str, Callable[[dict[str, Any], dict[str, Any]], AnyAction]] = {
    "run": _run_action,
    "run_ipython": lambda args, item: IPythonAction(code=str(args["code"])),
    "read": _read_action,
    "write": _write_action,
    "edit": _edit_action,
    "browse": lambda args, item: BrowseAction(action=f"goto({str(args['url'])!r})"),
    "browse_interactive": lambda args, item: BrowseAction(action=str(args["browser_actions"])),
    "think": lambda args, item: ThinkAction(thought=str(args.get("thought", ""))),
    "finish": _finish_action,
}


# ---------------------------------------------------------------------- observations


def exit_code_of(extras: dict[str, Any]) -> int:
    """The exit code an OpenHands `run` observation carries (-1 when it has none)."""
    metadata = extras.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("exit_code"), int):
        return int(metadata["exit_code"])
    code = extras.get("exit_code")
    return code if isinstance(code, int) else -1


def _run_observation(text: str, extras: dict[str, Any], action: AnyAction) -> AnyObservation:
    metadata = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
    cwd = metadata.get("working_dir") if isinstance(metadata, dict) else None
    code = exit_code_of(extras)
    return CmdOutputObservation(
        command=str(extras.get("command", getattr(action, "command", ""))),
        content=text,
        exit_code=code,
        cwd=str(cwd) if cwd else None,
        running=code == -1,
    )


def _edit_observation(text: str, extras: dict[str, Any], action: AnyAction) -> AnyObservation:
    command = action.command if isinstance(action, FileEditAction) else "view"
    path = str(extras.get("path") or getattr(action, "path", ""))
    diff = extras.get("diff")
    return FileEditObservation(
        command=command, path=path, content=text, diff=diff if isinstance(diff, str) else None
    )


def _ipython_observation(text: str, extras: dict[str, Any], action: AnyAction) -> AnyObservation:
    code = str(extras.get("code", getattr(action, "code", "")))
    return IPythonObservation(code=code, content=text)


def _browse_observation(text: str, extras: dict[str, Any], action: AnyAction) -> AnyObservation:
    error = extras.get("error")
    return BrowseObservation(
        action=str(getattr(action, "action", "")),
        url=str(extras.get("url", "")),
        content=text,
        error=text if error is True else (str(error) if error else None),
    )


_OBSERVATIONS: dict[str, Callable[[str, dict[str, Any], AnyAction], AnyObservation]] = {
    "run": _run_observation,
    "run_ipython": _ipython_observation,
    "read": _edit_observation,
    "write": _edit_observation,
    "edit": _edit_observation,
    "browse": _browse_observation,
    "error": lambda text, extras, action: ErrorObservation(content=text),
    "think": lambda text, extras, action: ThinkObservation(content=text),
    "user_rejected": lambda text, extras, action: RejectedObservation(content=text),
}
