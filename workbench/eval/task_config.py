"""A Harbor task's `task.toml`, read and checked: timeouts, image, resources, network.

The layout (Harbor / Terminal-Bench 2.0)::

    [agent]        timeout_sec = 600.0
    [verifier]     timeout_sec = 120.0
    [environment]  docker_image = "python:3.12-slim"   # or a Dockerfile at environment/
                   cpus = 1
                   memory = "2G"                        # or memory_mb = 2048
                   allow_internet = true

Every key is optional. `[metadata]` and other sections are kept as they are; a key this
reader does not know in the three sections above is reported as a warning (a typo would
otherwise pass silently). A value of the wrong type is an error naming the file and the key.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_AGENT_TIMEOUT_S = 600.0
DEFAULT_VERIFIER_TIMEOUT_S = 120.0
_KNOWN = {
    "agent": {"timeout_sec"},
    "verifier": {"timeout_sec", "env"},
    "environment": {
        "docker_image", "cpus", "memory", "memory_mb", "allow_internet", "storage",
        "storage_mb", "build_timeout_sec", "gpus",
    },
}  # fmt: skip
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


class TaskConfigError(ValueError):
    """A task.toml that cannot be used: the message names the file, the key and the fix."""


@dataclass(frozen=True)
class TaskConfig:
    """What a task's task.toml asks for."""

    agent_timeout_s: float = DEFAULT_AGENT_TIMEOUT_S
    verifier_timeout_s: float = DEFAULT_VERIFIER_TIMEOUT_S
    docker_image: str | None = None
    dockerfile: Path | None = None
    """environment/Dockerfile, when the task has one (built offline before the trial)."""
    cpus: float | None = None
    memory_bytes: int | None = None
    allow_internet: bool = True
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def uses_docker(self) -> bool:
        """Whether the task names an image or a Dockerfile (then it runs in Docker)."""
        return self.docker_image is not None or self.dockerfile is not None


def read_task_config(folder: Path) -> TaskConfig:
    """The task.toml of task `folder` (defaults when there is none); TaskConfigError if bad."""
    path = folder / "task.toml"
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise TaskConfigError(f"{path}: cannot read it: {exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise TaskConfigError(f"{path}: not valid TOML: {exc}") from None
    warnings: list[str] = []
    sections: dict[str, dict[str, Any]] = {}
    for name, known in _KNOWN.items():
        section = data.get(name, {})
        if not isinstance(section, dict):
            raise TaskConfigError(f"{path}: [{name}] must be a table, not {_kind(section)}")
        sections[name] = section
        for key in sorted(set(section) - known):
            warnings.append(f"{path}: [{name}] {key} is not a key this reader knows; ignored")
    env = sections["environment"]
    dockerfile = folder / "environment" / "Dockerfile"
    image = _get(path, env, "environment", "docker_image", str)
    memory = _memory(path, env)
    return TaskConfig(
        agent_timeout_s=_seconds(path, sections["agent"], "agent", DEFAULT_AGENT_TIMEOUT_S),
        verifier_timeout_s=_seconds(
            path, sections["verifier"], "verifier", DEFAULT_VERIFIER_TIMEOUT_S
        ),
        docker_image=image or None,
        dockerfile=dockerfile if dockerfile.is_file() else None,
        cpus=_positive(path, env, "cpus"),
        memory_bytes=memory,
        allow_internet=_get(path, env, "environment", "allow_internet", bool, True),
        metadata=dict(data.get("metadata") or {}),
        warnings=tuple(warnings),
    )


def _kind(value: object) -> str:
    return {str: "text", bool: "true/false", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )


def _get(
    path: Path, section: dict[str, Any], name: str, key: str, kind: type, default: Any = None
) -> Any:
    value = section.get(key, default)
    if value is None or value is default:
        return value
    ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
    if not ok:
        want = {str: "text in quotes", bool: "true or false"}.get(kind, kind.__name__)
        raise TaskConfigError(
            f"{path}: [{name}] {key} must be {want}, not {_kind(value)} ({value!r})"
        )
    return value


def _number(path: Path, section: dict[str, Any], name: str, key: str) -> float | None:
    value = section.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TaskConfigError(
            f"{path}: [{name}] {key} must be a number, not {_kind(value)} ({value!r})"
        )
    if value <= 0:
        raise TaskConfigError(f"{path}: [{name}] {key} must be above 0, not {value!r}")
    return float(value)


def _seconds(path: Path, section: dict[str, Any], name: str, default: float) -> float:
    value = _number(path, section, name, "timeout_sec")
    return default if value is None else value


def _positive(path: Path, env: dict[str, Any], key: str) -> float | None:
    return _number(path, env, "environment", key)


def _memory(path: Path, env: dict[str, Any]) -> int | None:
    """`memory` ("2G", "512M", or a number of MB) or `memory_mb`, in bytes."""
    if "memory_mb" in env:
        mb = _number(path, env, "environment", "memory_mb")
        return None if mb is None else int(mb * 2**20)
    value = env.get("memory")
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        mb = _number(path, env, "environment", "memory")
        return None if mb is None else int(mb * 2**20)
    match = _SIZE.match(value) if isinstance(value, str) else None
    if match is None or float(match.group(1)) <= 0:
        raise TaskConfigError(
            f'{path}: [environment] memory must be a size such as "2G" or "512M", not {value!r}'
        )
    unit = {"": 2**20, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2).lower()]
    return int(float(match.group(1)) * unit)
