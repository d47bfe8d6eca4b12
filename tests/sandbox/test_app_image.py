"""The workbench app image, run with the host's Docker socket: headless end to end.

The app container starts its sandbox as a sibling container through the socket, so the
workspace and volumes are host paths (nothing of them is mounted into the app container), and
the files the agent writes there belong to `SANDBOX_USER_ID`. The app container is on the
default bridge network, as docs/docker.md runs it; the scripted LLM server listens on the
host's loopback, so a relay on the bridge's gateway address forwards to it.

`scripts/app-image` builds the image (about 2-3 minutes cold, about 10 s when only workbench
changed) or finds it up to date for this source (about 5 s). The app container builds its own
sandbox image, once per engine and sandbox source.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker_support import BASE_IMAGE, ROOT

from sandbox.runtimes.docker_image import docker_client
from workbench.testing.llm_server import ScriptedLLMServer

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]

APP_TAG = "workbench:test"
USER_ID = 4321
KEY = "sk-app-image-SECRET"
SANDBOX_PREFIX = "workbench-sandbox-app"
"""The app container's sandbox images. Its dependency versions come from the app's own
resolution, so its sandbox image is not the host's: in the same repository, each build
would untag the other's image and concurrent Docker tests would have to build theirs again."""


@pytest.fixture(scope="session")
def app_image() -> str:
    """The app image of this checkout, on the sandbox's base image (built when out of date)."""
    started = time.monotonic()
    done = subprocess.run(
        [str(ROOT / "scripts" / "app-image"), APP_TAG],
        env={**os.environ, "BASE_IMAGE": BASE_IMAGE},
        capture_output=True,
        text=True,
        timeout=1500,
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/app-image failed:\n{done.stderr[-3000:]}", pytrace=False)
    print(f"app image {APP_TAG} ready in {time.monotonic() - started:.1f} s")
    return APP_TAG


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@contextlib.contextmanager
def relay(host: str, port: int) -> Iterator[tuple[str, int]]:
    """Forward TCP connections on `host` (a free port) to 127.0.0.1:`port`; yields the address."""
    listener = socket.create_server((host, 0))
    listener.settimeout(0.1)
    stop = threading.Event()
    opened: list[socket.socket] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.create_connection(("127.0.0.1", port))
            opened.extend((client, upstream))
            for pair in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=pair, daemon=True).start()

    thread = threading.Thread(target=accept, name="llm-relay", daemon=True)
    thread.start()
    try:
        yield host, int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        for sock in [listener, *opened]:
            sock.close()


def bridge_gateway(engine: Any) -> str:
    """The host's address on Docker's default bridge network (what its containers reach)."""
    config = engine.networks.get("bridge").attrs["IPAM"]["Config"][0]
    gateway = config.get("Gateway") or next(ipaddress.ip_network(config["Subnet"]).hosts())
    return str(gateway)


def _script(note: str) -> list[dict[str, Any]]:
    create = {
        "command": "create",
        "path": "/workspace/hi.sh",
        "file_text": "#!/bin/bash\necho hi\n",
        "security_risk": "LOW",
    }
    run = {"command": f"bash hi.sh && id -u && cat {note}", "security_risk": "LOW"}
    return [
        {
            "text": "Writing the script.",
            "tool_calls": [{"name": "str_replace_editor", "arguments": create}],
        },
        {"tool_calls": [{"name": "execute_bash", "arguments": run}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "hi.sh prints hi"}}]},
    ]


def test_headless_in_the_app_image_with_the_docker_socket(app_image: str, tmp_path: Path) -> None:
    engine = docker_client()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    workspace.chmod(0o777)  # the sandbox runs as USER_ID, not as the test's user
    data = tmp_path / "data"
    data.mkdir()
    (data / "note.txt").write_text("from the host\n")
    state = tmp_path / "state"
    state.mkdir()
    name = f"workbench-test-app-{secrets.token_hex(4)}"
    with (
        ScriptedLLMServer(_script("/data/note.txt")) as server,
        relay(bridge_gateway(engine), server.port) as (host, port),
    ):
        command = [
            "docker", "run", "--rm", "--name", name,
            "-v", "/var/run/docker.sock:/var/run/docker.sock",
            "-v", f"{state}:/state",
            "-e", f"WORKSPACE_BASE={workspace}",
            "-e", f"SANDBOX_VOLUMES={data}:/data:ro",
            "-e", f"SANDBOX_USER_ID={USER_ID}",
            "-e", f"WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE={BASE_IMAGE}",
            "-e", f"WORKBENCH_SANDBOX_DOCKER_IMAGE_PREFIX={SANDBOX_PREFIX}",
            "-e", "LLM_MODEL=openai/test-model",
            "-e", f"LLM_BASE_URL=http://{host}:{port}/v1",
            "-e", f"LLM_API_KEY={KEY}",
            "-e", "WORKBENCH_AGENT_ENABLE_BROWSER=false",
            "-e", "WORKBENCH_AGENT_ENABLE_JUPYTER=false",
            app_image,
            "--headless", "--json", "-t", "write a bash script that prints hi",
        ]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=600)
            left = engine.containers.list(
                all=True, filters={"label": f"workbench.sandbox.workspace={workspace}"}
            )
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
            for container in engine.containers.list(
                all=True, filters={"label": f"workbench.sandbox.workspace={workspace}"}
            ):
                container.remove(force=True)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    summary = lines[-1]
    assert summary["type"] == "summary" and summary["status"] == "success", summary
    assert summary["exit_code"] == 0
    assert len(server.requests) == 3
    script_file = workspace / "hi.sh"
    assert script_file.read_text() == "#!/bin/bash\necho hi\n"
    assert script_file.stat().st_uid == USER_ID
    runs = [
        line["event"]["observation"]
        for line in lines
        if line["type"] == "event"
        and line["event"]["kind"] == "observation"
        and line["event"]["observation"]["kind"] == "run"
    ]
    assert [run["content"].split() for run in runs] == [["hi", str(USER_ID), "from", "the", "host"]]
    assert not left, f"sandbox containers left behind: {[c.name for c in left]}"
    assert KEY not in done.stdout + done.stderr
