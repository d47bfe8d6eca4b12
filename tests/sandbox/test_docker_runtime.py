"""DockerRuntime against a real Docker engine: shell, editor and Jupyter in a container,
file ownership, read-only volumes, keep-alive, stale containers and every failure message."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import pytest_asyncio
from docker_support import (
    BASE_IMAGE,
    MakeRuntime,
    close_runtime,
    docker_api,
    import_image_without_python,
    make_runtime,
    new_runtime,
    sandbox_image,
)

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
    Observation,
)
from sandbox.runtimes.base import SandboxError
from sandbox.runtimes.docker import LABEL, DockerRuntime, parse_volumes
from sandbox.runtimes.docker_image import ensure_image

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker


async def shell(runtime: DockerRuntime, command: str, **fields: Any) -> CmdOutputObservation:
    obs = await runtime.execute(CmdRunAction(command=command, **fields))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def edit(runtime: DockerRuntime, command: str, path: str, **fields: Any) -> Observation:
    return await runtime.execute(FileEditAction(command=command, path=path, **fields))


# ------------------------------------------------------------------ acceptance through Docker

# The tests marked `on_shared` only run commands in a default sandbox and leave it usable
# (absolute paths, no user/volume/network options, nothing killed): they share one container.
on_shared = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(
    sandbox_image: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[DockerRuntime]:
    runtime = new_runtime(tmp_path_factory.mktemp("shared") / "workspace")
    await runtime.start()
    yield runtime
    await close_runtime(runtime)


async def test_shell_state_persists_and_exit_codes_come_back(make_runtime: MakeRuntime) -> None:
    runtime = await make_runtime(env={"WB_GREETING": "hello from the host"})
    obs = await shell(runtime, "echo $WB_GREETING")
    assert obs.exit_code == 0 and "hello from the host" in obs.content
    await shell(runtime, "mkdir -p /workspace/sub && cd /workspace/sub && export WB_X=42")
    obs = await shell(runtime, 'pwd; echo "x=$WB_X"')
    assert "/workspace/sub" in obs.content and "x=42" in obs.content
    assert obs.cwd == "/workspace/sub"
    obs = await shell(runtime, "false")
    assert obs.exit_code == 1
    obs = await shell(runtime, 'echo "token=${SANDBOX_TOKEN:-none}"')
    assert "token=none" in obs.content  # the server's token never reaches the agent's shell


@on_shared
async def test_the_token_is_in_no_environment_and_no_file(shared: DockerRuntime) -> None:
    runtime = shared
    client = runtime._client
    assert client is not None
    token = str(client._auth["Authorization"]).split()[1]  # type: ignore[attr-defined]
    obs = await shell(
        runtime,
        "{ cat /proc/[0-9]*/environ | tr '\\0' '\\n'; ps eww -A; ls -a /; "
        "cat /.sandbox-token; } 2>&1",
    )
    assert "SANDBOX_TOKEN" not in obs.content and token not in obs.content
    assert "sandbox-token" in obs.content  # cat's complaint: the file was deleted


@on_shared
async def test_soft_timeout_returns_a_running_command(shared: DockerRuntime) -> None:
    runtime = shared
    obs = await shell(runtime, "sleep 30", soft_timeout=1.0)
    assert obs.exit_code == -1 and obs.running
    obs = await shell(runtime, "C-c", is_input=True)
    obs = await shell(runtime, "echo after")
    assert "after" in obs.content and obs.exit_code == 0


@on_shared
async def test_editor_writes_files_the_host_sees(shared: DockerRuntime) -> None:
    runtime, workspace = shared, Path(shared.workspace)
    created = await edit(runtime, "create", "/workspace/app.py", file_text="x = 1\nprint(x)\n")
    assert isinstance(created, FileEditObservation), created
    replaced = await edit(
        runtime, "str_replace", "/workspace/app.py", old_str="x = 1", new_str="x = 2"
    )
    assert isinstance(replaced, FileEditObservation), replaced
    assert (workspace / "app.py").read_text() == "x = 2\nprint(x)\n"
    refused = await edit(runtime, "create", "/workspace/app.py", file_text="again")
    assert isinstance(refused, ErrorObservation)
    names = {entry.path for entry in await runtime.list_files(".")}
    assert "app.py" in names


@on_shared
async def test_editor_keeps_a_cp1251_file_in_cp1251(shared: DockerRuntime) -> None:
    runtime, workspace = shared, Path(shared.workspace)
    text = "[школа]\nгород = Новосибирск\nдиректор = Ирина Петровна\n"  # noqa: RUF001
    (workspace / "school.ini").write_bytes(text.encode("cp1251"))
    replaced = await edit(
        runtime, "str_replace", "/workspace/school.ini", old_str="Новосибирск", new_str="Томск"
    )
    assert isinstance(replaced, FileEditObservation), replaced
    assert "город = Томск" in replaced.content
    changed = text.replace("Новосибирск", "Томск")
    assert (workspace / "school.ini").read_bytes() == changed.encode("cp1251")


@on_shared
async def test_jupyter_runs_in_the_container_and_follows_the_shell(shared: DockerRuntime) -> None:
    runtime = shared
    code = "import sys, ipykernel; print(sys.prefix, ipykernel.__file__, 6 * 7)"
    obs = await runtime.execute(IPythonAction(code=code))
    assert isinstance(obs, IPythonObservation), obs
    # The agent's own env, layered over the image's venv (sandbox/agent_env.py).
    assert "/run/agent-env /opt/sandbox/lib/" in obs.content and " 42" in obs.content
    await shell(runtime, "mkdir -p /workspace/nb && cd /workspace/nb")
    obs = await runtime.execute(IPythonAction(code="import os; print(os.getcwd())"))
    assert isinstance(obs, IPythonObservation) and "/workspace/nb" in obs.content
    assert obs.cwd == "/workspace/nb" and obs.python == "/run/agent-env/bin/python"


# ------------------------------------------------------------------ users and volumes


async def test_files_belong_to_the_sandbox_user_id(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    runtime = await make_runtime(user_id=1234, volumes=[f"{shared}:/mnt/shared"])
    obs = await shell(runtime, "id -u; echo home=$HOME; touch ~/ok && echo home-writable")
    assert "1234" in obs.content and "home-writable" in obs.content
    await shell(runtime, "echo data > /workspace/by-shell.txt && echo x > /mnt/shared/out.txt")
    created = await edit(runtime, "create", "/workspace/by-editor.txt", file_text="hi\n")
    assert isinstance(created, FileEditObservation), created
    for path in ("workspace/by-shell.txt", "workspace/by-editor.txt", "shared/out.txt"):
        assert (tmp_path / path).stat().st_uid == 1234, path


async def test_read_only_volume_cannot_be_written(
    make_runtime: MakeRuntime, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "input.txt").write_text("original\n")
    runtime = await make_runtime(volumes=f"{data}:/mnt/data:ro")
    obs = await shell(runtime, "cat /mnt/data/input.txt; echo changed > /mnt/data/input.txt")
    assert "original" in obs.content and obs.exit_code != 0
    assert "Read-only file system" in obs.content
    written = await edit(runtime, "create", "/mnt/data/new.txt", file_text="x")
    assert isinstance(written, ErrorObservation), written
    assert (data / "input.txt").read_text() == "original\n"
    assert not (data / "new.txt").exists()


def test_bad_volume_specs_are_refused_clearly() -> None:
    assert [v.read_only for v in parse_volumes("/a:/b:ro,/c:/d")] == [True, False]
    for spec in ("/a", "/a:relative", "/a:/b:rx"):
        with pytest.raises(SandboxError, match="volume"):
            parse_volumes([spec])


# ------------------------------------------------------------------ container life


async def test_container_settings(make_runtime: MakeRuntime, docker_api: Any) -> None:
    runtime = await make_runtime(memory="256m")
    container = docker_api.containers.get(runtime.container_name)
    assert container.attrs["HostConfig"]["Memory"] == 256 * 1024 * 1024
    bindings = container.attrs["NetworkSettings"]["Ports"]["8000/tcp"]
    assert {b["HostIp"] for b in bindings} == {"127.0.0.1"}
    assert container.labels[LABEL] == "1"
    await runtime.close()
    with pytest.raises(docker.errors.NotFound):
        docker_api.containers.get(runtime.container_name)


async def test_keep_alive_reattaches_to_the_same_container(
    make_runtime: MakeRuntime, tmp_path: Path, docker_api: Any
) -> None:
    workspace = tmp_path / "kept"
    first = await make_runtime(workspace=workspace, keep_alive=True)
    pid = (await first.info()).pid
    await first.close()
    container = docker_api.containers.get(first.container_name)
    assert container.status == "running"
    second = await make_runtime(workspace=workspace, keep_alive=True)
    assert second.container_name == first.container_name
    assert (await second.info()).pid == pid  # the same server, not a new one
    second.keep_alive = False
    await second.close()


def _dead_pid() -> int:
    done = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(done.stdout)


async def test_stale_containers_of_ours_are_removed(
    make_runtime: MakeRuntime, sandbox_image: str, docker_api: Any
) -> None:
    here = f"{socket.gethostname()}:{os.stat('/proc/self/ns/pid').st_ino}"
    stale = docker_api.containers.create(
        sandbox_image,
        name=f"workbench-sandbox-stale-{os.getpid()}",
        labels={LABEL: "1", f"{LABEL}.owner": f"{here}:{_dead_pid()}"},
    )
    # Same host name, other pid namespace (an app container on the host's network): its
    # owner's pid means nothing here, so a container that is not dead is left alone.
    elsewhere = docker_api.containers.create(
        sandbox_image,
        name=f"workbench-sandbox-elsewhere-{os.getpid()}",
        labels={LABEL: "1", f"{LABEL}.owner": f"{socket.gethostname()}:1:{_dead_pid()}"},
    )
    try:
        await make_runtime()
        with pytest.raises(docker.errors.NotFound):
            docker_api.containers.get(stale.id)
        assert docker_api.containers.get(elsewhere.id).status == "created"
    finally:
        elsewhere.remove(force=True)


async def test_killed_container_is_restarted_and_the_agent_is_told(
    make_runtime: MakeRuntime, docker_api: Any
) -> None:
    runtime = await make_runtime()
    await shell(runtime, "export WB_STATE=before")
    docker_api.containers.get(runtime.container_name).kill()
    obs = await runtime.execute(CmdRunAction(command='echo "state=${WB_STATE:-lost}"'))
    text = obs.model_dump_json()
    assert "restarted" in text and "lost" in text, text
    assert runtime.state == "ready" and runtime.restarts == 1
    obs = await shell(runtime, "echo alive")
    assert "alive" in obs.content


# ------------------------------------------------------------------ failure messages


async def test_unreachable_daemon_says_what_to_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    runtime = DockerRuntime(tmp_path / "ws", base_image=BASE_IMAGE)
    with pytest.raises(SandboxError, match="scripts/docker-up") as caught:
        await runtime.start()
    assert "systemctl start docker" in str(caught.value)
    assert runtime.state == "stopped"


def test_base_image_without_python_is_refused(sandbox_image: str, docker_api: Any) -> None:
    tag = "workbench-test-nopython:latest"
    import_image_without_python(docker_api, tag)
    try:
        with pytest.raises(SandboxError, match="no working `python3`") as caught:
            ensure_image(tag)
    finally:
        docker_api.images.remove(tag, force=True)
    assert "Python >= 3.11" in str(caught.value)


def _build_with_files(docker_api: Any, tag: str, dockerfile: str, files: dict[str, str]) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in {"Dockerfile": dockerfile, **files}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(text.encode()), 0o755
            tar.addfile(info, io.BytesIO(text.encode()))
    buffer.seek(0)
    docker_api.images.build(fileobj=buffer, custom_context=True, tag=tag, rm=True)


def test_base_image_with_an_old_python_is_refused(sandbox_image: str, docker_api: Any) -> None:
    tag = "workbench-test-oldpython:latest"
    # A python3 first on PATH that answers the probe as Debian 11's Python 3.9 would.
    probe = '{"version": [3, 9, 2], "machine": "x86_64", "libc": ["glibc", "2.31"], "venv": true}'
    _build_with_files(
        docker_api,
        tag,
        f"FROM {BASE_IMAGE}\nCOPY python3 /usr/local/bin/python3\n",
        {"python3": f"#!/bin/sh\necho '{probe}'\n"},
    )
    try:
        with pytest.raises(
            SandboxError, match=r"has Python 3\.9; the sandbox needs Python >= 3\.11"
        ):
            ensure_image(tag)
    finally:
        docker_api.images.remove(tag, force=True)


def test_failed_build_shows_the_log_tail(sandbox_image: str, docker_api: Any) -> None:
    tag = "workbench-test-nopip:latest"
    dockerfile = f"FROM {BASE_IMAGE}\nRUN rm -f /usr/share/python-wheels/pip-*.whl\n"
    docker_api.images.build(fileobj=io.BytesIO(dockerfile.encode()), tag=tag, rm=True)
    lines: list[str] = []
    try:
        with pytest.raises(SandboxError, match="failed") as caught:
            ensure_image(tag, image_prefix="workbench-test-broken", progress=lines.append)
    finally:
        docker_api.images.remove(tag, force=True)
    message = str(caught.value)
    assert "last lines of the build log" in message and "venv" in message
    assert any("Step" in line for line in lines)  # progress was reported while building
