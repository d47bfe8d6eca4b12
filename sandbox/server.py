"""The sandbox action server: one `Sandbox` per process behind HTTP + JSON (see `http11`).

Endpoints (all but `/health` need `Authorization: Bearer TOKEN`): `GET /health`,
`POST /execute`, `POST /input`, `GET /stream` (NDJSON of stream events, see `stream_fanout`),
`GET /files?path=`, `GET /download?path=`, `GET /artifacts/{name}`, `PUT /upload?path=`.
Every path a request names is resolved (symlinks followed) and must stay in its folder: the
workspace, or the artifacts folder for `/artifacts`. JSON bodies are parsed strictly (no NaN
or Infinity, at most 200 levels deep) and validated by `protocol` before anything runs.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import logging
import os
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pydantic_core
from pydantic import ValidationError

from sandbox.core import Sandbox
from sandbox.http11 import (
    HttpError,
    Limits,
    Peer,
    Request,
    Response,
    json_response,
    serve_connection,
)
from sandbox.http_listener import DEFAULT_MAX_CONNECTIONS, Listener
from sandbox.protocol import FileEntry, ServerInfo, StreamEvent, parse_action
from sandbox.stream_fanout import Fanout

log = logging.getLogger("sandbox.server")

MAX_DOWNLOAD = 512 * 1024 * 1024
MAX_INPUT_CHARS = 64 * 1024
"""Longest text `/input` types into the running command."""
_PAGE = os.sysconf("SC_PAGE_SIZE")
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # no FIFO may hold a thread

Handler = Callable[[Request], Awaitable[Response]]
_T = TypeVar("_T")


class SandboxServer:
    """Serves one `Sandbox` over HTTP to clients holding the token."""

    def __init__(
        self,
        sandbox: Sandbox,
        token: str,
        limits: Limits | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
    ) -> None:
        if not token:
            raise ValueError("the server needs a non-empty token")
        self.sandbox = sandbox
        self.workspace = sandbox.workspace
        self.artifacts = sandbox.artifacts.resolve()
        self.limits = limits or Limits()
        self._token = token.encode()
        self._started = time.monotonic()
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="execute")
        self._listener = Listener(self._connection, max_connections)
        self._fanout: Fanout | None = None
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
        self._fanout = Fanout(asyncio.get_running_loop())
        return await self._listener.start(host, port)

    async def stop(self, timeout_s: float = 5.0) -> None:
        """Stop listening, end the streams and close the sandbox (its processes included)."""
        if self._fanout is not None:
            self._fanout.close()
        self._listener.close()
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(loop.run_in_executor(None, self.sandbox.close), timeout_s)
        except TimeoutError:
            log.warning("closing the sandbox took over %.0f s; exiting anyway", timeout_s)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------ routing

    async def _connection(self, peer: Peer) -> None:
        await serve_connection(peer, self._dispatch, self._authorize, self.limits)

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
        text: str = payload["text"]
        if len(text) > MAX_INPUT_CHARS:
            raise HttpError(
                413, f"the text is {len(text)} characters; /input takes {MAX_INPUT_CHARS} at most"
            )
        # A pty whose command reads nothing blocks the write: never on the event loop.
        loop = asyncio.get_running_loop()
        sent = await loop.run_in_executor(self._pool, self.sandbox.send_input, text)
        return json_response({"sent": sent})

    async def _stream(self, request: Request) -> Response:
        if self._fanout is None:
            raise HttpError(503, "the server is not started")
        subscriber = self._fanout.subscribe()
        fanout = self._fanout

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for chunk in subscriber.chunks():
                    yield chunk
            finally:
                fanout.unsubscribe(subscriber)

        return Response(content_type="application/x-ndjson", stream=chunks())

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

        entries = await self._in_pool(listing, request.query.get("path", "."))
        return json_response({"entries": entries})

    async def _download(self, request: Request) -> Response:
        return await self._file_response(self._resolve(request.query.get("path")))

    async def _artifact(self, name: str) -> Response:
        if not name or "/" in name or name.startswith("."):
            raise HttpError(400, f"bad artifact name {name!r}")
        return await self._file_response(confine(name, self.artifacts, "artifacts folder"))

    async def _upload(self, request: Request) -> Response:
        target = self._resolve(request.query.get("path"))

        def write() -> None:
            if target.is_dir():
                raise HttpError(400, f"{target} is a directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | _OPEN_FLAGS, 0o666)
            with open(fd, "wb", closefd=True) as out:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise HttpError(400, f"{target} is not a regular file")
                out.truncate(0)
                out.write(request.body)

        await self._in_pool(write, str(target))
        rel = str(target.relative_to(self.workspace))
        return json_response({"path": rel, "size": len(request.body)})

    async def _file_response(self, path: Path) -> Response:
        def read() -> bytes:
            try:
                fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
            except FileNotFoundError:
                raise HttpError(404, f"no file {path}") from None
            with open(fd, "rb", closefd=True) as source:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    raise HttpError(404, f"no file {path}")
                if info.st_size > MAX_DOWNLOAD:
                    raise HttpError(413, f"{path} is over {MAX_DOWNLOAD} bytes")
                return source.read()

        data = await self._in_pool(read, str(path))
        return Response(body=data, content_type="application/octet-stream")

    def _resolve(self, raw: str | None) -> Path:
        return confine(raw, self.workspace, "workspace")

    async def _in_pool(self, work: Callable[[], _T], what: str) -> _T:
        """`work()` on the thread pool; a file system error becomes the 4xx that fits it."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, work)
        except OSError as exc:
            raise os_error(exc, what) from exc

    # ------------------------------------------------------------------ streaming

    def _on_stream_event(self, event: StreamEvent) -> None:
        """Called by the shell's reader thread for every event: buffered per subscriber."""
        if self._fanout is not None:
            self._fanout.publish(event)


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


