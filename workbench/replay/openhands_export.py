"""Our sessions written as OpenHands V0 trajectories (`export_openhands`), the format
`openhands.py` reads: messages, actions and their observations, state changes; paths under the
session's workspace moved to `/workspace`. Events OpenHands has no kind for (LLM calls,
confirmations, `set_env`, tools registered at run time) are left out."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
    Event,
    FinishAction,
    MessageEvent,
    ObservationEvent,
    RejectedObservation,
    StateChangedEvent,
    ThinkAction,
    ThinkObservation,
)
from workbench.replay.openhands import EDIT_FIELDS, OPENHANDS_WORKSPACE, STATES


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).replace(tzinfo=None).isoformat()


def _to_openhands_path(path: str, workspace: str) -> str:
    if workspace and (path == workspace or path.startswith(workspace.rstrip("/") + "/")):
        return OPENHANDS_WORKSPACE + path[len(workspace.rstrip("/")) :]
    return path


def _action_item(event: ActionEvent, workspace: str) -> dict[str, Any] | None:
    action = event.action
    args: dict[str, Any]
    if isinstance(action, CmdRunAction):
        kind, message = "run", f"Running command: {action.command}"
        args = {"command": action.command, "is_input": action.is_input, "blocking": False}
    elif isinstance(action, FileEditAction):
        path = _to_openhands_path(action.path, workspace)
        if action.command == "view":
            kind, message = "read", f"Reading file: {path}"
            args = {"path": path, "start": 0, "end": -1, "view_range": action.view_range}
        else:
            kind, message = "edit", f"Editing file: {path}"
            args = {"command": action.command, "path": path, "content": "", "start": 1, "end": -1}
            args |= {k: getattr(action, k) for k in EDIT_FIELDS}
        args["impl_source"] = "oh_aci"
    elif isinstance(action, IPythonAction):
        kind, message = "run_ipython", f"Running Python code interactively: {action.code}"
        args = {"code": action.code, "include_extra": True, "kernel_init_code": ""}
    elif isinstance(action, BrowseAction):
        kind, message = "browse_interactive", f"Interacting with browser: {action.action}"
        args = {"browser_actions": action.action, "browsergym_send_msg_to_user": ""}
    elif isinstance(action, ThinkAction):
        kind, message, args = "think", action.thought, {}
    elif isinstance(action, FinishAction):
        kind, message = "finish", action.message
        completed = "false" if action.outcome == "gave_up" else "true"
        args = {"final_thought": action.message, "task_completed": completed, "outputs": {}}
    else:
        return None  # set_env and run-time tools have no OpenHands action
    args["thought"] = action.thought if isinstance(action, ThinkAction) else event.thought
    item: dict[str, Any] = {"action": kind, "args": args}
    if isinstance(action, CmdRunAction) and action.timeout is not None:
        item["timeout"] = action.timeout
    item["message"] = message
    metadata = {"function_name": event.tool_name, "tool_call_id": event.tool_call_id}
    item["tool_call_metadata"] = metadata | {"model_response": {}, "total_calls_in_response": 1}
    return item


def _observation_item(event: ObservationEvent, workspace: str) -> dict[str, Any] | None:
    obs = event.observation
    extras: dict[str, Any]
    if isinstance(obs, CmdOutputObservation):
        kind, content = "run", obs.content
        cwd = _to_openhands_path(obs.cwd or "", workspace)
        metadata = {"exit_code": obs.exit_code, "pid": -1, "working_dir": cwd or None}
        extras = {"command": obs.command, "metadata": metadata, "hidden": False}
        message = f"Command `{obs.command}` executed with exit code {obs.exit_code}."
    elif isinstance(obs, FileEditObservation):
        path = _to_openhands_path(obs.path, workspace)
        kind = "read" if obs.command == "view" else "edit"
        content, message = obs.content, f"I read the file {path}." if kind == "read" else ""
        extras = {"path": path, "impl_source": "oh_aci"}
        if kind == "edit":
            message = f"I edited the file {path}."
            extras |= {"diff": obs.diff or "", "prev_exist": obs.command != "create"}
    elif isinstance(obs, IPythonObservation):
        kind, content, message = "run_ipython", obs.content, "Code executed in IPython cell."
        extras = {"code": obs.code, "image_urls": None}
    elif isinstance(obs, BrowseObservation):
        kind, content, message = "browse", obs.content, f"Visited {obs.url}"
        extras = {"url": obs.url, "error": bool(obs.error), "screenshot": ""}
    elif isinstance(obs, ThinkObservation):
        kind, content, message, extras = "think", obs.content, obs.content, {}
    elif isinstance(obs, ErrorObservation | RejectedObservation):
        kind, content, message, extras = "error", obs.content, obs.content, {}
    else:
        return None
    return {"message": message, "observation": kind, "content": content, "extras": extras}


def trajectory_of(events: list[Event], workspace: str) -> list[dict[str, Any]]:
    """Our events as OpenHands trajectory items (paths under `workspace` moved to
    `/workspace`); events OpenHands has no kind for (LLM calls, confirmations, set_env,
    run-time tools) are left out."""
    items: list[dict[str, Any]] = []
    ids: dict[int, int] = {}
    for event in events:
        body: dict[str, Any] | None = None
        if isinstance(event, MessageEvent):
            body = {"message": event.text, "action": "message"}
            body["args"] = {"content": event.text, "image_urls": None, "wait_for_response": False}
        elif isinstance(event, ActionEvent):
            body = _action_item(event, workspace)
        elif isinstance(event, ObservationEvent) and event.cause in ids:
            body = _observation_item(event, workspace)
            if body is not None:
                body["cause"] = ids[event.cause]
        elif isinstance(event, StateChangedEvent):
            state = next((k for k, v in STATES.items() if v == event.state), event.state)
            body = {"message": "", "observation": "agent_state_changed", "content": ""}
            body["extras"] = {"agent_state": state, "reason": event.reason}
        if body is None:
            continue
        number = len(items)
        ids[event.id] = number
        head = {"id": number, "timestamp": _iso(event.timestamp), "source": event.source}
        items.append(head | body)
    return items


def export_openhands(log_path: Path, out: Path) -> int:
    """Write the session log at `log_path` as an OpenHands V0 trajectory to `out`; returns
    the number of trajectory events written."""
    from workbench.session.log import read

    loaded = read(log_path)
    items = trajectory_of(loaded.events, loaded.header.workspace)
    out.write_text(json.dumps(items, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(items)
