"""`RemoteRuntime`: a `python -m sandbox serve` started elsewhere (a pod, a VM, a container).

We own neither the server nor its lifetime, so "restarting" means reconnecting: after a
connection error the runtime retries with backoff for a bounded time. A heartbeat keeps the
HTTP connection warm through proxies and notices a server that was restarted between two
actions (its pid or start time changed), so the next observation can say the shell's state is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from sandbox.client import SandboxClient
from sandbox.errors import SandboxConnectionError, SandboxError, SandboxRequestError
from sandbox.protocol import PROTOCOL_VERSION, Action, ErrorObservation, Observation, ServerInfo
from sandbox.runtimes import leftovers
from sandbox.runtimes.base import RESTART_NOTE, ServerRuntime, with_note

RECONNECT_NOTE = (
    "The remote sandbox server was restarted since the last action: the shell's state "
    "(working directory, exported variables, running processes) and the Jupyter kernel's "
    "variables were lost."
)


class RemoteRuntime(ServerRuntime):
    """A sandbox server at `url`, reached with its bearer token `api_key`."""

    name = "remote"
    max_restarts = 1  # `_launch` itself retries for `reconnect_timeout_s`

    def __init__(
        self,
        url: str,
        api_key: str,
        reconnect_timeout_s: float = 30.0,
        heartbeat_s: float = 20.0,
        soft_timeout_s: float | None = None,
    ) -> None:
        super().__init__(soft_timeout_s=soft_timeout_s)
        if not url.startswith(("http://", "https://")):
            raise SandboxError(
                f"The remote sandbox URL {url!r} must start with http:// or https:// "
                "(e.g. http://sandbox.example:8000); set [sandbox.remote] url."
            )
        if not api_key:
            raise SandboxError(
                "The remote runtime needs the server's token: set [sandbox.remote] api_key "
                "(or its environment variable) to the SANDBOX_TOKEN the server was started with."
            )
        self.url = url.rstrip("/")
        self._api_key = api_key
        self.reconnect_timeout_s = reconnect_timeout_s
        self.heartbeat_s = heartbeat_s
        self._identity: tuple[int, float] | None = None
        self._server_changed = False
        self._heartbeat: asyncio.Task[None] | None = None
        leftovers.sweep_in_background()  # what dead apps left here, whatever their runtime

    # ------------------------------------------------------------------ ServerRuntime hooks

    async def _launch(self) -> SandboxClient:
        client = SandboxClient(self.url, self._api_key, connect_timeout_s=5.0)
        deadline = time.monotonic() + self.reconnect_timeout_s
        delay = 0.1
        while True:
            try:
                info = await client.health()
                await client.list_files(".")  # /health is public: this checks the key
                break
            except SandboxRequestError as exc:
                await client.close()
                raise self._refused(exc) from exc
            except SandboxConnectionError as exc:
                if time.monotonic() + delay > deadline:
                    await client.close()
                    raise SandboxError(
                        f"Cannot reach the remote sandbox server at {self.url} "
                        f"(tried for {self.reconnect_timeout_s:.0f} s): {exc}. "
                        + self._describe_failure()
                    ) from exc
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        if info.protocol_version != PROTOCOL_VERSION:
            await client.close()
            raise SandboxError(
                f"The sandbox server at {self.url} speaks protocol {info.protocol_version}, "
                f"this workbench speaks {PROTOCOL_VERSION}: install the same workbench version "
                "on both sides."
            )
        self._note_identity(info)
        if self._heartbeat is None:
            self._heartbeat = asyncio.create_task(self._beat())
        return client

    async def _terminate(self) -> None:
        if self.state == "closed" and self._heartbeat is not None:
            self._heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._heartbeat
            self._heartbeat = None

    def _alive(self) -> bool:
        return True

    def _describe_failure(self) -> str:
        return (
            f"Check that the server runs and that {self.url} reaches it (`curl {self.url}/health` "
            "should answer); on Kubernetes: `kubectl get pods`, then `kubectl logs` of the pod."
        )

    def _dead_message(self, last: str) -> str:
        return (
            f"The remote sandbox at {self.url} is unreachable ({last}). Start a new session "
            "once the server is back."
        )

    # ------------------------------------------------------------------ the Runtime API

    async def execute(self, action: Action) -> Observation:
        """Run one action; says so when the server was restarted since the previous one."""
        observation = await super().execute(action)
        if self._server_changed:
            self._server_changed = False
            said = str(getattr(observation, "note", None) or "")
            lost = isinstance(observation, ErrorObservation) and observation.error_kind == "sandbox"
            if RESTART_NOTE not in said and not lost:
                observation = with_note(observation, RECONNECT_NOTE)
        return observation

    # ------------------------------------------------------------------ internals

    def _refused(self, exc: SandboxRequestError) -> SandboxError:
        if exc.status in (401, 403):
            return SandboxError(
                f"The sandbox server at {self.url} refused the key (HTTP {exc.status}: "
                f"{exc.message}). Set [sandbox.remote] api_key to the SANDBOX_TOKEN the server "
                "was started with."
            )
        return SandboxError(
            f"The server at {self.url} answered HTTP {exc.status} ({exc.message}); is it a "
            "`python -m sandbox serve` server of the same workbench version?"
        )

    def _note_identity(self, info: ServerInfo) -> None:
        started = time.time() - info.uptime_s
        identity = (info.pid, started)
        old = self._identity
        if old is not None and (old[0] != info.pid or abs(old[1] - started) > 2.0):
            self._server_changed = True
        self._identity = identity

    async def _beat(self) -> None:
        while self.state != "closed":
            await asyncio.sleep(self.heartbeat_s)
            client = self._client
            if client is None or self.state != "ready":
                continue
            with contextlib.suppress(SandboxError):  # the next action reconnects and reports it
                self._note_identity(await client.health())
