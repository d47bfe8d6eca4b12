"""A small HTTP/1.1 server layer on asyncio streams, parsed by h11: keep-alive, chunked streams.

Why not aiohttp.web: importing it costs ~170 ms here (its client, cookie jar, tracing and an
SSL context come with it), more than half of the 300 ms budget from starting the sandbox to
its first echo; asyncio + h11 import in ~20 ms and answer an echo as fast.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

import h11

log = logging.getLogger("sandbox.server")

MAX_BODY = 256 * 1024 * 1024
"""Largest request body (an upload) the server accepts."""


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


Dispatch = Callable[[Request], Awaitable[Response]]
Authorize = Callable[[bytes, Iterable[tuple[bytes, bytes]]], HttpError | None]
"""(target, headers) -> None to accept the request, or the error to refuse it with."""


async def serve_connection(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    dispatch: Dispatch,
    authorize: Authorize,
) -> None:
    """Answer the requests of one connection, one after the other, until it closes."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
    try:
        while True:
            try:
                request = await _read_request(conn, reader, writer, authorize)
                if request is None:
                    break
                response = await dispatch(request)
            except HttpError as exc:
                response = json_response({"error": exc.message}, exc.status)
            except h11.RemoteProtocolError as exc:
                response = json_response({"error": f"bad HTTP request: {exc}"}, 400)
            if conn.our_state is not h11.SEND_RESPONSE:
                break
            await _send(conn, reader, writer, response)
            states: tuple[object, object] = (conn.our_state, conn.their_state)
            if states != (h11.DONE, h11.DONE):
                break
            conn.start_next_cycle()
    except (ConnectionError, h11.LocalProtocolError, h11.RemoteProtocolError) as exc:
        log.info("connection ended: %r", exc)
    except Exception:
        log.exception("the connection handler failed")
    finally:
        writer.close()


async def _read_request(
    conn: h11.Connection,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    authorize: Authorize,
) -> Request | None:
    head: h11.Request | None = None
    refused: HttpError | None = None  # read the whole request anyway, then refuse it
    body = bytearray()
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            if conn.they_are_waiting_for_100_continue:
                if refused is not None:
                    raise refused  # the body was never sent: answer now
                writer.write(
                    conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b""
                )
            conn.receive_data(await reader.read(256 * 1024))
        elif isinstance(event, h11.Request):
            head = event
            refused = authorize(event.target, event.headers)
        elif isinstance(event, h11.Data):
            if refused is None:
                body += event.data
            if len(body) > MAX_BODY:
                raise HttpError(413, f"the request body is over {MAX_BODY} bytes")
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            if refused is not None:
                raise refused
            split = urlsplit(head.target.decode("latin-1"))
            return Request(
                method=head.method.decode("ascii"),
                path=unquote(split.path),
                query=dict(parse_qsl(split.query)),
                body=bytes(body),
            )
        else:  # ConnectionClosed, or PAUSED after a protocol switch we never accept
            return None


async def _send(
    conn: h11.Connection,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    response: Response,
) -> None:
    headers = [("content-type", response.content_type), *response.headers]
    if response.stream is None:
        headers.append(("content-length", str(len(response.body))))
        head = conn.send(h11.Response(status_code=response.status, headers=headers))
        data = conn.send(h11.Data(data=response.body)) if response.body else b""
        writer.write(b"".join((head or b"", data or b"", conn.send(h11.EndOfMessage()) or b"")))
        await writer.drain()
        return
    headers.append(("transfer-encoding", "chunked"))
    writer.write(conn.send(h11.Response(status_code=response.status, headers=headers)) or b"")
    await writer.drain()
    gone = asyncio.ensure_future(reader.read(1))  # EOF: the subscriber left
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
            await writer.drain()
        writer.write(conn.send(h11.EndOfMessage()) or b"")
        await writer.drain()
    finally:
        gone.cancel()
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
