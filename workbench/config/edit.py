"""Changing a config file in place, as the TUI's settings and "always allow" do: one key set,
or one item added to or removed from a list, checked first and written privately."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomlkit
from pydantic import SecretStr, ValidationError
from tomlkit.exceptions import TOMLKitError

from workbench.config.schema import (
    Config,
)

if TYPE_CHECKING:
    pass

from workbench.config.keys import KEYS, suggest
from workbench.config.load import ConfigError, explain, nest

# --------------------------------------------------------------------------- writing back


def check_setting(path: Path, dotted_key: str, value: Any) -> Any:
    """`value` as `dotted_key` stores it, or a ConfigError saying what is allowed."""
    if dotted_key not in KEYS:
        raise ConfigError(
            f"cannot save '{dotted_key}': unknown key.{suggest(dotted_key)}", key=dotted_key
        )
    raw = value.get_secret_value() if isinstance(value, SecretStr) else value
    try:
        checked = Config.model_validate(nest({dotted_key: raw}))
    except ValidationError as exc:
        raise explain(exc, {dotted_key: f"saving to {path}"}) from None
    node: Any = checked
    for part in dotted_key.split("."):
        node = getattr(node, part)
    return node.get_secret_value() if isinstance(node, SecretStr) else node


def save_setting(path: Path, dotted_key: str, value: Any) -> None:
    """Set one key in the TOML file at `path`, keeping its comments; the file ends up 0600."""
    node = check_setting(path, dotted_key, value)
    target = Path(path).expanduser().resolve()
    text = target.read_text(encoding="utf-8-sig") if target.exists() else ""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(
            f"config file {target}: not valid TOML ({exc}); not changed. Fix that line first.",
            source=f"config file {target}",
        ) from None
    *sections, leaf = dotted_key.split(".")
    table: Any = document
    for section in sections:
        if section not in table:
            table[section] = tomlkit.table()
        table = table[section]
    table[leaf] = node
    _write_private(target, document.as_string())


def add_to_list(path: Path, dotted_key: str, item: str) -> bool:
    """Append `item` to the list `dotted_key` of the TOML file at `path` (created if missing),
    keeping its comments, those inside the list too; False when it was there already."""
    if dotted_key not in KEYS:
        raise ConfigError(f"cannot save '{dotted_key}': unknown key.", key=dotted_key)
    target = Path(path).expanduser().resolve()
    where = f"config file {target}"
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(
            f"{where}: not valid TOML ({exc}); not changed. Fix that line first.", source=where
        ) from None
    *sections, leaf = dotted_key.split(".")
    table: Any = document
    for section in sections:
        if section not in table:
            table[section] = tomlkit.table()
        table = table[section]
    if leaf not in table:
        table[leaf] = tomlkit.array()
    current = table[leaf]
    if not isinstance(current, list):
        raise ConfigError(
            f"{where}: '{dotted_key}' is not a list; not changed. Fix: make it a list of "
            'strings, e.g. allow = ["run:git status*"].',
            source=where,
            key=dotted_key,
        )
    if item in current:
        return False
    current.append(item)
    _write_private(target, document.as_string())
    return True


def remove_from_list(path: Path, dotted_key: str, item: str) -> bool:
    """Remove `item` from the list `dotted_key` of the TOML file at `path`, keeping the file's
    other lines and comments; False when it was not there (the file is then unchanged)."""
    target = Path(path).expanduser().resolve()
    where = f"config file {target}"
    try:
        text = target.read_text(encoding="utf-8-sig")
        document = tomlkit.parse(text)
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(
            f"{where}: cannot read it ({exc}); not changed. Fix that first.", source=where
        ) from None
    table: Any = document
    for section in dotted_key.split("."):
        if not isinstance(table, Mapping) or section not in table:
            return False
        table = table[section]
    if not isinstance(table, list) or item not in table:
        return False
    while item in table:
        del table[table.index(item)]
    _write_private(target, document.as_string())
    return True


def _write_private(target: Path, text: str) -> None:
    """Replace `target` with `text` (mode 0600) in one step; a failed write (a full disk)
    leaves the file as it was and no temporary file, and says so as a ConfigError."""
    temp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except BaseException as exc:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            raise
        where = f"config file {target}"
        raise ConfigError(
            f"{where}: cannot save it ({exc.strerror or exc}); it was not changed. Fix: free "
            f"space on the disk holding {target.parent}, or make it writable.",
            source=where,
        ) from exc
