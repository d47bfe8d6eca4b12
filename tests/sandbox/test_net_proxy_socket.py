"""The proxy's unix socket in a folder whose path is longer than AF_UNIX allows (a long TMPDIR
made every sandbox start fail with "AF_UNIX path too long")."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from sandbox.net_proxy import NetProxy


async def test_the_socket_binds_and_answers_in_a_folder_with_a_long_path(tmp_path: Path) -> None:
    folder = tmp_path / ("long-" * 30)
    folder.mkdir()
    path = folder / "proxy.sock"
    assert len(str(path)) > 108
    proxy = NetProxy()  # refuses every host: enough to see it answer
    await proxy.listen_unix(str(path))
    try:
        assert path.is_socket() and (path.stat().st_mode & 0o777) == 0o666
        short = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            reader, writer = await asyncio.open_unix_connection(f"/proc/self/fd/{short}/proxy.sock")
        finally:
            os.close(short)
        writer.write(b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
        await writer.drain()
        status = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        assert status.startswith(b"HTTP/1.1 403"), status
    finally:
        await proxy.close()
