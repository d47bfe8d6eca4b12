"""Render `config.template.toml` from the schema's docstrings and defaults.

The template in the repository root is this module's output; a test keeps the two equal.
Regenerate it with `python -m workbench.config.template > config.template.toml`.
"""

from __future__ import annotations

import sys
import textwrap
from typing import Any

import tomlkit
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo

from workbench.config.keys import allowed_text, env_names
from workbench.config.schema import Config

_WIDTH = 100
_HEADER = """\
# workbench configuration: every key, with its default and what it does.
#
# Copy this file to your config file (default: config.toml in the user config dir, e.g.
# ~/.config/workbench/config.toml on Linux; WORKBENCH_CONFIG_DIR moves it; --config PATH
# reads another) and uncomment the keys you change.
#
# Layering: these defaults < this file < environment variables < command-line flags.
# Each key can also be set by the environment variables named beside it; lists there are
# comma-separated. Keep API keys out of files you share: LLM_API_KEY is read too.
#
# This file is generated: python -m workbench.config.template > config.template.toml
"""


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, _WIDTH - 2, initial_indent="# ", subsequent_indent="# ")


def _default(info: FieldInfo) -> Any:
    value = info.get_default(call_default_factory=True)
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        table = tomlkit.inline_table()
        table.update(value)
        return table
    return value


def _key_lines(key: str, name: str, info: FieldInfo) -> list[str]:
    lines = _comment(info.description or "")
    allowed = allowed_text(info)
    notes = [] if allowed == "a string" else [f"Allowed: {allowed}."]
    notes.append("Env: " + ", ".join(env_names(key)) + ".")
    joined = " ".join(notes)
    for note in [joined] if len(joined) <= _WIDTH - 4 else notes:
        lines += _comment(note)
    lines.append(f"# {name} = {tomlkit.item(_default(info)).as_string()}")
    return lines


def _section_lines(model: type[BaseModel], prefix: str) -> list[str]:
    lines: list[str] = []
    subsections: list[tuple[str, type[BaseModel]]] = []
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            subsections.append((f"{prefix}{name}", annotation))
            continue
        lines += ["", *_key_lines(f"{prefix}{name}", name, info)]
    for section, sub in subsections:
        doc = (sub.__doc__ or "").strip().split("`: ", 1)[-1]  # drop the "`[section]`: " prefix
        lines += ["", "", f"[{section}]", *_comment(doc[:1].upper() + doc[1:])]
        lines += _section_lines(sub, f"{section}.")
    return lines


def render_template() -> str:
    """The full text of `config.template.toml`."""
    return _HEADER + "\n".join(_section_lines(Config, "")) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_template())
