"""A validator for ATIF (Harbor's Agent Trajectory Interchange Format, v1.0 to v1.8), written
from the spec (Harbor's `docs/rfcs/0001-trajectory-format.md` and its reference models).

`validate(doc)` returns a list of errors, each `"<JSON path>: <what is wrong>"`, empty when the
document is valid. Strict like the reference: an unknown field anywhere is an error, types are
checked exactly (a bool is not an integer, "3" is not a number), and the cross-field rules hold:
step ids run 1..n; `model_name`, `reasoning_effort`, `reasoning_content`, `tool_calls` and
`metrics` only on agent steps; an agent step with `llm_call_count` 0 has no `metrics` or
`reasoning_content`; tool call ids are unique within a step and each observation result's
`source_call_id` names a tool call of the same step; a content part of type "text" has `text`
only, an "image" an image source, an "audio" (v1.8) an audio source; embedded subagent
trajectories each carry a unique `trajectory_id`, and a subagent reference without a path names
one of them. A JSON `null` counts as an absent optional field, as in the reference models.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

SCHEMA_VERSIONS = tuple(f"ATIF-v1.{minor}" for minor in range(9))
CURRENT_VERSION = "ATIF-v1.8"
STEP_SOURCES = ("system", "user", "agent")
AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
AUDIO_TYPES = (
    "audio/wav",
    "audio/mpeg",
    "audio/mp4",
    "audio/aac",
    "audio/ogg",
    "audio/flac",
    "audio/webm",
    "audio/aiff",
)
AUDIO_ALIASES = (
    "audio/mp3",
    "audio/mpga",
    "audio/x-mpeg",
    "audio/x-wav",
    "audio/wave",
    "audio/vnd.wave",
    "audio/x-m4a",
    "audio/m4a",
    "audio/x-aac",
    "audio/x-flac",
    "audio/x-aiff",
)
"""Spellings the reference accepts for audio and stores as the canonical type."""

Errors = list[str]
Check = Callable[[Any, str, Errors], None]
"""Checks one present (non-null) value found at a path, appending errors."""


def validate(doc: Any) -> list[str]:
    """Every way `doc` (parsed JSON) breaks the ATIF schema, as `"$.path: why"`; [] if none."""
    errors: Errors = []
    _trajectory(doc, "$", errors)
    return errors


def validate_file(path: Path) -> list[str]:
    """`validate` for a trajectory file; a file that is not JSON is one error saying so."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{path}: not a readable JSON file ({exc})"]
    return validate(doc)


# ---------------------------------------------------------------------- value checks


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _string(value: Any, path: str, errors: Errors) -> None:
    if not isinstance(value, str):
        errors.append(f"{path}: expected a string, got {_kind(value)}")


def _integer(minimum: int | None = None) -> Check:
    def check(value: Any, path: str, errors: Errors) -> None:
        if not _is_int(value):
            errors.append(f"{path}: expected an integer, got {_kind(value)}")
        elif minimum is not None and value < minimum:
            errors.append(f"{path}: must be >= {minimum}, got {value}")

    return check


def _number(minimum: float | None = None) -> Check:
    def check(value: Any, path: str, errors: Errors) -> None:
        if not _is_number(value):
            errors.append(f"{path}: expected a number, got {_kind(value)}")
        elif minimum is not None and value < minimum:
            errors.append(f"{path}: must be >= {minimum}, got {value}")

    return check


def _boolean(value: Any, path: str, errors: Errors) -> None:
    if not isinstance(value, bool):
        errors.append(f"{path}: expected true or false, got {_kind(value)}")


def _free_object(value: Any, path: str, errors: Errors) -> None:
    """An `extra`-like object: any keys, any values."""
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object, got {_kind(value)}")


def _one_of(choices: tuple[str, ...]) -> Check:
    def check(value: Any, path: str, errors: Errors) -> None:
        if not isinstance(value, str) or value not in choices:
            errors.append(f"{path}: must be one of {', '.join(choices)}; got {value!r}")

    return check


def _list_of(item: Check, min_length: int = 0) -> Check:
    def check(value: Any, path: str, errors: Errors) -> None:
        if not isinstance(value, list):
            errors.append(f"{path}: expected an array, got {_kind(value)}")
            return
        if len(value) < min_length:
            errors.append(f"{path}: needs at least {min_length} item(s), got {len(value)}")
        for index, element in enumerate(value):
            item(element, f"{path}[{index}]", errors)

    return check


def _either(*checks: Check, expected: str) -> Check:
    """The value passes one of `checks` (the first that leaves no error)."""

    def check(value: Any, path: str, errors: Errors) -> None:
        tried: list[Errors] = []
        for one in checks:
            found: Errors = []
            one(value, path, found)
            if not found:
                return
            tried.append(found)
        # Report the alternative of the value's own shape when there is one (a list for an
        # array of content parts), else say what was expected.
        shaped = [found for found in tried if not found[0].startswith(f"{path}: expected")]
        errors.extend(shaped[0] if shaped else [f"{path}: expected {expected}, got {_kind(value)}"])

    return check


