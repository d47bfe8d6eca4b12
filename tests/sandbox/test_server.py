"""The action server as a real subprocess: auth, bad requests, execute, stream, files."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from waiting import until

from sandbox.client import SandboxClient
from sandbox.errors import SandboxConnectionError, SandboxRequestError
from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    CommandFinished,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    OutputChunk,
    StreamEvent,
)


@dataclass
class Server:
    url: str
    token: str
    workspace: Path
    artifacts: Path
    proc: subprocess.Popen[bytes]
    ready: dict[str, object]


def start_server(
    tmp_path: Path, token: str | None, *extra: str, max_files: int | None = None
) -> Server:
    """`python -m sandbox serve` in a fresh workspace, once it printed its READY line
    (`max_files`: the server's RLIMIT_NOFILE, soft and hard)."""
    workspace, artifacts = tmp_path / "ws", tmp_path / "artifacts"
    workspace.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_TOKEN"}
    if token is not None:
        env["SANDBOX_TOKEN"] = token
    command = [sys.executable, "-m", "sandbox", "serve", "--workspace", str(workspace)]
    command += ["--artifacts", str(artifacts), *extra]
    with (tmp_path / "server.log").open("wb") as log:
        proc = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            start_new_session=True,
            preexec_fn=None if max_files is None else lambda: _limit_files(max_files),
        )
    assert proc.stdout is not None
    readable, _, _ = select.select([proc.stdout], [], [], 20)
    line = proc.stdout.readline().decode() if readable else ""
    assert line.startswith("SANDBOX READY "), (line, (tmp_path / "server.log").read_text())
    ready = json.loads(line.removeprefix("SANDBOX READY "))
    url = f"http://127.0.0.1:{ready['port']}"
    return Server(url, token or "", workspace.resolve(), artifacts, proc, ready)


