"""`mcp_list` and `mcp_call`: MCP servers started by the sandbox server, inside the sandbox.

A stdio server is started through `confine.wrap`, like the shell and the kernel: with
bubblewrap in a nested pid namespace of its own, in Docker as the agent's uid. So it runs under
the agent's isolation and sees the agent's file system, and nothing it does reaches further.
With bubblewrap it also sees, read-only unless listed as `writable`, the host paths its spec
`binds` (its program, scripts, `read_only`: staged by the local runtime under
`confine.MCP_STAGE`, which the agent's processes see empty), and gets a cache folder of its
own there (`UV_CACHE_DIR`, `npm_config_cache`, `XDG_CACHE_HOME`). Paths its command names
that exist on the host but not here are named in the server's `notice`, with the fix.
Its environment is the SDK's minimal one (`PATH`, `HOME`, ...), the sandbox's extra variables
and the server's own `env`; the values of that `env` arrive in the action's body and go into that
process only, never into the agent's shell or kernel (see `docs/security.md`). A URL server is
reached over streamable HTTP from the sandbox server process, so its `headers` stay in that
process's memory.

The official SDK is asyncio: this executor runs its own event loop in one thread, and the
server's pool threads hand it coroutines (`run_coroutine_threadsafe`). Each server's client
lives in one task for its whole life (the SDK's context managers must be left in the task that
entered them). A server whose connection closes (it crashed, or was killed) is reported once by
the call that found out (`server_failed`) and forgotten.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import itertools
import json
import os
import secrets
import tempfile
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, TypeVar

from sandbox import confine
from sandbox.executors import mcp_missing
from sandbox.executors.base import ExecutorContext, register
from sandbox.protocol import (
    Action,
    ErrorObservation,
    McpCallAction,
    McpCallObservation,
    McpListAction,
    McpListObservation,
    McpServerSpec,
    McpServerState,
    McpToolInfo,
    Observation,
)
from sandbox.truncate import truncate_middle

if TYPE_CHECKING:
    from mcp import Client

T = TypeVar("T")
_IMAGE_SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif"}
_IMAGE_SUFFIX |= {"image/webp": ".webp", "image/svg+xml": ".svg"}
_STDERR_TAIL = 4096
_STDERR_LINES = 8
_STOP_TIMEOUT_S = 10.0
_CACHES = {"XDG_CACHE_HOME": ".", "UV_CACHE_DIR": "uv", "npm_config_cache": "npm"}
SESSION_ENV = "SANDBOX_SESSION"
"""The local runtime's marker of every process of a session (`runtimes/leftovers.py`)."""

RESULT_LIMIT = 100_000
"""Characters of a tool's text result kept (its middle is cut beyond that)."""
SERVER_CWD = "/"
"""Where stdio MCP servers start (workbench makes the config's relative paths absolute)."""


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def describe(exc: BaseException) -> str:
    """An error as one short sentence."""
    leaf = _leaf(exc)
    text = str(leaf).strip()
    if isinstance(leaf, TimeoutError) and not text:
        text = "no answer in time"
    return f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__


def _connection_closed(exc: BaseException) -> bool:
    from mcp import MCPError
    from mcp.types import CONNECTION_CLOSED

    leaf = _leaf(exc)
    return isinstance(leaf, MCPError) and leaf.code == CONNECTION_CLOSED


def hidden_notice(name: str, spec: McpServerSpec) -> str:
    """A sentence naming the paths of `spec` that exist on the host but not here, with the
    fix ("" when it sees them all)."""
    targets = [Path(b.target) for b in spec.binds if Path(b.source).exists()]
    hidden = [
        path
        for path in spec.host_paths
        if not os.path.exists(path) and not any(Path(path).is_relative_to(t) for t in targets)
    ]
    if not hidden:
        return ""
    listed = ", ".join(json.dumps(p) for p in hidden)
    return (
        f"the MCP server {name!r} names {listed}, which the sandbox does not show it (the "
        f"path exists on the host). Fix: add it to read_only = [{listed}] (or writable) under "
        f"[mcp.servers.{name}] (on Docker: mount it with sandbox.volumes), or set "
        "sandbox = false there to run this trusted server on the host"
    )


