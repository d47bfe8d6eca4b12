"""A small HTTP/1.1 server layer on asyncio streams, parsed by h11: keep-alive, chunked streams,
timeouts, and a 4xx for every request it cannot take.

Why not aiohttp.web: importing it costs ~170 ms here (its client, cookie jar, tracing and an
SSL context come with it), more than half of the 300 ms budget from starting the sandbox to
its first echo; asyncio + h11 import in ~20 ms and answer an echo as fast.

What one connection may take is in `Limits`. A request that breaks the protocol (bad request
line, header, length or chunk, a target that is not UTF-8 or holds a NUL) gets a 400 (431 for a
head over 64 KiB, 413 for a body over the limit, 408 when the head or body stops coming) and the
connection is closed; when h11 cannot frame that reply (the head never parsed), it is written
as raw bytes. A connection that never started a request is closed without a word.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import parse_qsl, unquote, urlsplit

import h11

log = logging.getLogger("sandbox.server")

MAX_BODY = 256 * 1024 * 1024
"""Largest request body (an upload) the server accepts."""
MAX_HEAD = 64 * 1024
"""Largest request head (request line and headers)."""
MAX_QUERY_FIELDS = 64
_READ_SIZE = 256 * 1024
_LINGER_S = 1.0
"""After refusing a request whose body was not read, how long unread bytes are drained, so
the client gets the reply rather than a reset."""


@dataclass(frozen=True)
class Limits:
    """What one connection may take: its timeouts in seconds and the largest body."""

    header_timeout_s: float = 10.0
    """From a new connection's start, or a kept-alive request's first byte, to its whole head."""
    idle_timeout_s: float = 75.0
    """How long a kept-alive connection may wait for its next request (over the client's 60 s)."""
    body_timeout_s: float = 30.0
    """Longest silence while a request body arrives."""
    send_timeout_s: float = 60.0
    """Longest stall while a client does not take a reply (a `/stream` excepted)."""
    max_body: int = MAX_BODY


class HttpError(Exception):
    """A request the server refuses; the message goes back as `{"error": ...}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Request:
    """A parsed request with its whole body."""

    method: str
    path: str
    query: dict[str, str]
    body: bytes


@dataclass
class Response:
    """A reply: a body with a length, or a stream of chunks (`stream`)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    stream: AsyncIterator[bytes] | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)


def json_response(value: object, status: int = 200) -> Response:
    """A JSON reply."""
    return Response(status=status, body=json.dumps(value).encode())


