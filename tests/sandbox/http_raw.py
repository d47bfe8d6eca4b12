"""Raw HTTP/1.1 over a socket, for tests that send what no well-behaved client would."""

from __future__ import annotations

import json
import re
import socket
import time
from dataclasses import dataclass

_STATUS = re.compile(rb"HTTP/1\.[01] (\d{3}) ")


@dataclass(frozen=True)
class Reply:
    """What came back on one connection: the raw bytes, and whether it ended in time."""

    data: bytes
    timed_out: bool
    seconds: float

    @property
    def status(self) -> int | None:
        """The status of the first response, None when nothing that looks like one came."""
        found = _STATUS.match(self.data)
        return int(found.group(1)) if found else None

    @property
    def statuses(self) -> list[int]:
        """Every status line at the start of a response (pipelined requests get several)."""
        return [
            int(m.group(1)) for m in re.finditer(rb"(?:^|\r\n)HTTP/1\.[01] (\d{3}) ", self.data)
        ]

    def json(self) -> object:
        """The first response's body as JSON (bodies with a content-length only)."""
        head, _, body = self.data.partition(b"\r\n\r\n")
        length = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        assert length is not None, head
        return json.loads(body[: int(length.group(1))])


def exchange(port: int, data: bytes, timeout_s: float = 10.0, half_close: bool = True) -> Reply:
    """Send `data`, close our sending side (unless told not to) and read until the server closes."""
    start = time.monotonic()
    deadline = start + timeout_s
    received = bytearray()
    timed_out = False
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        try:
            sock.sendall(data)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may refuse before reading it all: its reply is what counts
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            sock.settimeout(left)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                timed_out = True
                break
            except OSError:
                break
            if not chunk:
                break
            received += chunk
    return Reply(bytes(received), timed_out, time.monotonic() - start)


def request(
    method: str,
    target: str,
    body: bytes = b"",
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    """A well-formed request, as bytes (one connection, closed after)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: sandbox", "Connection: close"]
    if token is not None:
        lines.append(f"Authorization: Bearer {token}")
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
