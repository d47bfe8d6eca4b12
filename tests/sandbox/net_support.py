"""A stand-in for the internet in network tests: one HTTP server on the host's 127.0.0.1, which
the tests call by two names (`localhost` allowed, `127.0.0.1` not), and the sandbox's commands
that reach it through the proxy or try to go around it."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sandbox.net_proxy import NetVerdict

MARKER = "hello-from-the-outside"


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        size = int(self.path.removeprefix("/bytes/")) if self.path.startswith("/bytes/") else 0
        body = b"x" * size if size else f"{MARKER} {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        chunk = 1 << 20
        for start in range(0, len(body), chunk):
            self.wfile.write(body[start : start + chunk])

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def outside_server(
    host: str = "0.0.0.0", handler: Callable[..., http.server.BaseHTTPRequestHandler] = _Handler
) -> Iterator[int]:
    """Serve on `host`:port (a thread, `handler` answering) while inside; yields the port."""
    server = http.server.ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


async def allow_localhost(host: str, port: int) -> NetVerdict:
    """A policy for the tests: `localhost` only."""
    if host == "localhost":
        return NetVerdict(True, "net:localhost")
    return NetVerdict(False, f"host {host} is not on the network allowlist")


def fetch(url: str) -> str:
    """A shell line fetching `url` through the proxy (`NO_PROXY` cleared: the test's "outside"
    is the host's loopback), printing the body or curl's error and the HTTP code."""
    return f"curl -sS --noproxy '' -w ' code=%{{http_code}}' {url} 2>&1; echo"


def host_address() -> str:
    """This machine's address on its default route (not loopback): "outside" the sandbox."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("10.255.255.255", 1))  # UDP: nothing is sent
        return str(probe.getsockname()[0])
    finally:
        probe.close()


def direct(port: int) -> str:
    """A shell line connecting around the proxy to the outside server on this machine's
    address: curl told not to use the proxy, and a raw socket."""
    address = host_address()
    return (
        f"curl -sS --noproxy '*' --max-time 5 http://{address}:{port}/ 2>&1; echo; "
        "python3 -c 'import socket\n"
        f'for a in (("{address}", {port}), ("127.0.0.1", {port})):\n'
        "  try:\n"
        '    socket.create_connection(a, timeout=3); print("DIRECT-CONNECTED", a)\n'
        '  except OSError as e: print("DIRECT-FAILED", a, e)\''
    )
