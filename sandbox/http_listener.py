"""Accepting connections under a cap that fits the process's file limit.

asyncio's own server accepts up to its backlog in one go, so a burst of connections can use up
the file descriptors before any handler runs; accept(2) then fails with EMFILE and asyncio
stops accepting for a second at a time, valid clients included. Here connections are accepted
one at a time and counted. The cap is `--max-connections`, lowered to the soft RLIMIT_NOFILE
minus `FD_RESERVE` (the shell's pty, the kernel's sockets, files being read). At the cap, a new
connection closes the one that has waited longest for its client (idle, or with its request
half sent); if every connection is busy (a command running, a stream open), the new one is
answered 503 and closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import resource
import socket
from collections.abc import Awaitable, Callable

from sandbox.http11 import Peer, Response, json_response, raw_reply

log = logging.getLogger("sandbox.server")

DEFAULT_MAX_CONNECTIONS = 128
FD_RESERVE = 32
"""File descriptors kept for everything but client connections."""
MAX_REFUSING = 16
"""Connections being answered 503 at once; more are closed without a reply."""
_OUT_OF_FILES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}

Handler = Callable[[Peer], Awaitable[None]]


def connection_cap(requested: int) -> int:
    """`requested`, lowered so that client connections leave `FD_RESERVE` descriptors free."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max(1, requested)
    return max(1, min(requested, soft - FD_RESERVE))


class Listener:
    """Listening sockets, their accept loops and the connections they let in."""

    def __init__(self, handle: Handler, max_connections: int = DEFAULT_MAX_CONNECTIONS) -> None:
        self._handle = handle
        self.cap = connection_cap(max_connections)
        self.peers: dict[Peer, None] = {}
        """The connections let in and not yet closed or evicted."""
        self._refusing = 0
        self._sockets: list[socket.socket] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int, backlog: int = 128) -> int:
        """Listen on every address of `host` (on one port; 0 picks it) and return the port."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        seen: set[tuple[int, object]] = set()
        errors: list[OSError] = []
        for family, kind, proto, _, address in infos:
            if (family, address[0]) in seen:
                continue
            seen.add((family, address[0]))
            sock = socket.socket(family, kind, proto)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                if family == socket.AF_INET6:
                    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                bound_port = self._sockets[0].getsockname()[1] if self._sockets else port
                sock.bind((address[0], bound_port, *address[2:]))
                sock.listen(backlog)
                sock.setblocking(False)
            except OSError as exc:
                sock.close()
                errors.append(exc)
                continue
            self._sockets.append(sock)
        if not self._sockets:
            raise errors[0] if errors else OSError(f"no address to listen on for {host!r}")
        for sock in self._sockets:
            self._spawn(self._accept_loop(sock))
        bound: int = self._sockets[0].getsockname()[1]
        return bound

    def close(self) -> None:
        """Stop accepting and close every connection."""
        for task in list(self._tasks):
            task.cancel()
        for sock in self._sockets:
            sock.close()
        for peer in list(self.peers):
            peer.writer.transport.abort()

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:
                if exc.errno in _OUT_OF_FILES:
                    log.warning("out of file descriptors at %d connections", len(self.peers))
                    if not self._evict_one():
                        await asyncio.sleep(0.1)
                    await asyncio.sleep(0)  # let the evicted socket close
                    continue
                if sock.fileno() == -1:
                    return  # closed by close()
                log.warning("accept failed: %s", exc)  # ECONNABORTED and the like
                continue
            await self._admit(conn)

    async def _admit(self, conn: socket.socket) -> None:
        """Let `conn` in (its streams are made here, so it counts at once), or refuse it."""
        conn.setblocking(False)
        if len(self.peers) >= self.cap and not self._evict_one():
            if self._refusing >= MAX_REFUSING:
                conn.close()
            else:
                self._spawn(self._refuse(conn))
            return
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError as exc:
            log.info("connection failed at its start: %r", exc)
            conn.close()
            return
        peer = Peer(reader, writer)
        self.peers[peer] = None
        self._spawn(self._serve(peer))

    def _evict_one(self) -> bool:
        """Close the connection waiting longest for its client; False if all are busy."""
        waiting = [peer for peer in self.peers if not peer.busy and not peer.evicted]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda peer: peer.since)
        log.info("at %d connections: closing the one waiting longest for its client", self.cap)
        oldest.evict()
        del self.peers[oldest]
        return True

    async def _serve(self, peer: Peer) -> None:
        try:
            await self._handle(peer)
        finally:
            self.peers.pop(peer, None)

    async def _refuse(self, conn: socket.socket) -> None:
        """Answer 503 (after a moment's read, so the reply is not lost to a reset) and close."""
        self._refusing += 1
        reply = raw_reply(_busy())
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
            with contextlib.suppress(OSError, TimeoutError):
                async with asyncio.timeout(1.0):
                    writer.write(reply)
                    writer.write_eof()
                    await writer.drain()
                    while await reader.read(65536):
                        pass  # read what it sends, or closing now would reset the reply away
            writer.close()
        except OSError:
            conn.close()
        finally:
            self._refusing -= 1

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _busy() -> Response:
    return json_response(
        {"error": "the server is at its connection limit and every connection is busy"}, 503
    )
