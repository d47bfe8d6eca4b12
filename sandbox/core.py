"""`Sandbox`: the executors of one session behind one `execute(action)` call, in-process."""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.executors import load_builtin_executors, register_builtin_executors
from sandbox.executors.base import (
    Executor,
    ExecutorContext,
    ExecutorUnavailable,
    StreamListener,
    registrations,
    unavailable,
)
from sandbox.protocol import Action, ErrorObservation, Observation

if TYPE_CHECKING:
    from sandbox.protect import Guard


class Sandbox:
    """Routes each action to the executor registered for its kind, building executors lazily."""

    def __init__(
        self,
        workspace: Path,
        artifacts: Path | None = None,
        env: dict[str, str] | None = None,
        disabled: Iterable[str] = (),
        checkpoints: Path | None = None,
        guard: Guard | None = None,
        python_env: Path | None = None,
        warm_up: Iterable[str] = (),
    ) -> None:
        self.guard = guard
        """Checks the workspace's protected paths after every action (`sandbox/protect.py`)."""
        self._guard_lock = threading.Lock()
        self.workspace = workspace.resolve()
        self.artifacts = artifacts or Path(tempfile.mkdtemp(prefix="sandbox-artifacts-"))
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self._disabled = set(disabled)
        self._executors: dict[str, Executor] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._build_lock = threading.Lock()
        self._build_locks: dict[str, threading.Lock] = {}
        self._listeners: list[StreamListener] = []
        self.context = ExecutorContext(
            workspace=self.workspace,
            artifacts=self.artifacts,
            env=dict(env or {}),
            shell_cwd=self._shell_cwd,
            checkpoints=checkpoints,
            python_env=python_env,
        )
        # Registered without their modules (imported when each is first built), but those in
        # `warm_up`, which start building at once in the background.
        register_builtin_executors()
        for name in warm_up:
            load_builtin_executors((name,))
            self.warm_up(name)

    def available(self) -> dict[str, bool]:
        """Executor name -> whether it can run here."""
        return {
            name: name not in self._disabled and reg.available() is None
            for name, reg in registrations().items()
        }

    def executor(self, name: str) -> Executor:
        """The executor registered as `name`, started on first use."""
        built = self._executors.get(name)
        if built is not None:
            return built
        # One lock per executor: a kernel starting for a second must not hold up the shell.
        with self._build_lock:
            build_lock = self._build_locks.setdefault(name, threading.Lock())
        with build_lock:
            if name not in self._executors:
                if name in self._disabled:
                    raise ExecutorUnavailable(f"the '{name}' executor is disabled in this sandbox")
                reg = registrations()[name]
                why = reg.available()
                if why is not None:
                    raise ExecutorUnavailable(why)
                executor = reg.factory(self.context)
                subscribe: Callable[[StreamListener], object] | None = getattr(
                    executor, "subscribe", None
                )
                if subscribe is not None:
                    subscribe(self._publish)
                self._locks[name] = threading.Lock()
                self._executors[name] = executor
            return self._executors[name]

    def warm_up(self, name: str) -> threading.Thread:
        """Build executor `name` in a background thread, so its first action need not wait."""

        def build() -> None:
            with contextlib.suppress(Exception):  # its first action reports a failure properly
                self.executor(name)

        thread = threading.Thread(target=build, name=f"warm-up-{name}", daemon=True)
        thread.start()
        return thread

    def execute(self, action: Action) -> Observation:
        """Carry out `action` with its executor, then check the protected paths; errors come
        back as observations."""
        observation = self._execute(action)
        found = self.check_protected()
        if not found:
            return observation
        from sandbox.profile import tell

        return tell(observation, found)

    def check_protected(self) -> list[object]:
        """Neutralise what the agent left under protected paths (`Guard.check`)."""
        if self.guard is None:
            return []
        with self._guard_lock:
            try:
                return list(self.guard.check())
            except Exception as exc:  # a guard bug must not lose the action's observation
                return [f"the protected paths could not be checked: {exc}"]

    def _execute(self, action: Action) -> Observation:
        name = self._executor_name(action.kind)
        if name is None:
            return ErrorObservation(content=f"No executor handles actions of kind '{action.kind}'.")
        try:
            executor = self.executor(name)
        except ExecutorUnavailable as exc:
            return unavailable(action.kind, str(exc))
        with self._locks[name]:
            try:
                return executor.execute(action)
            except Exception as exc:  # an executor bug must not take the server down
                return ErrorObservation(
                    error_kind="internal",
                    content=f"The {name} executor failed: {type(exc).__name__}: {exc}",
                )

    def send_input(self, text: str) -> bool:
        """Type `text` (or a key like `C-c`) into the running shell command without queueing."""
        shell = self._executors.get("bash")
        send = getattr(shell, "send_input", None)
        return bool(send(text)) if send is not None else False

    def subscribe(self, listener: StreamListener) -> Callable[[], None]:
        """Call `listener` with every output chunk of the shell; returns the unsubscribe call."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def close(self) -> None:
        """Stop every executor and the processes they started."""
        with self._build_lock:
            executors, self._executors = self._executors, {}
        for executor in executors.values():
            with contextlib.suppress(Exception):  # closing must reach every executor
                executor.close()
        self.check_protected()  # what a background process wrote before it was killed

    def _publish(self, event: object) -> None:
        for listener in list(self._listeners):
            listener(event)  # type: ignore[arg-type]

    def _executor_name(self, kind: str) -> str | None:
        for name, reg in registrations().items():
            if kind in reg.action_kinds:
                return name
        return None

    def _shell_cwd(self) -> str | None:
        shell = self._executors.get("bash")
        cwd: Callable[[], str | None] | None = getattr(shell, "cwd", None)
        return cwd() if cwd is not None else None
