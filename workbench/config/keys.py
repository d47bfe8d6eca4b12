"""The configuration's keys: every dotted key of the schema, the environment variables that
set them, what each accepts in words, and a suggestion for a mistyped one."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from workbench.config.schema import (
    Config,
)

if TYPE_CHECKING:
    pass


# The names OpenHands users already set, mapped to our keys.
COMPAT_ENV: dict[str, str] = {
    "LLM_MODEL": "llm.model",
    "LLM_API_KEY": "llm.api_key",
    "LLM_BASE_URL": "llm.base_url",
    "SANDBOX_VOLUMES": "sandbox.volumes",
    "SANDBOX_USER_ID": "sandbox.user_id",
    "WORKSPACE_BASE": "sandbox.workspace",
    "RUNTIME": "sandbox.runtime",
    "LOG_ALL_EVENTS": "log_all_events",
}
ENV_PREFIX = "WORKBENCH_"

# --------------------------------------------------------------------------- the schema's keys


def _walk(model: type[BaseModel], prefix: str = "") -> dict[str, FieldInfo]:
    keys: dict[str, FieldInfo] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.update(_walk(annotation, f"{prefix}{name}."))
        else:
            keys[f"{prefix}{name}"] = info
    return keys


KEYS = _walk(Config)
SECTIONS = {key.rsplit(".", 1)[0] for key in KEYS if "." in key} | {
    key.split(".")[0] for key in KEYS if "." in key
}
WB_ENV = {ENV_PREFIX + key.replace(".", "_").upper(): key for key in KEYS}


def known_keys() -> dict[str, FieldInfo]:
    """Every dotted key (`llm.model`, `sandbox.docker.memory`, ...) with its pydantic field."""
    return dict(KEYS)


def env_names(key: str) -> list[str]:
    """The environment variables that set `key`, OpenHands' name first."""
    return [name for name, k in COMPAT_ENV.items() if k == key] + [
        name for name, k in WB_ENV.items() if k == key
    ]


def allowed_text(info: FieldInfo) -> str:
    """What a key accepts, in words: "one of ...", "a whole number >= 0", ..."""
    extra = info.json_schema_extra
    if isinstance(extra, dict) and "allowed" in extra:
        return str(extra["allowed"])
    annotation = info.annotation
    origin = get_origin(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f'"{value}"' for value in get_args(annotation))
    if origin is list:
        return "a list of strings"
    if origin is dict:
        return 'a table of NAME = "value" strings'
    words: dict[Any, str] = {bool: "true or false", int: "a whole number", float: "a number"}
    text = words.get(annotation, "a string")
    for meta in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            bound = getattr(meta, attr, None)
            if isinstance(meta, annotated_types.BaseMetadata) and bound is not None:
                text += f" {sign} {bound}"
        pattern = getattr(meta, "pattern", None)
        if pattern:
            text += f" matching {pattern}"
    return text


def suggest(key: str, section: bool = False) -> str:
    """ " Did you mean '...'?" for a mistyped key or section, or nothing."""
    if section:  # a table: only a section can be meant
        found = difflib.get_close_matches(key, sorted(SECTIONS), n=1, cutoff=0.6)
        return f" Did you mean '{found[0]}'?" if found else ""
    match = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.6)
    if not match:
        leaf = key.rsplit(".", 1)[-1]
        match = [k for k in KEYS if k.rsplit(".", 1)[-1] == leaf][:1]
    return f" Did you mean '{match[0]}'?" if match else ""
