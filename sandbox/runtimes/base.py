"""The `Runtime` interface and `ServerRuntime`: a runtime that talks to a server.

Local, docker and remote runtimes all own a `SandboxClient`; they differ only in how the
server is started, checked and stopped. `ServerRuntime` holds what they share: the calls,
restarting a server that died (the next observation says so), and a stream that survives it.
It sees the client only as a `ServerClient`, so this module never imports `sandbox.client`
(nor aiohttp). The errors live in `sandbox.errors` and are re-exported here.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Literal, Protocol, TypeVar

from sandbox.errors import SandboxConnectionError, SandboxError, SandboxRequestError
from sandbox.protocol import (
    Action,
    CmdRunAction,
    ErrorObservation,
    FileEntry,
    Observation,
    ServerInfo,
    StreamEvent,
)

__all__ = [
    "LOST_ACTION",
    "RESTART_NOTE",
    "Runtime",
    "RuntimeState",
    "SandboxConnectionError",
    "SandboxError",
    "SandboxRequestError",
    "ServerClient",
    "ServerRuntime",
    "with_note",
]

RuntimeState = Literal["stopped", "starting", "ready", "restarting", "dead", "closed"]
T = TypeVar("T")


class ServerClient(Protocol):
    """What `ServerRuntime` calls on its client (`sandbox.client.SandboxClient` is one)."""

    async def health(self) -> ServerInfo:
        """The server's `/health` answer."""
        ...

    async def execute(
        self,
        action: Action,
        timeout: float | None = None,  # noqa: ASYNC109 (the contract's name)
    ) -> Observation:
        """Run `action` on the server."""
        ...

    async def send_input(self, text: str) -> bool:
        """Type text or a key into the running command."""
        ...

    def stream(self) -> AsyncIterator[StreamEvent]:
        """Shell output events until either side closes."""
        ...

    async def download(self, path: str) -> bytes:
        """The bytes of a workspace file."""
        ...

    async def artifact(self, name: str) -> bytes:
        """The bytes of an artifact by name."""
        ...

    async def upload(self, path: str, data: bytes) -> None:
        """Write a workspace file."""
        ...

    async def list_files(self, path: str = ".") -> list[FileEntry]:
        """The entries of a workspace directory."""
        ...

    async def close(self) -> None:
        """Close the connections."""
        ...


class Runtime(Protocol):
    """A sandbox the controller can run actions in, whatever starts it."""

    name: str
    state: RuntimeState

    async def start(self) -> None:
        """Start the sandbox; raises SandboxError with an actionable message."""
        ...

    async def execute(self, action: Action) -> Observation:
        """Run one action; raises SandboxError only if the sandbox is unrecoverable."""
        ...

    def stream(self) -> AsyncIterator[StreamEvent]:
        """Live output of the shell, until close()."""
        ...

    async def send_input(self, text: str) -> bool:
        """Type text or a key (`C-c`) into the running command now; False if none runs."""
        ...

    async def info(self) -> ServerInfo:
        """The server's health and memory."""
        ...

    async def download(self, name: str) -> bytes:
        """An artifact (a PNG written by Jupyter or the browser) by name."""
        ...

    async def upload(self, path: str, data: bytes) -> None:
        """Write `data` to `path` in the workspace."""
        ...

    async def list_files(self, path: str = ".") -> list[FileEntry]:
        """The entries of a workspace directory."""
        ...

    async def close(self) -> None:
        """Stop the sandbox, leaving no process behind."""
        ...


RESTART_NOTE = (
    "The sandbox server had stopped and was restarted: the shell's state (working directory, "
    "exported variables, running processes) and the Jupyter kernel's variables were lost."
)
LOST_ACTION = (
    "The sandbox server stopped while running this action ({why}) and was restarted: the "
    "action's result is lost, and so is the shell's state (working directory, exported "
    "variables, running processes). Check its effects and run it again if it is still needed."
)


def with_note(observation: Observation, note: str) -> Observation:
    """`observation` with `note` added (in `note` where the model has one, else in front)."""
    if "note" in type(observation).model_fields:
        old = getattr(observation, "note", None)
        return observation.model_copy(update={"note": f"{note} {old}" if old else note})
    if isinstance(observation, ErrorObservation) or hasattr(observation, "content"):
        content = getattr(observation, "content", "")
        return observation.model_copy(update={"content": f"[{note}]\n{content}"})
    return observation


