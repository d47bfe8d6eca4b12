"""A tool call from the LLM -> an action, or `ToolCallError` with a text the agent can act on.

Arguments are checked against the same schemas the LLM was given (`agent.tools`), so every
error names the tool, the argument, what was received and what is allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sandbox.protocol import (
    DEFAULT_SOFT_TIMEOUT_S,
    BrowseAction,
    CmdRunAction,
    FileEditAction,
    IPythonAction,
)
from workbench.agent import tools as t
from workbench.events import AnyAction, FinishAction, RiskLevel, ThinkAction

_MAX_ECHO = 200
"""How much of bad arguments an error message repeats back."""


class ToolCallError(Exception):
    """The tool call cannot become an action; `str(error)` is the answer for the agent."""


@dataclass(frozen=True)
class ParsedCall:
    """A valid tool call: the action and the risk the LLM declared (if the tool has one)."""

    action: AnyAction
    security_risk: RiskLevel | None


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_ECHO else text[:_MAX_ECHO] + "..."


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _check(tool: str, name: str, value: Any, spec: dict[str, Any]) -> Any:
    """Validate one argument against its schema; returns the (lightly normalised) value."""
    where = f"argument '{name}' of {tool}"
    kind = spec.get("type")
    if kind == "string" and not isinstance(value, str):
        raise ToolCallError(f"{where} must be a string, got {_type_name(value)}.")
    if kind == "number":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ToolCallError(f"{where} must be a number, got {value!r}.") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolCallError(f"{where} must be a number, got {_type_name(value)}.")
    if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ToolCallError(f"{where} must be an integer, got {_clip(json.dumps(value))}.")
    ints = isinstance(value, list) and all(
        isinstance(item, int) and not isinstance(item, bool) for item in value
    )
    if kind == "array" and not ints:
        raise ToolCallError(f"{where} must be a list of integers, got {_clip(json.dumps(value))}.")
    if "enum" in spec and value not in spec["enum"]:
        allowed = ", ".join(json.dumps(v) for v in spec["enum"])
        raise ToolCallError(f"{where} must be one of {allowed}; got {_clip(json.dumps(value))}.")
    return value


def _arguments(call_name: str, raw: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Decode and validate the arguments of one call against its function schema."""
    try:
        args = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolCallError(
            f"The arguments of {call_name} are not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}): {_clip(raw)!r}. Send a JSON object such as "
            f'{{"command": "ls"}}.'
        ) from None
    if not isinstance(args, dict):
        raise ToolCallError(
            f"The arguments of {call_name} must be a JSON object, got {_type_name(args)}."
        )
    params = schema["function"]["parameters"]
    properties: dict[str, Any] = params["properties"]
    # `security_risk` on a tool without one is harmless: models add it out of habit.
    unknown = sorted(k for k in args if k not in properties and k != "security_risk")
    if unknown:
        raise ToolCallError(
            f"{call_name} has no argument {', '.join(repr(k) for k in unknown)}; "
            f"its arguments are: {', '.join(properties)}."
        )
    missing = [k for k in params["required"] if k not in args or args[k] is None]
    if missing:
        raise ToolCallError(
            f"{call_name} is missing the required argument {', '.join(repr(k) for k in missing)}."
        )
    return {
        name: _check(call_name, name, value, properties[name])
        for name, value in args.items()
        if name in properties and value is not None
    }


def _is_input(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    lowered = str(value).lower()
    if lowered not in ("true", "false"):
        raise ToolCallError(
            f'argument \'is_input\' of execute_bash must be "true" or "false"; '
            f"got {_clip(json.dumps(value))}."
        )
    return lowered == "true"


def _bash(args: dict[str, Any], soft_timeout: float) -> CmdRunAction:
    timeout = args.get("timeout")
    if timeout is not None and timeout <= 0:
        raise ToolCallError(
            f"argument 'timeout' of execute_bash must be more than 0 seconds; got {timeout}."
        )
    return CmdRunAction(
        command=args["command"],
        is_input=_is_input(args.get("is_input", "false")),
        timeout=None if timeout is None else float(timeout),
        soft_timeout=soft_timeout if timeout is None else None,  # `timeout` replaces it
    )


_EDITOR_NEEDS = {
    "create": ("file_text",),
    "str_replace": ("old_str",),
    "insert": ("insert_line", "new_str"),
}


def _editor(args: dict[str, Any]) -> FileEditAction:
    command = args["command"]
    missing = [k for k in _EDITOR_NEEDS.get(command, ()) if k not in args]
    if missing:
        raise ToolCallError(
            f"str_replace_editor {command} needs {' and '.join(repr(k) for k in missing)}."
        )
    view_range = args.get("view_range")
    if view_range is not None and len(view_range) != 2:
        raise ToolCallError(
            f"argument 'view_range' of str_replace_editor must be [first, last]; "
            f"got {json.dumps(view_range)}."
        )
    fields = ("file_text", "old_str", "new_str", "insert_line", "view_range")
    return FileEditAction(
        command=command, path=args["path"], **{k: args[k] for k in fields if k in args}
    )


def parse_tool_call(
    name: str,
    arguments: str,
    tools: list[dict[str, Any]],
    soft_timeout: float = DEFAULT_SOFT_TIMEOUT_S,
) -> ParsedCall:
    """Turn one tool call into an action; raises ToolCallError with the reason otherwise."""
    schemas = {str(s["function"]["name"]): s for s in tools}
    if name not in schemas:
        raise ToolCallError(
            f"There is no tool named {_clip(name)!r}. The tools are: {', '.join(schemas)}."
        )
    args = _arguments(name, arguments, schemas[name])
    risk: RiskLevel | None = args.get("security_risk")
    if risk is not None and risk not in t.RISK_LEVELS:
        # Only reachable for tools whose schema has no `security_risk`.
        raise ToolCallError(
            f"argument 'security_risk' of {name} must be one of LOW, MEDIUM, HIGH; got {risk!r}."
        )
    action: AnyAction
    if name == t.EXECUTE_BASH:
        action = _bash(args, soft_timeout)
    elif name == t.STR_REPLACE_EDITOR:
        action = _editor(args)
    elif name == t.EXECUTE_IPYTHON_CELL:
        action = IPythonAction(code=args["code"])
    elif name == t.BROWSER:
        action = BrowseAction(action=args["code"])
    elif name == t.THINK:
        action = ThinkAction(thought=args["thought"])
        risk = None
    elif name == t.FINISH:
        action = FinishAction(message=args["message"], outcome=args.get("outcome", "success"))
        risk = None
    else:  # a schema was added without a parser
        raise ToolCallError(f"The tool {name!r} is offered but not supported yet.")
    return ParsedCall(action=action, security_risk=risk)