def _limit_files(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def stop_server(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A fresh server: for tests that run commands, write files or stop it."""
    srv = start_server(tmp_path, secrets.token_urlsafe(24))
    yield srv
    stop_server(srv)


def module_server(*extra: str) -> Any:
    """A fixture of one server per test module (and xdist worker), started with `extra`: for
    requests that must leave it as it was (refusals, malformed input, health)."""

    @pytest.fixture(scope="module")
    def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
        srv = start_server(tmp_path_factory.mktemp("server"), secrets.token_urlsafe(24), *extra)
        yield srv
        stop_server(srv)

    return shared_server


shared_server = module_server()


@pytest.fixture
async def client(server: Server) -> AsyncIterator[SandboxClient]:
    sandbox_client = SandboxClient(server.url, server.token)
    yield sandbox_client
    await sandbox_client.close()


@pytest.fixture
async def shared_client(shared_server: Server) -> AsyncIterator[SandboxClient]:
    sandbox_client = SandboxClient(shared_server.url, shared_server.token)
    yield sandbox_client
    await sandbox_client.close()


async def raw(
    server: Server, method: str, path: str, body: bytes = b"", token: str | None = None
) -> tuple[int, dict[str, object]]:
    """One HTTP request without the client's help; returns the status and the JSON body."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, data=body, headers=headers) as response,
    ):
        return response.status, json.loads(await response.read())


def run_body(command: str) -> bytes:
    return json.dumps({"action": {"kind": "run", "command": command}}).encode()


async def test_health_needs_no_token_and_reports_memory(shared_server: Server) -> None:
    server = shared_server
    status, info = await raw(server, "GET", "/health")
    assert status == 200
    assert info["pid"] == server.proc.pid == server.ready["pid"]
    assert info["workspace"] == str(server.workspace)
    assert 5 < float(info["rss_mb"]) < 200  # type: ignore[arg-type]
    assert isinstance(info["executors"], dict) and "files" in info["executors"]


@pytest.mark.parametrize(("token", "status"), [(None, 401), ("wrong", 403), ("", 403)])
async def test_bad_token_is_refused_and_runs_nothing(
    shared_server: Server, token: str | None, status: int
) -> None:
    server = shared_server
    marker = server.workspace / "touched"
    code, reply = await raw(server, "POST", "/execute", run_body(f"touch {marker}"), token)
    assert code == status and "token" in str(reply["error"])
    edit = {"kind": "edit", "command": "create", "path": str(marker), "file_text": "x"}
    body = json.dumps({"action": edit}).encode()
    assert (await raw(server, "POST", "/execute", body, token))[0] == status
    for path in ("/stream", "/files?path=.", f"/download?path={marker}", "/artifacts/x.png"):
        assert (await raw(server, "GET", path, token=token))[0] == status
    assert (await raw(server, "PUT", "/upload?path=up.txt", b"data", token))[0] == status
    assert (await raw(server, "POST", "/input", b'{"text": "C-c"}', token))[0] == status
    # The shell runs one command at a time: one that slipped through ran before this one.
    barrier = await raw(server, "POST", "/execute", run_body("echo barrier"), server.token)
    assert barrier[0] == 200, barrier
    assert not marker.exists()
    assert not (server.workspace / "up.txt").exists()


async def test_malformed_requests_get_a_4xx_with_a_message(shared_server: Server) -> None:
    server = shared_server

    async def post(body: bytes) -> tuple[int, dict[str, object]]:
        return await raw(server, "POST", "/execute", body, server.token)

    status, reply = await post(b'{"action": ')
    assert status == 400 and "not valid JSON" in str(reply["error"])
    status, reply = await post(b'{"action": {"kind": "teleport", "where": "moon"}}')
    assert status == 422 and "teleport" in str(reply["error"]) and "'run'" in str(reply["error"])
    status, reply = await post(b'{"action": {"kind": "run"}}')
    assert status == 422 and "command" in str(reply["error"])
    status, reply = await post(b'{"action": {"kind": "run", "command": "ls", "colour": 1}}')
    assert status == 422 and "colour" in str(reply["error"])
    status, reply = await post(b"[1, 2]")
    assert status == 422 and '{"action"' in str(reply["error"])
    status, reply = await raw(server, "POST", "/input", b'{"text": 3}', server.token)
    assert status == 422 and '{"text"' in str(reply["error"])
    status, reply = await raw(server, "POST", "/input", b'{"text": "C-c"}', server.token)
    assert status == 200 and reply == {"sent": False}  # nothing is running
    status, reply = await raw(server, "GET", "/nowhere", token=server.token)
    assert status == 404 and "/nowhere" in str(reply["error"])
    status, reply = await raw(server, "GET", "/execute", token=server.token)
    assert status == 405


async def test_execute_edit_round_trip(server: Server, client: SandboxClient) -> None:
    path = str(server.workspace / "notes.txt")
    created = await client.execute(FileEditAction(command="create", path=path, file_text="a\nb\n"))
    assert isinstance(created, FileEditObservation) and created.command == "create"
    assert (server.workspace / "notes.txt").read_text() == "a\nb\n"
    replaced = await client.execute(
        FileEditAction(command="str_replace", path=path, old_str="b", new_str="c")
    )
    assert isinstance(replaced, FileEditObservation) and replaced.diff
    assert (server.workspace / "notes.txt").read_text() == "a\nc\n"
    relative = await client.execute(FileEditAction(command="view", path="relative.txt"))
    assert isinstance(relative, ErrorObservation) and "absolute" in relative.content


async def test_execute_run_round_trip(server: Server, client: SandboxClient) -> None:
    first = await client.execute(CmdRunAction(command="cd sub 2>/dev/null || mkdir sub && cd sub"))
    assert isinstance(first, CmdOutputObservation) and first.exit_code == 0
    second = await client.execute(CmdRunAction(command="pwd && echo $((6 * 7))"))
    assert isinstance(second, CmdOutputObservation)
    assert second.exit_code == 0 and "42" in second.content
    assert str(server.workspace / "sub") in second.content


async def test_stream_delivers_chunks_before_the_command_returns(
    server: Server, client: SandboxClient
) -> None:
    events: list[tuple[float, StreamEvent]] = []

    async def listen() -> None:
        stream_client = SandboxClient(server.url, server.token)
        try:
            async for event in stream_client.stream():
                events.append((time.monotonic(), event))
        finally:
            await stream_client.close()

    listener = asyncio.create_task(listen())
    try:
        # The subscription is in place once a warm-up's output streams; its end is the last
        # event it sends, so nothing of it arrives after the clear.
        subscribed = server.workspace / "subscribed"
        warm = f"while [ ! -e {subscribed} ]; do echo warm; sleep 0.05; done"
        warming = asyncio.create_task(client.execute(CmdRunAction(command=warm, timeout=120)))
        await until(lambda: events, what="the stream to carry the warm-up's output")
        subscribed.touch()
        warmed = await asyncio.wait_for(warming, 30)
        assert isinstance(warmed, CmdOutputObservation) and warmed.exit_code == 0, warmed
        await until(lambda: any(isinstance(e, CommandFinished) for _, e in events))
        events.clear()
        go = server.workspace / "go"
        command = f"echo tick1; while [ ! -e {go} ]; do sleep 0.02; done; echo tick2"
        running = asyncio.create_task(client.execute(CmdRunAction(command=command)))
        await until(
            lambda: any(isinstance(e, OutputChunk) and "tick1" in e.data for _, e in events)
        )
        assert not running.done(), "tick1 arrived only with the command's end"
        go.touch()  # the command ends only now, after its first line was seen streaming
        observation = await asyncio.wait_for(running, 30)
        await until(lambda: any(isinstance(e, CommandFinished) for _, e in events))
    finally:
        listener.cancel()
    assert isinstance(observation, CmdOutputObservation) and "tick2" in observation.content
    finished = [e for _, e in events if isinstance(e, CommandFinished)]
    assert finished and finished[-1].exit_code == 0


async def test_upload_download_list(server: Server, client: SandboxClient) -> None:
    await client.upload("dir/data.bin", bytes(range(256)) * 10)
    assert (server.workspace / "dir" / "data.bin").read_bytes() == bytes(range(256)) * 10
    assert await client.download("dir/data.bin") == bytes(range(256)) * 10
    assert await client.download(str(server.workspace / "dir" / "data.bin"))
    entries = await client.list_files(".")
    assert [(e.path, e.is_dir) for e in entries] == [("dir", True)]
    inner = await client.list_files("dir")
    assert [(e.path, e.size) for e in inner] == [("dir/data.bin", 2560)]
    with pytest.raises(SandboxRequestError) as missing:
        await client.download("nope.txt")
    assert missing.value.status == 404


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.txt", "dir/../../outside.txt"])
async def test_paths_outside_the_workspace_are_refused(
    shared_server: Server, shared_client: SandboxClient, path: str
) -> None:
    server = shared_server
    client = shared_client
    (server.workspace.parent / "outside.txt").write_text("secret")
    with pytest.raises(SandboxRequestError) as download:
        await client.download(path)
    assert download.value.status == 403 and "outside the workspace" in download.value.message
    with pytest.raises(SandboxRequestError) as upload:
        await client.upload(path, b"overwritten")
    assert upload.value.status == 403
    assert (server.workspace.parent / "outside.txt").read_text() == "secret"


async def test_symlink_out_of_the_workspace_is_refused(
    shared_server: Server, shared_client: SandboxClient
) -> None:
    server = shared_server
    client = shared_client
    (server.workspace.parent / "outside.txt").write_text("secret")
    (server.workspace / "link").symlink_to(server.workspace.parent)
    with pytest.raises(SandboxRequestError) as refused:
        await client.download("link/outside.txt")
    assert refused.value.status == 403


async def test_artifacts_by_name(server: Server, client: SandboxClient) -> None:
    server.artifacts.mkdir(exist_ok=True)
    (server.artifacts / "plot.png").write_bytes(b"\x89PNG fake")
    assert await client.artifact("plot.png") == b"\x89PNG fake"
    for bad in ("../server.log", ".hidden", "missing.png"):
        with pytest.raises(SandboxRequestError):
            await client.artifact(bad)


async def test_sigterm_shuts_down_cleanly(server: Server, client: SandboxClient) -> None:
    await client.execute(CmdRunAction(command="echo up"))
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=10) == 0
    with pytest.raises(SandboxConnectionError, match="cannot connect"):
        await client.health()


