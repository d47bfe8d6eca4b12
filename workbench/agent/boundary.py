"""The one boundary for what the model sends: reply text, tool names and tool arguments.

Nothing the model writes reaches the tools, the session log or the printed output before it
passes here. Text that UTF-8 cannot carry (lone surrogates) is repaired in the reply's text and
names, and refused inside decoded arguments; arguments are decoded strictly (no NaN or
Infinity, every number finite and at most `MAX_NUMBER` in size) and refused past `MAX_DEPTH`
levels of nesting or `MAX_ARGUMENTS_CHARS` characters. A refusal is a `ToolCallError` whose text
tells the model what to send instead: the controller answers the call with it (a malformed call
the agent can recover from), never with an internal error.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NoReturn

from workbench.tools.base import ToolCallError, clip

if TYPE_CHECKING:
    from workbench.llm import LLMResponse

__all__ = [
    "MAX_ARGUMENTS_CHARS",
    "MAX_DEPTH",
    "MAX_ECHO_CHARS",
    "MAX_NAME_CHARS",
    "MAX_NUMBER",
    "check_number",
    "clean_reply",
    "clean_text",
    "decode_arguments",
    "echo",
    "type_name",
]

MAX_DEPTH = 64
"""How deep arguments may nest (the session log cannot read an event back past ~190)."""
MAX_ARGUMENTS_CHARS = 1_000_000
"""The longest arguments text decoded (a file of a megabyte is written in parts)."""
MAX_NUMBER = 2**53
"""The largest magnitude a number may have: past it JSON readers disagree on its value."""
MAX_NAME_CHARS = 256
"""Tool names are cut to this length (no tool has a longer one; the answer quotes it)."""
MAX_ECHO_CHARS = 10_000
"""How much of a malformed call's arguments is kept with its error (log and history)."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` as UTF-8 can carry it: surrogate pairs (split JSON escapes) joined into their
    character, a lone surrogate replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def echo(arguments: str) -> str:
    """A malformed call's arguments as they are kept with its error: head and tail of at most
    `MAX_ECHO_CHARS` (the log and every later request carry them)."""
    if len(arguments) <= MAX_ECHO_CHARS:
        return arguments
    cut = len(arguments) - MAX_ECHO_CHARS
    return (
        f"{arguments[: MAX_ECHO_CHARS // 2]}...[{cut} characters cut]..."
        + arguments[-(MAX_ECHO_CHARS // 2) :]
    )


def clean_reply(response: LLMResponse) -> LLMResponse:
    """`response` with its text, tool names, ids and raw arguments cleaned (`clean_text`),
    names cut to `MAX_NAME_CHARS`; the arguments are decoded later, per call."""
    calls = [
        replace(
            call,
            id=clean_text(call.id[:MAX_NAME_CHARS]),
            name=clean_text(call.name[:MAX_NAME_CHARS]),
            arguments=clean_text(call.arguments),
        )
        for call in response.tool_calls
    ]
    return replace(response, content=clean_text(response.content), tool_calls=calls)


def check_number(where: str, value: int | float) -> int | float:
    """`value` when finite and at most `MAX_NUMBER` in size; else a ToolCallError for `where`."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolCallError(f"{where} must be a finite number; got {value}.")
    if abs(value) > MAX_NUMBER:
        shown = clip(str(value), 40) if isinstance(value, int) else f"{value:g}"
        raise ToolCallError(f"{where} must be at most {MAX_NUMBER} in size; got {shown}.")
    return value


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {clip(text, 40)} is too large")
    return value


def decode_arguments(call_name: str, raw: str) -> dict[str, Any]:
    """The arguments of a call to `call_name` as a dict, decoded strictly and checked for
    nesting, numbers and strings; raises ToolCallError with what to send instead."""
    if len(raw) > MAX_ARGUMENTS_CHARS:
        raise ToolCallError(
            f"The arguments of {call_name} are {len(raw)} characters long; at most "
            f"{MAX_ARGUMENTS_CHARS} are read. Write large data to a file in parts."
        )
    try:
        args = (
            json.loads(raw, parse_constant=_refuse_constant, parse_float=_float)
            if raw.strip()
            else {}
        )
    except json.JSONDecodeError as exc:
        raise ToolCallError(
            f"The arguments of {call_name} are not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno}): {clip(raw)!r}. Send a JSON object such as "
            f'{{"command": "ls"}}.'
        ) from None
    except RecursionError as exc:
        raise ToolCallError(
            f"The arguments of {call_name} cannot be read: {clip(str(exc), 120)}. Send a "
            f"JSON object nested at most {MAX_DEPTH} levels deep."
        ) from None
    except ValueError as exc:  # NaN or Infinity; a number too large or too long
        raise ToolCallError(
            f"The arguments of {call_name} cannot be read: {clip(str(exc), 120)}. Send "
            f"finite numbers of at most {MAX_NUMBER} in size."
        ) from None
    if not isinstance(args, dict):
        raise ToolCallError(
            f"The arguments of {call_name} must be a JSON object, got {type_name(args)}."
        )
    _inspect(call_name, args)
    return args


def _inspect(call_name: str, args: dict[str, Any]) -> None:
    """Refuse nesting past `MAX_DEPTH`, lone surrogates, NUL characters and numbers out of
    range anywhere in `args`."""
    for name, top in args.items():
        where = f"argument {clip(name)!r} of {call_name}"
        stack: list[tuple[Any, int]] = [(name, 1), (top, 1)]
        while stack:
            value, depth = stack.pop()
            if depth > MAX_DEPTH:
                raise ToolCallError(
                    f"{where} is nested more than {MAX_DEPTH} levels deep; send flatter data."
                )
            if isinstance(value, str):
                _check_string(where, value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                check_number(where, value)
            elif isinstance(value, dict):
                stack.extend((item, depth + 1) for pair in value.items() for item in pair)
            elif isinstance(value, list):
                stack.extend((item, depth + 1) for item in value)


def _check_string(where: str, value: str) -> None:
    lone = _LONE_SURROGATE.search(value)
    if lone:
        raise ToolCallError(
            f"{where} holds a lone surrogate escape (\\u{ord(lone.group()):04x}), which is not "
            "a character. Send the character itself, or both halves of a pair "
            "(\\ud83d\\ude00)."
        )
    if "\x00" in value:
        raise ToolCallError(
            f"{where} holds a NUL character (\\u0000), which no command, path or file here "
            "can carry. Leave it out (printf '\\0' writes one into a file)."
        )


def type_name(value: Any) -> str:
    """The JSON name of `value`'s type, for error messages."""
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
