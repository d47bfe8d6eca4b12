"""A tool call from the LLM -> an action, or `ToolCallError` with a text the agent can act on.

The arguments are decoded at the model-output boundary (`workbench.agent.boundary`), then
checked against the same schemas the LLM was given (each tool's `schema()`), so
every error names the tool, the argument, what was received and what is allowed; the tool then
makes its action from the checked arguments (`Tool.parse`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.protocol import DEFAULT_SOFT_TIMEOUT_S
from workbench.agent.boundary import check_number, decode_arguments, type_name
from workbench.events import AnyAction, RiskLevel
from workbench.tools.base import RISK_LEVELS, ParseOptions, Tool, ToolCallError, clip

__all__ = ["ParsedCall", "ToolCallError", "parse_tool_call"]


@dataclass(frozen=True)
class ParsedCall:
    """A valid tool call: the action and the risk the LLM declared (if the tool has one)."""

    action: AnyAction
    security_risk: RiskLevel | None


def _check(tool: str, name: str, value: Any, spec: dict[str, Any]) -> Any:
    """Validate one argument against its schema; returns the (lightly normalised) value.

    Models often send numbers and booleans as strings ("30", "true"): those are taken."""
    where = f"argument '{name}' of {tool}"
    kind = spec.get("type")
    if kind == "string" and not isinstance(value, str):
        raise ToolCallError(f"{where} must be a string, got {type_name(value)}.")
    if kind == "number":
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ToolCallError(f"{where} must be a number, got {value!r}.") from None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ToolCallError(f"{where} must be a number, got {type_name(value)}.")
        value = check_number(where, value)  # "nan" and "1e400" as strings pass float()
    if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
        if isinstance(value, str) and re.fullmatch(r"\s*[+-]?[0-9]{1,18}\s*", value):
            value = check_number(where, int(value))  # models send `"insert_line": "1"`
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ToolCallError(f"{where} must be an integer, got {clip(json.dumps(value))}.")
    if kind == "boolean" and not isinstance(value, bool):
        if not (isinstance(value, str) and value.lower() in ("true", "false")):
            raise ToolCallError(f"{where} must be true or false, got {clip(json.dumps(value))}.")
        value = value.lower() == "true"
    if kind == "object" and not isinstance(value, dict):
        raise ToolCallError(f"{where} must be an object, got {type_name(value)}.")
    if kind == "array":
        items: dict[str, Any] = spec.get("items") or {}
        wanted = f"a list of {items['type']}s" if "type" in items else "a list"
        if not isinstance(value, list):
            raise ToolCallError(f"{where} must be {wanted}, got {clip(json.dumps(value))}.")
        try:
            value = [_check(tool, f"{name}[{i}]", item, items) for i, item in enumerate(value)]
        except ToolCallError:
            raise ToolCallError(
                f"{where} must be {wanted}, got {clip(json.dumps(value))}."
            ) from None
    if "enum" in spec and value not in spec["enum"]:
        allowed = ", ".join(json.dumps(v) for v in spec["enum"])
        raise ToolCallError(f"{where} must be one of {allowed}; got {clip(json.dumps(value))}.")
    return value


def _arguments(call_name: str, raw: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Decode and validate the arguments of one call against its function schema."""
    args = decode_arguments(call_name, raw)
    params = schema["function"]["parameters"]
    properties: dict[str, Any] = params["properties"]
    # `security_risk` on a tool without one is harmless: models add it out of habit.
    unknown = sorted(k for k in args if k not in properties and k != "security_risk")
    if unknown:
        raise ToolCallError(
            f"{call_name} has no argument {', '.join(repr(clip(k, 60)) for k in unknown[:5])}; "
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


def parse_tool_call(
    name: str,
    arguments: str,
    tools: Sequence[Tool[Any, Any]],
    soft_timeout: float = DEFAULT_SOFT_TIMEOUT_S,
) -> ParsedCall:
    """Turn one call of one of the offered `tools` into an action; raises ToolCallError with
    the reason otherwise."""
    by_name = {tool.name: tool for tool in tools}
    tool = by_name.get(name)
    if tool is None:
        raise ToolCallError(
            f"There is no tool named {clip(name)!r}. The tools are: {', '.join(by_name)}."
        )
    args = _arguments(name, arguments, tool.schema())
    risk: RiskLevel | None = args.pop("security_risk", None)
    if risk is not None and risk not in RISK_LEVELS:
        # Only reachable for tools whose schema has no `security_risk`.
        raise ToolCallError(
            f"argument 'security_risk' of {name} must be one of LOW, MEDIUM, HIGH; got {risk!r}."
        )
    action: AnyAction = tool.parse_call(args, ParseOptions(soft_timeout=soft_timeout))
    return ParsedCall(action=action, security_risk=risk if tool.declares_risk else None)