def _timestamp(value: Any, path: str, errors: Errors) -> None:
    if not isinstance(value, str):
        errors.append(f"{path}: expected an ISO 8601 string, got {_kind(value)}")
        return
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        errors.append(f"{path}: not an ISO 8601 timestamp: {value!r}")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _object(
    value: Any,
    path: str,
    errors: Errors,
    required: Mapping[str, Check],
    optional: Mapping[str, Check],
) -> bool:
    """Check an object's fields: required ones present (not null), no unknown ones, each of
    the right type. False when `value` is not an object at all."""
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object, got {_kind(value)}")
        return False
    for name in value:
        if name not in required and name not in optional:
            errors.append(f"{path}.{name}: unknown field (not in the ATIF schema)")
    for name, check in required.items():
        if value.get(name) is None:
            errors.append(f"{path}.{name}: required field is missing")
        else:
            check(value[name], f"{path}.{name}", errors)
    for name, check in optional.items():
        if value.get(name) is not None:
            check(value[name], f"{path}.{name}", errors)
    return True


# ---------------------------------------------------------------------- the schema's objects


def _image_source(value: Any, path: str, errors: Errors) -> None:
    _object(value, path, errors, {"media_type": _one_of(IMAGE_TYPES), "path": _string}, {})


def _audio_source(value: Any, path: str, errors: Errors) -> None:
    media = _one_of(AUDIO_TYPES + AUDIO_ALIASES)
    fields = {"duration_sec": _number(0)}
    _object(value, path, errors, {"media_type": media, "path": _string}, fields)


def _content_part(value: Any, path: str, errors: Errors) -> None:
    kinds = ("text", "image", "audio")
    if not _object(
        value, path, errors, {"type": _one_of(kinds)}, {"text": _string, "source": _free_object}
    ):
        return
    kind, text, source = value.get("type"), value.get("text"), value.get("source")
    if kind == "text":
        if text is None:
            errors.append(f"{path}.text: required when type is 'text'")
        if source is not None:
            errors.append(f"{path}.source: not allowed when type is 'text'")
    elif kind in ("image", "audio"):
        if text is not None:
            errors.append(f"{path}.text: not allowed when type is '{kind}'")
        if source is None:
            errors.append(f"{path}.source: required when type is '{kind}'")
        elif isinstance(source, dict):
            check = _image_source if kind == "image" else _audio_source
            check(source, f"{path}.source", errors)


_content = _either(
    _string, _list_of(_content_part), expected="a string or an array of content parts"
)


def _tool_call(value: Any, path: str, errors: Errors) -> None:
    required = {"tool_call_id": _string, "function_name": _string, "arguments": _free_object}
    _object(value, path, errors, required, {"extra": _free_object})


def _metrics(value: Any, path: str, errors: Errors) -> None:
    ints = _list_of(_integer())
    optional: dict[str, Check] = {
        "prompt_tokens": _integer(),
        "completion_tokens": _integer(),
        "cached_tokens": _integer(),
        "cost_usd": _number(),
        "prompt_token_ids": ints,
        "completion_token_ids": ints,
        "logprobs": _list_of(_number()),
        "extra": _free_object,
    }
    _object(value, path, errors, {}, optional)


def _final_metrics(value: Any, path: str, errors: Errors) -> None:
    optional: dict[str, Check] = {
        "total_prompt_tokens": _integer(),
        "total_completion_tokens": _integer(),
        "total_cached_tokens": _integer(),
        "total_cost_usd": _number(),
        "total_steps": _integer(0),
        "extra": _free_object,
    }
    _object(value, path, errors, {}, optional)


def _subagent_ref(value: Any, path: str, errors: Errors) -> None:
    optional = {
        "trajectory_id": _string,
        "session_id": _string,
        "trajectory_path": _string,
        "extra": _free_object,
    }
    if not _object(value, path, errors, {}, optional):
        return
    keys = [value.get("trajectory_id"), value.get("trajectory_path")]
    if not any(isinstance(key, str) and key.strip() for key in keys):
        errors.append(f"{path}: set trajectory_id or trajectory_path (session_id cannot resolve)")


def _observation_result(value: Any, path: str, errors: Errors) -> None:
    optional: dict[str, Check] = {
        "source_call_id": _string,
        "content": _content,
        "subagent_trajectory_ref": _list_of(_subagent_ref),
        "extra": _free_object,
    }
    _object(value, path, errors, {}, optional)


def _observation(value: Any, path: str, errors: Errors) -> None:
    _object(value, path, errors, {"results": _list_of(_observation_result)}, {})


