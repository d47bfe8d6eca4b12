"""Small operations on one Docker container for the Docker runtime: hand it the token, read
the end of its logs, close an attach socket, remove it. The docker SDK's objects come in as
`Any` (its types are loose); nothing here decides anything."""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from sandbox.runtimes.docker_entry import TOKEN_FILE

log = logging.getLogger("sandbox.docker")


def put_token(container: Any, token: str) -> None:
    """Copy `token` into the (not running) container as TOKEN_FILE, root-only."""
    import io
    import tarfile

    data = token.encode()
    info = tarfile.TarInfo(str(TOKEN_FILE).lstrip("/"))
    info.size, info.mode, info.uid, info.gid = len(data), 0o400, 0, 0
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    container.put_archive("/", buffer.getvalue())


def close_quietly(stream: Any) -> None:
    """Close an attach socket: the SDK hands a `SocketIO` whose socket lives on beneath it."""
    for part in (stream, getattr(stream, "_sock", None)):
        if part is not None:
            with contextlib.suppress(OSError):
                part.close()


def logs_tail(container: Any, lines: int = 15) -> str:
    """The container's last log lines, titled, for an error message."""
    try:
        text = container.logs(tail=lines).decode("utf-8", "replace").strip()
    except Exception as exc:  # the container may be gone already
        return f"(no logs: {exc})"
    return f"--- last lines of `docker logs {container.name}` ---\n{text or '(empty)'}"


def remove(container: Any) -> None:
    """Remove the container by force; one already gone (or going) is fine."""
    import docker.errors

    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except (docker.errors.DockerException, OSError) as exc:
        if "already in progress" not in str(exc):
            log.warning("could not remove container %s: %s", container.name, exc)
