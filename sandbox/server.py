"""The sandbox action server: one `Sandbox` per process behind HTTP + JSON (see `http11`).

Endpoints (all but `/health` need `Authorization: Bearer TOKEN`): `GET /health`,
`POST /execute`, `GET /stream` (NDJSON of stream events), `GET /files?path=`,
`GET /download?path=`, `GET /artifacts/{name}`, `PUT /upload?path=`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from sandbox.core import Sandbox
from sandbox.http11 import HttpError, Request, Response, json_response, serve_connection
from sandbox.protocol import FileEntry, ServerInfo, StreamEvent, parse_action

log = logging.getLogger("sandbox.server")

MAX_DOWNLOAD = 512 * 1024 * 1024
STREAM_BACKLOG = 4096
"""Unsent stream batches after which a subscriber that does not read is dropped."""
_PAGE = os.sysconf("SC_PAGE_SIZE")

Handler = Callable[[Request], Awaitable[Response]]


class SandboxServer:
    """Serves one `Sandbox` over HTTP to clients holding the token."""

    def __init__(self, sandbox: Sandbox, token: str) -> None:
        if not token:
            raise ValueError("the server needs a non-empty token")
        self.sandbox = sandbox
        self.workspace = sandbox.workspace
        self._token = token.encode()
        self._started = time.monotonic()
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="execute")
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()
        self._pending: deque[StreamEvent] = deque()
        self._pending_lock = threading.Lock()
        self._flush_scheduled = False
        self._writers: set[asyncio.StreamWriter] = set()
        self._routes: dict[tuple[str, str], Handler] = {
            ("GET", "/health"): self._health,
            ("POST", "/execute"): self._execute,
            ("POST", "/input"): self._input,
            ("GET", "/stream"): self._stream,
            ("GET", "/files"): self._files,
            ("GET", "/download"): self._download,
            ("PUT", "/upload"): self._upload,
        }
        sandbox.subscribe(self._on_stream_event)

    # ------------------------------------------------------------------ lifecycle

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Listen on `host:port` (0 picks a free port) and return the port."""
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._connection, host, port, backlog=128)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    async def stop(self, timeout_s: float = 5.0) -> None:
        """Stop listening, end the streams and close the sandbox (its processes included)."""
        self._server.close()
        for queue in list(self._subscribers):
            queue.put_nowait(None)
        for writer in list(self._writers):
            writer.close()
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, self.sandbox.close), timeout_s)
        except TimeoutError:
            log.warning("closing the sandbox took over %.0f s; exiting anyway", timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ routing

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            await serve_connection(reader, writer, self._dispatch, self._authorize)
        finally:
            self._writers.discard(writer)

    async def _dispatch(self, request: Request) -> Response:
        handler = self._routes.get((request.method, request.path))
        if handler is not None:
            return await handler(request)
        if request.path.startswith("/artifacts/") and request.method == "GET":
            return await self._artifact(request.path.removeprefix("/artifacts/"))
        if any(path == request.path for _, path in self._routes):
            raise HttpError(405, f"{request.method} is not allowed on {request.path}")
        raise HttpError(404, f"no endpoint {request.path}")

    def _authorize(self, target: bytes, headers: Iterable[tuple[bytes, bytes]]) -> HttpError | None:
        if target == b"/health" or target.startswith(b"/health?"):
            return None
        for name, value in headers:
            if name == b"authorization":
                scheme, _, given = value.partition(b" ")
                if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self._token):
                    return None
                return HttpError(403, "wrong token")
        return HttpError(401, "missing 'Authorization: Bearer <token>' header")

    # ------------------------------------------------------------------ endpoints

    async def _health(self, request: Request) -> Response:
        info = ServerInfo(
            workspace=str(self.workspace),
            uptime_s=round(time.monotonic() - self._started, 3),
            rss_mb=rss_mb(),
            executors=self.sandbox.available(),
            pid=os.getpid(),
        )
        return Response(body=info.model_dump_json().encode())

    async def _execute(self, request: Request) -> Response:
        payload = _json_object(request.body, "action", dict, '{"action": {...}}')
        try:
            action = parse_action(payload["action"])
        except ValidationError as exc:
            raise HttpError(422, f"invalid action: {validation_message(exc)}") from exc
        loop = asyncio.get_running_loop()
        observation = await loop.run_in_executor(self._pool, self.sandbox.execute, action)
        return Response(body=b'{"observation":' + observation.model_dump_json().encode() + b"}")

    async def _input(self, request: Request) -> Response:
        payload = _json_object(request.body, "text", str, '{"text": "..."}')
        sent = self.sandbox.send_input(payload["text"])
        return json_response({"sent": sent})

    async def _stream(self, request: Request) -> Response:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._subscribers.add(queue)
        return Response(content_type="application/x-ndjson", stream=self._drain(queue))

    async def _files(self, request: Request) -> Response:
        directory = self._resolve(request.query.get("path", "."))

        def listing() -> list[dict[str, object]]:
            if not directory.is_dir():
                raise HttpError(400, f"{request.query.get('path')} is not a directory")
            entries = []
            for entry in sorted(directory.iterdir()):
                try:
                    is_dir, size = entry.is_dir(), entry.lstat().st_size
                except OSError:
                    continue
                rel = str(entry.relative_to(self.workspace))
                entries.append(FileEntry(path=rel, is_dir=is_dir, size=size).model_dump())
            return entries

        entries = await asyncio.get_running_loop().run_in_executor(self._pool, listing)
        return json_response({"entries": entries})

    async def _download(self, request: Request) -> Response:
        return await self._file_response(self._resolve(request.query.get("path")))

    async def _artifact(self, name: str) -> Response:
        if not name or "/" in name or name.startswith("."):
            raise HttpError(400, f"bad artifact name {name!r}")
        return await self._file_response(self.sandbox.artifacts / name)

    async def _upload(self, request: Request) -> Response:
        target = self._resolve(request.query.get("path"))

        def write() -> None:
            if target.is_dir():
                raise HttpError(400, f"{target} is a directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(request.body)

        await asyncio.get_running_loop().run_in_executor(self._pool, write)
        rel = str(target.relative_to(self.workspace))
        return json_response({"path": rel, "size": len(request.body)})

    async def _file_response(self, path: Path) -> Response:
        def read() -> bytes:
            if not path.is_file():
                raise HttpError(404, f"no file {path}")
            if path.stat().st_size > MAX_DOWNLOAD:
                raise HttpError(413, f"{path} is over {MAX_DOWNLOAD} bytes")
            return path.read_bytes()

        data = await asyncio.get_running_loop().run_in_executor(self._pool, read)
        return Response(body=data, content_type="application/octet-stream")

    def _resolve(self, raw: str | None) -> Path:
        if not raw:
            raise HttpError(400, "missing the ?path= parameter")
        given = Path(raw)
        full = (given if given.is_absolute() else self.workspace / given).resolve()
        if not full.is_relative_to(self.workspace):
            raise HttpError(403, f"{raw} is outside the workspace {self.workspace}")
        return full

    # ------------------------------------------------------------------ streaming

    def _on_stream_event(self, event: StreamEvent) -> None:
        """Called by the shell's thread for every chunk: batch them, wake the loop once."""
        if not self._subscribers or self._loop is None:
            return
        with self._pending_lock:
            self._pending.append(event)
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        with contextlib.suppress(RuntimeError):  # the loop is closing: nobody is listening
            self._loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._pending_lock:
            events = list(self._pending)
            self._pending.clear()
            self._flush_scheduled = False
        data = b"".join(event.model_dump_json().encode() + b"\n" for event in events)
        for queue in list(self._subscribers):
            if queue.qsize() > STREAM_BACKLOG:
                log.warning("dropping a stream subscriber that stopped reading")
                self._subscribers.discard(queue)
                queue.put_nowait(None)
            else:
                queue.put_nowait(data)

    async def _drain(self, queue: asyncio.Queue[bytes | None]) -> AsyncIterator[bytes]:
        try:
            while True:
                data = await queue.get()
                while data is not None and not queue.empty():
                    more = queue.get_nowait()
                    if more is None:
                        yield data
                        return
                    data += more
                if data is None:
                    return
                yield data
        finally:
            self._subscribers.discard(queue)


def rss_mb() -> float:
    """This process's resident memory in MB, from /proc/self/statm."""
    with open("/proc/self/statm", "rb") as statm:
        resident = int(statm.read().split()[1])
    return round(resident * _PAGE / 1_048_576, 1)


def validation_message(exc: ValidationError) -> str:
    """Pydantic's messages, one per bad field, without the documentation links."""
    parts = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else error["msg"])
    return "; ".join(parts)


def _json_object(body: bytes, field: str, kind: type, shape: str) -> dict[str, Any]:
    """The request body as a JSON object whose `field` is a `kind`, else a 4xx HttpError."""
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise HttpError(400, f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get(field), kind):
        raise HttpError(422, f"the request body must be a JSON object {shape}")
    return payload