class Peer:
    """One client connection: its streams, and whether it waits on its client or on us."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.since = time.monotonic()
        """When it began waiting for its current request (the connection's start at first)."""
        self.busy = False
        """The server is working on its request, or streaming to it: not to be evicted."""
        self.evicted = False
        self.method = b""
        """The method of the request being answered (a reply to HEAD has no body)."""

    def evict(self) -> None:
        """Close the connection now, unsent bytes and all (it waited longest for its client)."""
        self.evicted = True
        self.writer.transport.abort()


Dispatch = Callable[[Request], Awaitable[Response]]
Authorize = Callable[[bytes, Iterable[tuple[bytes, bytes]]], HttpError | None]
"""(target, headers) -> None to accept the request, or the error to refuse it with."""


class _Silent(Exception):
    """The connection ended, or idled out, before any byte of a next request: no reply."""


async def serve_connection(
    peer: Peer, dispatch: Dispatch, authorize: Authorize, limits: Limits
) -> None:
    """Answer the requests of one connection, one after the other, until it closes."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
    first = True
    try:
        while True:
            peer.since, peer.method = time.monotonic(), b""
            try:
                request = await _read_request(conn, peer, authorize, limits, first)
                peer.busy = True
                response = await _answer(dispatch, request)
            except _Silent:
                break
            except HttpError as exc:
                response = json_response({"error": exc.message}, exc.status)
            except h11.RemoteProtocolError as exc:
                response = _protocol_error(exc)
            if peer.evicted or not await _respond(conn, peer, response, limits):
                break
            peer.busy = False
            if (conn.our_state, conn.their_state) != (h11.DONE, h11.DONE):
                break
            conn.start_next_cycle()
            first = False
    except (ConnectionError, TimeoutError, h11.LocalProtocolError, h11.RemoteProtocolError) as exc:
        log.info("connection ended: %r", exc)
    except Exception:
        log.exception("the connection handler failed")
    finally:
        peer.busy = False
        await _close(conn, peer, limits)


async def _answer(dispatch: Dispatch, request: Request) -> Response:
    try:
        return await dispatch(request)
    except HttpError:
        raise
    except Exception as exc:  # a bug: say so, and keep the connection and the server going
        log.exception("%s %s failed", request.method, request.path)
        return json_response({"error": f"internal error: {type(exc).__name__}: {exc}"}, 500)


def _protocol_error(exc: h11.RemoteProtocolError) -> Response:
    hint = exc.error_status_hint
    status = hint if 400 <= hint < 500 else 400  # h11 says 501 for a transfer coding it lacks
    return json_response({"error": f"bad HTTP request: {exc}"}, status)


async def _read_request(
    conn: h11.Connection, peer: Peer, authorize: Authorize, limits: Limits, first: bool
) -> Request:
    loop = asyncio.get_running_loop()
    started = bool(conn.trailing_data[0])  # bytes of this request came with the last one
    now = loop.time()
    head_deadline = now + limits.header_timeout_s if first or started else None
    idle_deadline = now + limits.idle_timeout_s
    head: h11.Request | None = None
    refused: HttpError | None = None  # read the whole request anyway, then refuse it
    fed = len(conn.trailing_data[0])  # bytes given to h11 for this request so far
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            if conn.they_are_waiting_for_100_continue:
                if refused is not None:
                    raise refused  # the body was never sent: answer now
                peer.writer.write(
                    conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
                )
            if head is None:
                deadline = head_deadline if head_deadline is not None else idle_deadline
            else:
                deadline = loop.time() + limits.body_timeout_s
            try:
                async with asyncio.timeout_at(deadline):
                    data = await peer.reader.read(_READ_SIZE)
            except TimeoutError:
                if head is not None:
                    raise HttpError(
                        408, f"the request body stopped coming for {limits.body_timeout_s:g} s"
                    ) from None
                if not started:
                    raise _Silent from None
                raise HttpError(
                    408, f"the request head did not arrive within {limits.header_timeout_s:g} s"
                ) from None
            if data and not started:
                started = True
                if head_deadline is None:
                    head_deadline = loop.time() + limits.header_timeout_s
            fed += len(data)
            conn.receive_data(data)
        elif isinstance(event, h11.Request):
            head, peer.method = event, event.method
            if fed - len(conn.trailing_data[0]) > MAX_HEAD:  # it came whole, in one read
                raise HttpError(431, f"the request head is over {MAX_HEAD} bytes")
            refused = authorize(event.target, event.headers)
            length = _content_length(event.headers)
            if length is not None and length > limits.max_body:
                raise HttpError(413, f"the request body is over {limits.max_body} bytes")
        elif isinstance(event, h11.Data):
            if refused is None:
                body += event.data
            if len(body) > limits.max_body:
                raise HttpError(413, f"the request body is over {limits.max_body} bytes")
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            if refused is not None:
                raise refused
            return _request(head, bytes(body))
        else:  # ConnectionClosed, or PAUSED after a protocol switch we never accept
            raise _Silent


def _content_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"content-length":
            return int(value)  # h11 has checked it is one non-negative integer
    return None


def _request(head: h11.Request, body: bytes) -> Request:
    """The request's method, decoded path and query (UTF-8, no NUL), and body."""
    try:
        split = urlsplit(head.target.decode("ascii"))  # h11 allows only visible ASCII there
        path = unquote(split.path, errors="strict")
        pairs = parse_qsl(split.query, errors="strict", max_num_fields=MAX_QUERY_FIELDS)
    except UnicodeDecodeError as exc:
        raise HttpError(400, f"the request target is not UTF-8 once decoded: {exc}") from exc
    except ValueError as exc:
        raise HttpError(400, f"bad request target: {exc}") from exc
    query = dict(pairs)
    if "\x00" in path or any("\x00" in key or "\x00" in value for key, value in pairs):
        raise HttpError(400, "the request target holds a NUL byte (%00)")
    return Request(method=head.method.decode("ascii"), path=path, query=query, body=body)


async def _respond(conn: h11.Connection, peer: Peer, response: Response, limits: Limits) -> bool:
    """Send `response`; False when the connection must close after it."""
    if conn.our_state is h11.SEND_RESPONSE:
        await _send(conn, peer, response, limits)
        return True
    if conn.our_state is h11.IDLE and response.stream is None:
        # The head never parsed, so h11 will not frame a reply: write a minimal one ourselves.
        peer.writer.write(raw_reply(response))
        await _drain(peer, limits)
    return False


def raw_reply(response: Response) -> bytes:
    """`response` (with a body, not a stream) as bytes, framed by hand, ending the connection."""
    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    head = (
        f"HTTP/1.1 {response.status} {reason}\r\ncontent-type: {response.content_type}\r\n"
        f"content-length: {len(response.body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("latin-1") + response.body


async def _drain(peer: Peer, limits: Limits) -> None:
    try:
        async with asyncio.timeout(limits.send_timeout_s):
            await peer.writer.drain()
    except TimeoutError:
        peer.writer.transport.abort()  # the client stopped reading: its reply is dropped
        raise


async def _send(conn: h11.Connection, peer: Peer, response: Response, limits: Limits) -> None:
    writer = peer.writer
    headers = [("content-type", response.content_type), *response.headers]
    if response.stream is None:
        peer.busy = False  # from here on it waits for its client to read
        headers.append(("content-length", str(len(response.body))))
        head = conn.send(h11.Response(status_code=response.status, headers=headers))
        with_body = response.body and peer.method != b"HEAD"
        data = conn.send(h11.Data(data=response.body)) if with_body else b""
        writer.write(b"".join((head or b"", data or b"", conn.send(h11.EndOfMessage()) or b"")))
        await _drain(peer, limits)
        return
    headers.append(("transfer-encoding", "chunked"))
    writer.write(conn.send(h11.Response(status_code=response.status, headers=headers)) or b"")
    await _drain(peer, limits)
    gone = asyncio.ensure_future(peer.reader.read(1))  # EOF: the subscriber left
    chunks = response.stream
    try:
        while True:
            nxt = asyncio.ensure_future(anext(chunks))
            await asyncio.wait({nxt, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not nxt.done():
                nxt.cancel()
                await asyncio.wait({nxt})
                return
            try:
                chunk = nxt.result()
            except StopAsyncIteration:
                break
            writer.write(conn.send(h11.Data(data=chunk)) or b"")
            await writer.drain()  # a reader that stalls here is bounded by the stream's buffer
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await _drain(peer, limits)
    finally:
        gone.cancel()
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def _close(conn: h11.Connection, peer: Peer, limits: Limits) -> None:
    """Close the connection; after a refusal with the request unread, drain it a moment."""
    transport = peer.writer.transport
    if peer.evicted or transport.is_closing():
        transport.abort()
        return
    unread = conn.their_state in (h11.SEND_BODY, h11.ERROR) or (
        conn.their_state is h11.IDLE and bool(conn.trailing_data[0])
    )
    if unread and not peer.reader.at_eof() and transport.can_write_eof():
        try:
            peer.writer.write_eof()
            async with asyncio.timeout(_LINGER_S):
                while await peer.reader.read(_READ_SIZE):
                    pass
        except (OSError, TimeoutError):
            pass
    transport.close()
    if transport.get_write_buffer_size():
        # A client that never reads what is left would hold the socket open: cut it in time.
        asyncio.get_running_loop().call_later(limits.send_timeout_s, transport.abort)