def _agent(value: Any, path: str, errors: Errors) -> None:
    optional = {
        "model_name": _string,
        "tool_definitions": _list_of(_free_object),
        "extra": _free_object,
    }
    _object(value, path, errors, {"name": _string, "version": _string}, optional)


def _step(value: Any, path: str, errors: Errors) -> None:
    required: dict[str, Check] = {
        "step_id": _integer(1),
        "source": _one_of(STEP_SOURCES),
        "message": _content,
    }
    optional: dict[str, Check] = {
        "timestamp": _timestamp,
        "model_name": _string,
        "reasoning_effort": _either(_string, _number(), expected="a string or a number"),
        "reasoning_content": _string,
        "tool_calls": _list_of(_tool_call),
        "observation": _observation,
        "metrics": _metrics,
        "is_copied_context": _boolean,
        "llm_call_count": _integer(0),
        "extra": _free_object,
    }
    if not _object(value, path, errors, required, optional):
        return
    source = value.get("source")
    if source in STEP_SOURCES and source != "agent":
        for name in AGENT_ONLY:
            if value.get(name) is not None:
                errors.append(f"{path}.{name}: only allowed on agent steps (source is {source!r})")
    if source == "agent" and value.get("llm_call_count") == 0:
        for name in ("metrics", "reasoning_content"):
            if value.get(name) is not None:
                errors.append(f"{path}.{name}: not allowed when llm_call_count is 0")
    _call_references(value, path, errors)


def _call_references(step: dict[str, Any], path: str, errors: Errors) -> None:
    """Tool call ids unique in the step; each result's source_call_id one of them."""
    ids: set[str] = set()
    calls = step.get("tool_calls")
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        call_id = call.get("tool_call_id") if isinstance(call, dict) else None
        if isinstance(call_id, str):
            if call_id in ids:
                errors.append(f"{path}.tool_calls[{index}].tool_call_id: {call_id!r} is repeated")
            ids.add(call_id)
    observation = step.get("observation")
    results = observation.get("results") if isinstance(observation, dict) else None
    for index, result in enumerate(results if isinstance(results, list) else []):
        source = result.get("source_call_id") if isinstance(result, dict) else None
        if isinstance(source, str) and source not in ids:
            where = f"{path}.observation.results[{index}].source_call_id"
            errors.append(f"{where}: {source!r} names no tool call of this step")


def _trajectory(value: Any, path: str, errors: Errors) -> None:
    required: dict[str, Check] = {
        "schema_version": _one_of(SCHEMA_VERSIONS),
        "agent": _agent,
        "steps": _list_of(_step, min_length=1),
    }
    optional: dict[str, Check] = {
        "session_id": _string,
        "trajectory_id": _string,
        "notes": _string,
        "final_metrics": _final_metrics,
        "continued_trajectory_ref": _string,
        "extra": _free_object,
        "subagent_trajectories": _list_of(_trajectory),
    }
    if not _object(value, path, errors, required, optional):
        return
    steps = value.get("steps")
    for index, step in enumerate(steps if isinstance(steps, list) else []):
        step_id = step.get("step_id") if isinstance(step, dict) else None
        if _is_int(step_id) and step_id != index + 1:
            errors.append(f"{path}.steps[{index}].step_id: expected {index + 1}, got {step_id}")
    _subagents(value, path, errors)


def _subagents(doc: dict[str, Any], path: str, errors: Errors) -> None:
    """Embedded subagents: each with a unique trajectory_id; path-less refs resolve to one."""
    seen: set[str] = set()
    subs = doc.get("subagent_trajectories")
    for index, sub in enumerate(subs if isinstance(subs, list) else []):
        if not isinstance(sub, dict):
            continue
        trajectory_id = sub.get("trajectory_id")
        where = f"{path}.subagent_trajectories[{index}].trajectory_id"
        if trajectory_id is None:
            errors.append(f"{where}: required on an embedded subagent trajectory")
        elif trajectory_id in seen:
            errors.append(f"{where}: {trajectory_id!r} is not unique")
        elif isinstance(trajectory_id, str):
            seen.add(trajectory_id)
    steps = doc.get("steps")
    for s_index, step in enumerate(steps if isinstance(steps, list) else []):
        observation = step.get("observation") if isinstance(step, dict) else None
        results = observation.get("results") if isinstance(observation, dict) else None
        for r_index, result in enumerate(results if isinstance(results, list) else []):
            refs = result.get("subagent_trajectory_ref") if isinstance(result, dict) else None
            for f_index, ref in enumerate(refs if isinstance(refs, list) else []):
                if not isinstance(ref, dict) or ref.get("trajectory_path"):
                    continue
                if ref.get("trajectory_id") not in seen:
                    where = (
                        f"{path}.steps[{s_index}].observation.results[{r_index}]"
                        f".subagent_trajectory_ref[{f_index}].trajectory_id"
                    )
                    errors.append(f"{where}: names no embedded subagent trajectory")
