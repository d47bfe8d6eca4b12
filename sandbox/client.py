"""`SandboxClient`: the HTTP side of a runtime, one keep-alive aiohttp session per server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from sandbox.errors import SandboxConnectionError, SandboxError, SandboxRequestError
from sandbox.protocol import (
    Action,
    FileEntry,
    Observation,
    ServerInfo,
    StreamEvent,
    parse_observation,
    parse_stream_event,
)

__all__ = ["SandboxClient", "SandboxConnectionError", "SandboxError", "SandboxRequestError"]

_JSON = {"Content-Type": "application/json"}


class SandboxClient:
    """Talks to one `python -m sandbox serve` over HTTP with its token."""

    def __init__(self, base_url: str, token: str, connect_timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._auth = {"Authorization": f"Bearer {token}"}
        self._connect_timeout_s = connect_timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._streams: set[aiohttp.ClientResponse] = set()

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self._auth,
                connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=60.0),
                timeout=aiohttp.ClientTimeout(total=None, connect=self._connect_timeout_s),
                auto_decompress=False,
            )
        return self._session

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        limit_s: float | None = None,
    ) -> bytes:
        url = self.base_url + path
        try:
            async with self._http().request(
                method,
                url,
                params=params,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=limit_s, connect=self._connect_timeout_s),
            ) as response:
                body = await response.read()
                if response.status >= 400:
                    raise SandboxRequestError(response.status, _error_message(body))
                return body
        except aiohttp.ClientConnectorError as exc:
            raise SandboxConnectionError(
                f"cannot connect to the sandbox server at {self.base_url}: {exc.os_error}"
            ) from exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise SandboxConnectionError(
                f"the sandbox server at {self.base_url} dropped the connection during "
                f"{method} {path}: {exc or type(exc).__name__}",
                sent=True,
            ) from exc
        except TimeoutError as exc:
            raise SandboxConnectionError(
                f"no answer from the sandbox server at {self.base_url} to {method} {path} "
                f"within {limit_s} s",
                sent=True,
            ) from exc

    async def health(self) -> ServerInfo:
        """`GET /health`: uptime, memory and executors of the server."""
        return ServerInfo.model_validate_json(await self._request("GET", "/health"))

    async def execute(
        self,
        action: Action,
        timeout: float | None = None,  # noqa: ASYNC109 (the contract's name)
    ) -> Observation:
        """Run `action` on the server and return its observation (`timeout`: client-side limit)."""
        body = b'{"action":' + action.model_dump_json().encode() + b"}"
        raw = await self._request("POST", "/execute", data=body, headers=_JSON, limit_s=timeout)
        try:
            payload = json.loads(raw)["observation"]
        except (ValueError, KeyError, TypeError) as exc:
            raise SandboxError(f"the sandbox server sent a malformed reply: {raw[:200]!r}") from exc
        return parse_observation(payload)

    async def send_input(self, text: str) -> bool:
        """Type `text` (or a key like `C-c`) into the running command now; False if none runs."""
        body = json.dumps({"text": text}).encode()
        raw = await self._request("POST", "/input", data=body, headers=_JSON)
        return bool(json.loads(raw).get("sent"))

    async def stream(self) -> AsyncIterator[StreamEvent]:
        """Shell output events as the server sends them, until the server or client closes."""
        try:
            async with self._http().get(
                self.base_url + "/stream", timeout=aiohttp.ClientTimeout(total=None)
            ) as response:
                if response.status >= 400:
                    raise SandboxRequestError(
                        response.status, _error_message(await response.read())
                    )
                self._streams.add(response)
                try:
                    async for line in response.content:
                        if line.strip():
                            yield parse_stream_event(line)
                finally:
                    self._streams.discard(response)
        except aiohttp.ClientConnectorError as exc:
            raise SandboxConnectionError(
                f"cannot connect to the sandbox server at {self.base_url}: {exc.os_error}"
            ) from exc
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            if self._session is None:
                return  # close() ended it
            raise SandboxConnectionError(
                f"the output stream of {self.base_url} was cut: {exc or type(exc).__name__}",
                sent=True,
            ) from exc

    async def download(self, path: str) -> bytes:
        """The bytes of a workspace file."""
        return await self._request("GET", "/download", params={"path": path})

    async def artifact(self, name: str) -> bytes:
        """The bytes of an artifact (an image written by an executor) by name."""
        return await self._request("GET", "/artifacts/" + name)

    async def upload(self, path: str, data: bytes) -> None:
        """Write `data` to a workspace file, creating its parent directories."""
        await self._request("PUT", "/upload", params={"path": path}, data=data)

    async def list_files(self, path: str = ".") -> list[FileEntry]:
        """The entries of a workspace directory."""
        raw = await self._request("GET", "/files", params={"path": path})
        entries: list[dict[str, Any]] = json.loads(raw)["entries"]
        return [FileEntry.model_validate(entry) for entry in entries]

    async def close(self) -> None:
        """Close the HTTP session and its connections; open streams end."""
        session, self._session = self._session, None
        for response in list(self._streams):
            # Closing the session alone leaves a reader of the stream waiting forever.
            response.content.set_exception(aiohttp.ClientConnectionError("the client was closed"))
        if session is not None:
            await session.close()


def _error_message(body: bytes) -> str:
    try:
        message = json.loads(body)["error"]
        return str(message)
    except (ValueError, KeyError, TypeError):
        return body.decode("utf-8", "replace")[:500] or "(no message)"