def test_generated_token_goes_to_a_private_file(tmp_path: Path) -> None:
    srv = start_server(tmp_path, None)
    try:
        token_file = Path(str(srv.ready["token_file"]))
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text().strip()
        assert len(token) >= 32
        srv.token = token

        async def check() -> None:
            assert (await raw(srv, "GET", "/files?path=.", token=token))[0] == 200
            assert (await raw(srv, "GET", "/files?path=.", token=token + "x"))[0] == 403

        asyncio.run(check())
    finally:
        stop_server(srv)
        Path(str(srv.ready["token_file"])).unlink(missing_ok=True)


def test_token_file_option(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("s3cret-token\n")
    srv = start_server(tmp_path, None, "--token-file", str(tmp_path / "token"))
    try:
        assert "token_file" not in srv.ready
        assert asyncio.run(raw(srv, "GET", "/files", token="s3cret-token"))[0] == 200
    finally:
        stop_server(srv)


def test_unreadable_token_file_is_a_clear_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SANDBOX_TOKEN"}
    command = [sys.executable, "-m", "sandbox", "serve", "--workspace", str(tmp_path)]
    result = subprocess.run(
        [*command, "--token-file", str(tmp_path / "absent")],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert result.returncode != 0 and "cannot read the token file" in result.stderr
    assert "SANDBOX READY" not in result.stdout


async def test_upload_with_expect_100_continue(server: Server) -> None:
    data = b"x" * 2_000_000
    async with aiohttp.ClientSession() as session:
        for token, status in ((server.token, 200), ("wrong", 403)):
            async with session.put(
                server.url + "/upload?path=big.bin",
                data=data,
                headers={"Authorization": f"Bearer {token}"},
                expect100=True,
            ) as response:
                assert response.status == status
    assert (server.workspace / "big.bin").stat().st_size == len(data)
