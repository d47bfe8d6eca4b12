"""The network proxy: under `network = "allowlist"` the sandbox's only way out.

It runs in the app's process (the policy lives there, and so does the person who may be asked),
on a unix socket that the sandbox binds in (`sandbox/net_bridge.py` makes it a port on the
agent's loopback) or on a TCP port. It speaks the two forms of proxying that `HTTP_PROXY` and
`HTTPS_PROXY` clients use: `CONNECT host:port` (a tunnel: TLS stays end to end, nothing is
decrypted) and a plain-HTTP request with an absolute URL, forwarded with `Connection: close`
so one connection carries one request for one host. Before connecting it asks `decide` about
the host; a refused one gets `403` with a body saying why and what to do. `observe` hears of
every host reached or refused (the app logs it).

Why our own (~250 lines on asyncio) rather than a library: the policy is on host names only,
so nothing beyond the request head is parsed; CONNECT needs no HTTP parser at all; and the
well-kept proxies (mitmproxy, proxy.py) are large, intercept TLS or run as their own process,
none of which is wanted here. It is the design of Claude Code's sandbox runtime
(anthropic-experimental/sandbox-runtime): an HTTP proxy outside the network namespace, reached
through a bridged unix socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

log = logging.getLogger("sandbox.net_proxy")

NetworkMode = Literal["off", "allowlist", "on"]
"""What the agent's processes reach: nothing, hosts the app allows (through the proxy), all."""

MAX_HEAD = 64 * 1024
"""Bytes a request head may take (request line and headers)."""
CONNECT_TIMEOUT_S = 15.0
_HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


@dataclass(frozen=True)
class NetVerdict:
    """Whether a host may be reached, and the rule or reason that decided."""

    allowed: bool
    reason: str = ""
    """Allowed: the rule (e.g. `net:pypi.org`); refused: why, and what the agent can do."""


Decide = Callable[[str, int], Awaitable[NetVerdict]]
Observe = Callable[[str, int, NetVerdict], None]


def network_mode(value: bool | str) -> NetworkMode:
    """`value` as a mode: True is "on", False "off" (the old boolean setting)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    for mode in get_args(NetworkMode):
        if value == mode:
            return mode  # type: ignore[no-any-return]
    raise ValueError(f"unknown network mode {value!r}: use 'off', 'allowlist' or 'on'")


async def _refuse_all(host: str, port: int) -> NetVerdict:
    return NetVerdict(False, f"host {host} is not on the network allowlist")


def refusal_body(host: str, reason: str) -> str:
    """The text a refused client reads (curl -v, pip's error), saying why and what to do."""
    return (
        f"workbench sandbox: the connection to {host} was refused: {reason}.\n"
        "Only hosts on the network allowlist are reached. Ask the person to allow it "
        f"(or to add the rule net:{host} to security.allow), or use a host that is allowed.\n"
    )


class NetProxy:
    """An HTTP(S) proxy that asks `decide` about each host before it connects."""

    def __init__(self, decide: Decide | None = None, observe: Observe | None = None) -> None:
        self.decide: Decide = decide or _refuse_all
        """Called for each host before connecting (the app sets its policy here)."""
        self.observe: Observe | None = observe
        """Told of every host reached or refused."""
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[Any]] = set()

    async def listen_unix(self, path: str) -> None:
        """Serve on a unix socket at `path` that any uid may connect to."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        # An AF_UNIX path holds 107 bytes, and a long TMPDIR made start-up fail ("AF_UNIX path
        # too long"): bind through the folder's descriptor, whatever the folder's path.
        folder = os.open(os.path.dirname(path) or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            short = f"/proc/self/fd/{folder}/{os.path.basename(path)}"
            server = await asyncio.start_unix_server(self._serve, short, limit=MAX_HEAD)
        finally:
            os.close(folder)
        os.chmod(path, 0o666)  # the agent may run as another uid
        self._servers.append(server)

    async def listen_tcp(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Serve on a TCP port; returns the port."""
        server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEAD)
        self._servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        """Stop listening and cut every connection."""
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2.0)
        self._servers = []

    # ------------------------------------------------------------------ one connection

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._one(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, _, rest = head.partition(b"\r\n")
        parts = line.split(b" ")
        if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
            await _answer(writer, 400, "Bad Request", "not an HTTP request\n")
            return
        method, target = parts[0].decode("latin-1"), parts[1].decode("latin-1")
        if method == "CONNECT":
            where = _host_port(target, 443)
        else:
            url = urlsplit(target)
            where = _host_port(url.netloc, 80) if url.scheme == "http" else None
        if where is None:
            why = f"cannot proxy {method} {target[:200]}: use CONNECT host:port or an http:// URL"
            await _answer(writer, 400, "Bad Request", why + "\n")
            return
        host, port = where
        verdict = await self.decide(host, port)
        if self.observe is not None:
            self.observe(host, port, verdict)
        if not verdict.allowed:
            await _answer(writer, 403, "Forbidden", refusal_body(host, verdict.reason))
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            why = f"workbench sandbox: could not connect to {host}:{port}: {exc or 'timed out'}\n"
            await _answer(writer, 502, "Bad Gateway", why)
            return
        try:
            if method == "CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                up_writer.write(_origin_request(method, target, parts[2], rest))
            await _pipe_both(reader, writer, up_reader, up_writer)
        finally:
            up_writer.close()


def _host_port(authority: str, default: int) -> tuple[str, int] | None:
    """(host, port) of `host[:port]` or `[v6]:port`, the host lower-cased; None if malformed."""
    authority = authority.rpartition("@")[2]
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port_text = tail.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    host = host.strip().lower().rstrip(".")
    if not host or any(c in host for c in " /\\\t"):
        return None
    if not port_text:
        return host, default
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return host, int(port_text)


def _origin_request(method: str, target: str, version: bytes, headers: bytes) -> bytes:
    """The request as the origin server takes it: path only, no proxy headers, one request."""
    url = urlsplit(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [
        h
        for h in headers.split(b"\r\n")
        if h and h.split(b":", 1)[0].strip().lower() not in _HOP_HEADERS
    ]
    if not any(h.split(b":", 1)[0].strip().lower() == b"host" for h in kept):
        kept.insert(0, b"Host: " + url.netloc.encode("latin-1"))
    kept.append(b"Connection: close")
    first = f"{method} {path} ".encode("latin-1") + version
    return b"\r\n".join([first, *kept]) + b"\r\n\r\n"


async def _answer(writer: asyncio.StreamWriter, code: int, phrase: str, body: str) -> None:
    data = body.encode()
    head = (
        f"HTTP/1.1 {code} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + data)
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe_both(
    a_reader: asyncio.StreamReader,
    a_writer: asyncio.StreamWriter,
    b_reader: asyncio.StreamReader,
    b_writer: asyncio.StreamWriter,
) -> None:
    """Copy both ways until one side ends (then half-close the other)."""
    await asyncio.gather(_pipe(a_reader, b_writer), _pipe(b_reader, a_writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(256 * 1024):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()
