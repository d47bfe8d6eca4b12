"""The sandbox's one route out under `network = "allowlist"`: a port on its own loopback that
forwards to the app's proxy (`sandbox/net_proxy.py`) over a unix socket bound in.

Local runtime: the session's agent processes share one network namespace, whose holder binds
127.0.0.1:PROXY_PORT there and bridges it to the socket (`sandbox/net_namespace.py`).
Docker runtime: the container is on an internal network, one namespace for all, and the server
runs the bridge itself (`serve_bridge`). The same idea as socat in Claude Code's sandbox
runtime."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when used: the server starts its network namespace before asyncio
    import asyncio

PROXY_PORT = 3128
"""The proxy's port on the sandbox's loopback."""
PROXY_DIR = "/run/sandbox-net"
"""Where the proxy's unix socket is bound in the sandbox."""
PROXY_SOCKET = f"{PROXY_DIR}/proxy.sock"


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
    import asyncio

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