def confine(raw: str | None, root: Path, what: str) -> Path:
    """`raw` (relative to `root`, or absolute) resolved, symlinks followed; 4xx unless in `root`."""
    if not raw:
        raise HttpError(400, "missing the ?path= parameter")
    if "\x00" in raw:
        raise HttpError(400, "the path holds a NUL byte")
    given = Path(raw)
    try:
        full = (given if given.is_absolute() else root / given).resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
        raise HttpError(400, f"cannot resolve {raw}: {exc}") from exc
    if not full.is_relative_to(root):
        raise HttpError(403, f"{raw} is outside the {what} {root}")
    return full


_OS_ERROR_STATUS = {
    errno.ENOENT: 404,
    errno.EACCES: 403,
    errno.EPERM: 403,
    errno.EROFS: 403,
    errno.EEXIST: 409,
    errno.ENOTDIR: 409,
    errno.EISDIR: 409,
    errno.ELOOP: 409,  # the last part turned into a symlink after it was resolved
    errno.ENXIO: 409,  # a FIFO nobody reads
    errno.ENAMETOOLONG: 414,
    errno.EINVAL: 400,
    errno.EFBIG: 413,
    errno.ENOSPC: 507,
    errno.EDQUOT: 507,
}


def os_error(exc: OSError, what: str) -> HttpError:
    """The HTTP error that says why a file operation on `what` failed (5xx only for a full disk
    or an error no request could cause)."""
    status = _OS_ERROR_STATUS.get(exc.errno or 0, 500)
    return HttpError(status, f"{what}: {exc.strerror or exc}")


def _json_object(body: bytes, field: str, kind: type, shape: str) -> dict[str, Any]:
    """The request body as a JSON object whose `field` is a `kind`, else a 4xx HttpError."""
    try:  # strict: no NaN or Infinity, no lone surrogates, at most 200 levels deep
        payload = pydantic_core.from_json(body, allow_inf_nan=False)
    except ValueError as exc:
        raise HttpError(400, f"the request body is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict) or not isinstance(payload.get(field), kind):
        raise HttpError(422, f"the request body must be a JSON object {shape}")
    return payload