class ServerRuntime(ABC):
    """A runtime backed by a sandbox server: subclasses say how to launch and stop it."""

    name: str = "server"
    max_restarts: int = 3
    """Consecutive failed launches after which the sandbox is declared dead."""

    def __init__(self, soft_timeout_s: float | None = None) -> None:
        self.state: RuntimeState = "stopped"
        self.restarts = 0
        self.soft_timeout_s = soft_timeout_s
        self._client: ServerClient | None = None
        self._generation = 0
        self._changed = asyncio.Event()
        self._restart_lock: asyncio.Lock | None = None

    # ------------------------------------------------------------------ for subclasses

    @abstractmethod
    async def _launch(self) -> ServerClient:
        """Start a server and return a client connected to it; raise SandboxError if not."""

    @abstractmethod
    async def _terminate(self) -> None:
        """Stop the server and every process it started."""

    @abstractmethod
    def _alive(self) -> bool:
        """False when the server is known to be gone (a dead pid); True if unknown."""

    def _describe_failure(self) -> str:
        """Where to look when the server cannot be started (a log file, a URL ...)."""
        return ""

    # ------------------------------------------------------------------ the Runtime API

    async def start(self) -> None:
        """Start the server; raises SandboxError with an actionable message."""
        if self.state == "closed":
            raise SandboxError("This runtime was closed; create a new one.")
        if self.state == "ready":
            return
        self.state = "starting"
        try:
            self._set_client(await self._launch())
        except BaseException:
            self.state = "stopped"
            await self._terminate()
            raise
        self.state = "ready"

    async def execute(self, action: Action) -> Observation:
        """Run one action, restarting a dead server; SandboxError only if unrecoverable."""
        if (
            self.soft_timeout_s is not None
            and isinstance(action, CmdRunAction)
            and action.soft_timeout is None
            and action.timeout is None  # a hard timeout replaces the soft one
        ):
            action = action.model_copy(update={"soft_timeout": self.soft_timeout_s})
        note = await self._ensure_running()
        client = self._require_client()
        try:
            observation = await client.execute(action)
        except SandboxConnectionError as exc:
            if self.state == "closed":
                raise
            if not exc.sent:
                await self._restart(client)
                observation = await self._require_client().execute(action)
                return with_note(observation, RESTART_NOTE)
            await self._restart(client)
            return ErrorObservation(error_kind="sandbox", content=LOST_ACTION.format(why=exc))
        return with_note(observation, note) if note else observation

    async def stream(self) -> AsyncIterator[StreamEvent]:
        """Live shell output; resubscribes after a restart and ends at close()."""
        while self.state != "closed":
            client, generation = self._client, self._generation
            if client is not None and self.state == "ready":
                try:
                    async for event in client.stream():
                        yield event
                except SandboxConnectionError:
                    pass
            if self._closed():
                return
            if generation == self._generation:
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), timeout=0.5)

    async def send_input(self, text: str) -> bool:
        """Type text or a key (`C-c`) into the running command now; False if none runs."""
        return await self._call(lambda c: c.send_input(text))

    async def info(self) -> ServerInfo:
        """The server's health: uptime, memory, executors."""
        return await self._call(lambda c: c.health())

    async def download(self, name: str) -> bytes:
        """An artifact by name (a PNG from Jupyter or a browser screenshot)."""
        return await self._call(lambda c: c.artifact(name))

    async def download_file(self, path: str) -> bytes:
        """A file of the workspace."""
        return await self._call(lambda c: c.download(path))

    async def upload(self, path: str, data: bytes) -> None:
        """Write `data` to `path` (relative to the workspace, or absolute inside it)."""
        await self._call(lambda c: c.upload(path, data))

    async def list_files(self, path: str = ".") -> list[FileEntry]:
        """The entries of a workspace directory."""
        return await self._call(lambda c: c.list_files(path))

    async def close(self) -> None:
        """Stop the server and its processes; the runtime cannot be used afterwards."""
        if self.state == "closed":
            return
        self.state = "closed"
        self._changed.set()
        client, self._client = self._client, None
        if client is not None:
            await client.close()
        await self._terminate()

    # ------------------------------------------------------------------ restarts

    def _closed(self) -> bool:
        return self.state == "closed"

    def _set_client(self, client: ServerClient) -> None:
        self._client = client
        self._generation += 1
        self._changed.set()

    def _require_client(self) -> ServerClient:
        if self._client is None:
            if self.state == "closed":
                raise SandboxError("This runtime was closed; create a new one.")
            raise SandboxError("The sandbox was not started: call `await runtime.start()` first.")
        return self._client

    async def _ensure_running(self) -> str | None:
        if self.state == "dead":
            raise SandboxError(self._dead_message("it failed before"))
        if self.state in ("stopped", "closed"):
            self._require_client()
        if self._alive():
            return None
        await self._restart(self._client)
        return RESTART_NOTE

    async def _call(self, call: Callable[[ServerClient], Awaitable[T]]) -> T:
        await self._ensure_running()
        client = self._require_client()
        try:
            return await call(client)
        except SandboxConnectionError:
            if self.state == "closed":
                raise
            await self._restart(client)
            return await call(self._require_client())

    async def _restart(self, failed: ServerClient | None) -> None:
        if self._restart_lock is None:
            self._restart_lock = asyncio.Lock()
        async with self._restart_lock:
            if self._client is not failed and self.state == "ready":
                return  # another caller restarted it meanwhile
            self.state = "restarting"
            if failed is not None:
                await failed.close()
            self._client = None
            last: Exception | None = None
            for _ in range(self.max_restarts):
                await self._terminate()
                try:
                    self._set_client(await self._launch())
                except SandboxError as exc:
                    last = exc
                    continue
                self.restarts += 1
                self.state = "ready"
                return
            self.state = "dead"
            self._changed.set()
            raise SandboxError(self._dead_message(str(last)))

    def _dead_message(self, last: str) -> str:
        where = self._describe_failure()
        return (
            f"The sandbox is unrecoverable: its server could not be restarted after "
            f"{self.max_restarts} attempts (last error: {last}). "
            + (f"{where} " if where else "")
            + "Close this session and start a new one; if it fails again, check that "
            "`python -m sandbox serve --workspace DIR` runs on this machine."
        )
