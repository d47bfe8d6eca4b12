"""RemoteRuntime against servers it does not own: a separate process and a separate container.
A wrong key is refused, an unreachable URL gives up in bounded time, a restarted server is
reconnected to and the agent is told its shell state is gone."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker_support import docker_api, sandbox_image

from sandbox.protocol import ErrorObservation, FileEditAction, FileEditObservation, Observation
from sandbox.runtimes.base import SandboxError
from sandbox.runtimes.remote import RemoteRuntime

__all__ = ["docker_api", "sandbox_image"]  # fixtures, used by name

ROOT = Path(__file__).resolve().parents[2]


class Server:
    """`python -m sandbox serve` as a separate process on a port that survives restarts."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.token = secrets.token_urlsafe(16)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start (or start again on the same port) and wait for the READY line."""
        env = {**os.environ, "SANDBOX_TOKEN": self.token, "PYTHONPATH": str(ROOT)}
        command = [sys.executable, "-m", "sandbox", "serve", "--workspace", str(self.workspace)]
        self.proc = subprocess.Popen(
            [*command, "--port", str(self.port), "--no-warm-up"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        assert line.startswith("SANDBOX READY "), line
        self.port = int(json.loads(line.removeprefix("SANDBOX READY "))["port"])

    def kill(self) -> None:
        """SIGKILL the server, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    workspace = tmp_path / "remote-ws"
    workspace.mkdir()
    running = Server(workspace)
    running.start()
    yield running
    running.kill()


async def view(runtime: RemoteRuntime, path: str) -> Observation:
    return await runtime.execute(FileEditAction(command="view", path=path))


async def test_actions_run_on_the_remote_server(server: Server) -> None:
    (server.workspace / "hello.txt").write_text("remote hello\n")
    runtime = RemoteRuntime(server.url, server.token)
    await runtime.start()
    try:
        obs = await view(runtime, str(server.workspace / "hello.txt"))
        assert isinstance(obs, FileEditObservation) and "remote hello" in obs.content
        await runtime.upload("up.txt", b"uploaded")
        assert (server.workspace / "up.txt").read_bytes() == b"uploaded"
        assert (await runtime.info()).pid == server.proc.pid  # type: ignore[union-attr]
    finally:
        await runtime.close()
    assert server.proc is not None and server.proc.poll() is None  # not ours to stop


async def test_wrong_key_is_refused(server: Server) -> None:
    runtime = RemoteRuntime(server.url, "not-the-token")
    with pytest.raises(SandboxError, match="refused the key"):
        await runtime.start()
    await runtime.close()


def test_bad_settings_are_refused_before_connecting() -> None:
    with pytest.raises(SandboxError, match="http://"):
        RemoteRuntime("sandbox.example:8000", "key")
    with pytest.raises(SandboxError, match="token"):
        RemoteRuntime("http://sandbox.example:8000", "")


async def test_unreachable_server_gives_up_in_bounded_time() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    runtime = RemoteRuntime(f"http://127.0.0.1:{port}", "key", reconnect_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(SandboxError, match="Cannot reach the remote sandbox server"):
        await runtime.start()
    assert time.monotonic() - started < 5


async def test_server_restarted_mid_session_is_reconnected(server: Server) -> None:
    (server.workspace / "f.txt").write_text("still here\n")
    runtime = RemoteRuntime(server.url, server.token, reconnect_timeout_s=20.0)
    await runtime.start()
    try:
        assert isinstance(await view(runtime, str(server.workspace / "f.txt")), FileEditObservation)
        server.kill()
        loop = asyncio.get_running_loop()

        def restart_later() -> None:
            time.sleep(0.7)  # scripted delay: the server is down a while; the view waits it out
            server.start()

        restart = loop.run_in_executor(None, restart_later)
        obs = await view(runtime, str(server.workspace / "f.txt"))
        await restart
        if isinstance(obs, ErrorObservation):
            assert obs.error_kind == "sandbox" and "was restarted" in obs.content
        else:
            assert "still here" in obs.content and "was restarted" in obs.content
        again = await view(runtime, str(server.workspace / "f.txt"))
        assert isinstance(again, FileEditObservation) and "was restarted" not in again.content
        assert runtime.state == "ready"
    finally:
        await runtime.close()


# ------------------------------------------------------------------ a server in a container


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def container_server(sandbox_image: str, docker_api: Any, tmp_path: Path) -> Iterator[Any]:
    token = secrets.token_urlsafe(16)
    port = _free_port()
    container = docker_api.containers.run(
        sandbox_image,
        detach=True,
        init=True,
        environment={"SANDBOX_TOKEN": token},
        ports={"8000/tcp": ("127.0.0.1", port)},
        labels={"workbench.sandbox-test": "remote"},
    )
    container.url, container.token = f"http://127.0.0.1:{port}", token
    yield container
    container.remove(force=True)


@pytest.mark.docker
async def test_server_in_a_container_through_the_remote_runtime(container_server: Any) -> None:
    refused = RemoteRuntime(container_server.url, "wrong", reconnect_timeout_s=20.0)
    with pytest.raises(SandboxError, match="refused the key"):
        await refused.start()
    runtime = RemoteRuntime(container_server.url, container_server.token, reconnect_timeout_s=20.0)
    await runtime.start()
    try:
        await runtime.upload("note.txt", b"in the container\n")
        obs = await view(runtime, "/workspace/note.txt")
        assert isinstance(obs, FileEditObservation) and "in the container" in obs.content
        await asyncio.to_thread(container_server.restart, timeout=1)
        obs = await view(runtime, "/workspace/note.txt")  # the file lived in the container
        text = obs.model_dump_json()
        assert "was restarted" in text, text
        assert (await runtime.info()).workspace == "/workspace"
        assert runtime.state == "ready"
    finally:
        await runtime.close()
