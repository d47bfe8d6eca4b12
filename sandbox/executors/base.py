"""The executor interface, the context executors are built with, and the registry by name."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Protocol

from sandbox.protocol import Action, ErrorObservation, Observation, StreamEvent

StreamListener = Callable[[StreamEvent], None]


@dataclass
class ExecutorContext:
    """What an executor may know about its sandbox: workspace, artifact folder, shell state."""

    workspace: Path
    artifacts: Path
    """Where executors write files the client fetches by name (PNG outputs, screenshots)."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment variables for processes the executors start."""
    shell_cwd: Callable[[], str | None] = lambda: None
    """The persistent shell's current directory, for executors that follow it (Jupyter)."""
    checkpoints: Path | None = None
    """The workspace's checkpoint store (None: one beside the artifacts folder)."""
    python_env: Path | None = None
    """The agent's writable Python env (`sandbox/agent_env.py`) for its shell and kernel only;
    None: they run on the server's interpreter."""


class Executor(Protocol):
    """Carries out one family of actions. Calls are blocking; the server runs them in threads."""

    name: ClassVar[str]
    action_kinds: ClassVar[tuple[str, ...]]

    def execute(self, action: Action) -> Observation:
        """Carry out `action` and describe the result; never raises for a bad action."""
        ...

    def close(self) -> None:
        """Stop every process this executor started."""
        ...


ExecutorFactory = Callable[[ExecutorContext], Executor]


class ExecutorUnavailable(Exception):
    """Raised by a factory whose executor cannot run here; the message says what is missing."""


@dataclass(frozen=True)
class Registration:
    """A registered executor: its name, the action kinds it handles and how to build it."""

    name: str
    action_kinds: tuple[str, ...]
    factory: ExecutorFactory
    available: Callable[[], str | None]
    """Returns None when the executor can run here, otherwise why not."""


_REGISTRY: dict[str, Registration] = {}
_lock = threading.Lock()


def register(
    name: str,
    action_kinds: tuple[str, ...],
    factory: ExecutorFactory,
    available: Callable[[], str | None] = lambda: None,
) -> None:
    """Register an executor factory under `name` for the given action kinds."""
    with _lock:
        _REGISTRY[name] = Registration(name, action_kinds, factory, available)


def registrations() -> dict[str, Registration]:
    """All registered executors by name."""
    with _lock:
        return dict(_REGISTRY)


def unavailable(action_kind: str, why: str) -> ErrorObservation:
    """The error observation for an action whose executor cannot run here."""
    return ErrorObservation(error_kind="unavailable", content=f"No '{action_kind}' here: {why}")