@dataclass
class _Server:
    """One started MCP server: its client, and the task that holds its connection open."""

    name: str
    spec: McpServerSpec
    errlog: IO[str] | None = None
    client: Client | None = None
    task: asyncio.Task[None] | None = None
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    tools: list[McpToolInfo] = field(default_factory=list)

    def stderr_tail(self) -> str:
        """The end of what a stdio server wrote to stderr ("" when nothing)."""
        if self.errlog is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.errlog.flush()
            fd = self.errlog.fileno()
            size = os.fstat(fd).st_size
            data = os.pread(fd, _STDERR_TAIL, max(0, size - _STDERR_TAIL))
            lines = data.decode(errors="replace").strip().splitlines()
            return "\n".join(line.rstrip() for line in lines[-_STDERR_LINES:])
        return ""

    def explain(self, what: str) -> str:
        """`what`, with the end of its stderr when there is some."""
        tail = self.stderr_tail()
        return f"{what}; its stderr ends with:\n{tail}" if tail else what

    def close_log(self) -> None:
        """Let go of the stderr file (it was never linked: its space is freed)."""
        if self.errlog is not None:
            with contextlib.suppress(OSError):
                self.errlog.close()
            self.errlog = None


class McpExecutor:
    """The MCP servers of one sandbox, and their tools."""

    name: ClassVar[str] = "mcp"
    action_kinds: ClassVar[tuple[str, ...]] = ("mcp_list", "mcp_call")

    def __init__(self, context: ExecutorContext) -> None:
        self.context = context
        self._servers: dict[str, _Server] = {}
        self._images = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ the executor API

    def execute(self, action: Action) -> Observation:
        """List (starting what is not running) or call."""
        if isinstance(action, McpListAction):
            # A server that never answers is waited for, then stopped (up to _STOP_TIMEOUT_S):
            # the others must not be lost with it.
            slowest = max((s.start_timeout for s in action.servers.values()), default=0)
            wait = slowest + _STOP_TIMEOUT_S + 5
            return self._run(self._list(action), wait)
        if isinstance(action, McpCallAction):
            return self._run(self._call(action), action.timeout + 5)
        return ErrorObservation(content=f"The mcp executor does not handle '{action.kind}'.")

    def close(self) -> None:
        """Stop every server (its process and the ones it started) and the loop."""
        if self._loop.is_closed():
            return
        with contextlib.suppress(Exception):
            self._run(self._stop_all(), _STOP_TIMEOUT_S + 2)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

    # ------------------------------------------------------------------ inside the loop

    def _run(self, coroutine: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except FutureTimeout:
            future.cancel()
            raise TimeoutError(f"the MCP executor got no answer in {timeout:g} s") from None

    async def _list(self, action: McpListAction) -> McpListObservation:
        names = list(action.servers)
        states = await asyncio.gather(*(self._ensure(n, action.servers[n]) for n in names))
        failed = [s.name for s in states if s.error]
        content = f"{len(states) - len(failed)} MCP server(s) running"
        if failed:
            content += f"; not running: {', '.join(failed)}"
        return McpListObservation(servers=list(states), content=content)

    async def _ensure(self, name: str, spec: McpServerSpec) -> McpServerState:
        running = self._servers.get(name)
        if running is not None and running.spec == spec and running.client is not None:
            return McpServerState(name=name, tools=running.tools)
        if running is not None:
            await self._stop(running)
            running.close_log()
        started = time.monotonic()
        server = _Server(name, spec)
        notice = hidden_notice(name, spec)
        ready: asyncio.Future[None] = self._loop.create_future()
        try:
            transport = self._transport(server)
            server.task = asyncio.ensure_future(self._hold(server, transport, ready))
            await asyncio.wait_for(asyncio.shield(ready), spec.start_timeout)
        except BaseException as exc:
            if isinstance(exc, TimeoutError):
                why = f"no answer within {spec.start_timeout:g} s"
            else:
                why = describe(exc)
            await self._stop(server)  # its process has exited: its stderr is all there
            if confine.enabled():  # the sandbox may be why: say so, and what to do
                why += (
                    " (it runs in the sandbox, which shows it the system, the workspace and the "
                    "files its command names: add what else it needs to read_only under "
                    f"[mcp.servers.{name}], or set sandbox = false to run it on the host)"
                )
            error = server.explain(f"the MCP server {name!r} did not start: {why}")
            server.close_log()
            if isinstance(exc, asyncio.CancelledError):
                raise
            seconds = time.monotonic() - started
            return McpServerState(name=name, error=error, notice=notice, seconds=seconds)
        self._servers[name] = server
        seconds = time.monotonic() - started
        return McpServerState(name=name, tools=server.tools, notice=notice, seconds=seconds)

    def _transport(self, server: _Server) -> Any:
        spec = server.spec
        if spec.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            timeout = httpx2.Timeout(30.0, read=300.0)
            http = httpx2.AsyncClient(headers=dict(spec.headers), timeout=timeout)
            return streamable_http_client(spec.url, http_client=http)
        if not spec.command:
            raise ValueError("neither a command nor a URL is given")
        from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client

        env = get_default_environment() | self.context.env
        argv = self._confined(server, env)
        env |= spec.env
        # The SDK starts it in a session of its own: the runtime finds it by this marker.
        marker = os.environ.get(SESSION_ENV)
        if marker:
            env[SESSION_ENV] = marker
        # Started in `/`, not the workspace: there the agent could plant a module or a
        # node_modules package that the server would load, and run it with the server's `env`.
        params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=SERVER_CWD)
        # Unlinked at once: only this process holds it; read back with pread for notices.
        server.errlog = tempfile.TemporaryFile("w+", prefix="mcp-stderr-")  # noqa: SIM115
        return stdio_client(params, errlog=server.errlog)

    def _confined(self, server: _Server, env: dict[str, str]) -> list[str]:
        """The server's command, confined like the agent's processes plus its own binds (the
        host paths staged for it) and a cache folder of its own (set in `env`)."""
        spec = server.spec
        binds = [
            (confine.writable_source(b.source) if b.writable else b.source, b.target, b.writable)
            for b in spec.binds
            if Path(b.source).exists()
        ]
        caches = Path(confine.MCP_STAGE, "cache")
        if spec.cache and caches.is_dir():
            cache = caches / server.name
            cache.mkdir(mode=0o700, exist_ok=True)
            binds.append((confine.writable_source(str(cache)), str(cache), True))
            env |= {name: str(cache / sub) for name, sub in _CACHES.items()}
        prefix = confine.mcp_prefix(binds)
        return [*prefix, *spec.command] if prefix else confine.wrap(list(spec.command))

    async def _hold(self, server: _Server, transport: Any, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        try:
            async with Client(transport) as client:
                server.tools = await self._tools(client)
                server.client = client
                ready.set_result(None)
                await server.closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            server.client = None

    async def _tools(self, client: Client) -> list[McpToolInfo]:
        tools: list[McpToolInfo] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                schema = dict(tool.input_schema or {})
                tools.append(
                    McpToolInfo(
                        name=tool.name, description=tool.description or "", input_schema=schema
                    )
                )
            cursor = page.next_cursor
            if not cursor:
                return tools

    async def _call(self, action: McpCallAction) -> McpCallObservation:
        def answer(text: str, **more: Any) -> McpCallObservation:
            return McpCallObservation(server=action.server, tool=action.tool, content=text, **more)

        server = self._servers.get(action.server)
        if server is None or server.client is None:
            return answer(
                f"The MCP server {action.server!r} is not running.",
                error=True,
                server_failed=f"the MCP server {action.server!r} is not running",
            )
        try:
            result = await asyncio.wait_for(
                server.client.call_tool(action.tool, dict(action.arguments)), action.timeout
            )
        except TimeoutError:
            return answer(f"The tool gave no answer within {action.timeout:g} s.", error=True)
        except Exception as exc:
            if _connection_closed(exc) or server.task is None or server.task.done():
                self._servers.pop(action.server, None)
                await self._stop(server)
                why = server.explain(f"the MCP server {action.server!r} stopped")
                server.close_log()
                return answer(f"The call failed: {why}", error=True, server_failed=why)
            return answer(f"The call failed: {describe(exc)}", error=True)
        texts: list[str] = []
        images: list[str] = []
        from mcp.types import EmbeddedResource, ImageContent, TextContent

        for block in result.content:
            if isinstance(block, TextContent):
                texts.append(block.text)
            elif isinstance(block, ImageContent):
                images.append(self._save_image(block.data, block.mime_type))
            elif isinstance(block, EmbeddedResource):
                resource = block.resource
                texts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
            else:
                texts.append(f"[{getattr(block, 'type', 'unknown')} content]")
        if not texts and result.structured_content is not None:
            texts.append(json.dumps(result.structured_content))
        # Cut here, as shell output is: a 50 MB answer went whole into the log and stdout.
        text = truncate_middle("\n".join(texts), RESULT_LIMIT)
        return answer(text, images=[i for i in images if i], error=bool(result.is_error))

    def _save_image(self, data: str, mime: str) -> str:
        """The artifact name of a picture ("" when its data is not base64: none is saved)."""
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return ""
        if not raw:
            return ""
        suffix = _IMAGE_SUFFIX.get(mime, ".bin")
        name = f"mcp-{next(self._images):03d}-{secrets.token_hex(3)}{suffix}"
        Path(self.context.artifacts, name).write_bytes(raw)
        return name

    async def _stop(self, server: _Server) -> None:
        server.closing.set()
        task = server.task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), _STOP_TIMEOUT_S)
            except BaseException:  # a server that will not stop: cut it off
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _stop_all(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        await asyncio.gather(*(self._stop(s) for s in servers), return_exceptions=True)
        for server in servers:
            server.close_log()


register("mcp", McpExecutor.action_kinds, McpExecutor, mcp_missing)
