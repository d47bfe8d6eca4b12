"""The sandbox's one route out under `network = "allowlist"`: a port on its own loopback that
forwards to the app's proxy (`sandbox/net_proxy.py`) over a unix socket bound in.

Local runtime: each agent process (shell, kernel, browser, MCP server) starts in a nested bwrap
with a network namespace of its own (`--unshare-net`: loopback only), so the bridge starts
there too, in front of the program: `python -I -S -c BRIDGE SOCKET PORT -- argv` listens on
127.0.0.1:PORT, forks the bridge away (reparented to the namespace's init, which waits for
every process: the bridge ends when the program does, seen through a pidfd) and execs argv.
Docker runtime: the container has no network at all (`network_mode="none"`), one namespace for
all, and the server runs the bridge itself (`serve_bridge`). The same idea as socat in Claude
Code's sandbox runtime.
"""

from __future__ import annotations

import asyncio
import contextlib

PROXY_PORT = 3128
"""The proxy's port on the sandbox's loopback."""
PROXY_DIR = "/run/sandbox-net"
"""Where the proxy's unix socket is bound in the sandbox."""
PROXY_SOCKET = f"{PROXY_DIR}/proxy.sock"

BRIDGE = """\
import os, socket, sys
main = os.getpid()
path, port = sys.argv[1], int(sys.argv[2])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    listener.bind(("127.0.0.1", port))
    listener.listen(128)
except OSError:
    listener = None  # already bridged in this namespace (a child's own sandbox start)
def pump(a, b):
    try:
        while True:
            data = a.recv(262144)
            if not data:
                break
            b.sendall(data)
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def one(conn):
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        return
    t = threading.Thread(target=pump, args=(up, conn), daemon=True)
    t.start()
    pump(conn, up)
    t.join()
    conn.close()
    up.close()
if listener is not None and os.fork() == 0:
    if os.fork() == 0:
        import select, threading  # here only: the program's start does not wait for them
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        ended = os.pidfd_open(main)  # bwrap's init waits for us: end with the program
        while True:
            ready, _, _ = select.select([listener, ended], [], [])
            if ended in ready:
                os._exit(0)
            conn, _ = listener.accept()
            threading.Thread(target=one, args=(conn,), daemon=True).start()
    os._exit(0)
if listener is not None:
    os.wait()
    listener.close()
try:
    os.execvp(sys.argv[4], sys.argv[4:])
except OSError as exc:  # as bwrap and setpriv say it: the program's name and why
    sys.stderr.write(f"sandbox: execvp {sys.argv[4]}: {exc.strerror}\\n")
    os._exit(126 if isinstance(exc, PermissionError) else 127)
"""
"""Run by `python -I -S -c BRIDGE SOCKET PORT -- argv`: bridge in the background, exec argv."""


def proxy_env(port: int = PROXY_PORT) -> dict[str, str]:
    """The variables that send the agent's HTTP(S) clients through the proxy."""
    url = f"http://127.0.0.1:{port}"
    no_proxy = "localhost,127.0.0.1,::1"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


async def serve_bridge(socket_path: str, port: int = PROXY_PORT) -> asyncio.Server:
    """Listen on 127.0.0.1:`port` and forward each connection to the unix socket (Docker)."""

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            writer.close()

    return await asyncio.start_server(one, "127.0.0.1", port)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError, RuntimeError):
        while data := await reader.read(256 * 1024):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
