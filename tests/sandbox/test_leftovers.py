"""Nothing of a SIGKILLed app's sandbox is left once a new session starts (issue 12, item 7).

An "app" here is a real Python process that starts a runtime the way workbench does, has the
agent start a command that tries to outlive it (`setsid nohup sleep ...`), says it is ready and
waits. The test SIGKILLs it, so nothing of its own cleanup runs, then starts a new session. The last
test does the same with the real `workbench --headless` against the scripted LLM server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from docker_support import BASE_IMAGE, MakeRuntime, docker_api, make_runtime, sandbox_image
from headless_harness import bash, cli_env, finish, run_cli
from waiting import wait_until

from sandbox.runtimes import leftovers
from sandbox.runtimes.docker import LABEL
from sandbox.runtimes.local import LocalRuntime
from workbench.testing.llm_server import ScriptedLLMServer

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

ROOT = Path(__file__).resolve().parents[2]

APP = """
import asyncio, json, sys
from sandbox.protocol import CmdRunAction
from sandbox.runtimes import create_runtime

async def main():
    kind, workspace, marker, options = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    runtime = create_runtime(kind, workspace=workspace, disable=["browser"], **json.loads(options))
    await runtime.start()
    await runtime.execute(CmdRunAction(
        command=f"setsid nohup sleep {marker} >/dev/null 2>&1 & sleep {marker}", soft_timeout=1))
    print(json.dumps({"tmp": str(getattr(runtime, "_tmp", "")),
                      "container": getattr(runtime, "container_name", None)}), flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def marker_processes(marker: str) -> list[int]:
    """Host pids (containers' included) whose command line holds `marker`."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read():
                        found.append(int(entry.name))
            except OSError:
                continue
    return found


def present(path: Path) -> bool:
    """Whether `path` exists (a plain call: the tests' checks are instant)."""
    return path.exists()


@pytest.fixture
def killed_app(tmp_path: Path) -> Iterator[Any]:
    """Start an app process on a runtime; the test gets its details and SIGKILLs it."""
    started: list[subprocess.Popen[bytes]] = []

    def start(kind: str, **options: Any) -> tuple[subprocess.Popen[bytes], dict[str, Any], str]:
        marker = f"{9000 + secrets.randbelow(999)}.{secrets.randbelow(10**6)}"
        workspace = tmp_path / f"ws-{kind}"
        workspace.mkdir(exist_ok=True)
        proc = subprocess.Popen(
            [sys.executable, "-c", APP, kind, str(workspace), marker, json.dumps(options)],
            stdout=subprocess.PIPE,
            cwd=ROOT,
        )
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, f"the app exited with {proc.wait()} before it was ready"
        details = json.loads(line)
        wait_until(lambda: len(marker_processes(marker)) >= 2, 30, "both sleeps to run")
        # A local runtime's folder, read while its owner lives (then any start may sweep it).
        if details["tmp"]:
            owner = Path(details["tmp"]) / leftovers.OWNER_FILE
            details["owner"] = json.loads(owner.read_text())
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return proc, details, marker

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("isolation", ["auto", "none"])
async def test_a_killed_local_session_leaves_nothing(
    killed_app: Any, tmp_path: Path, isolation: str
) -> None:
    _, details, marker = killed_app("local", isolation=isolation)
    folder = Path(details["tmp"])
    assert folder.name.startswith(leftovers.LOCAL_PREFIX)
    assert details["owner"]["pid"] > 0
    runtime = LocalRuntime(tmp_path, disable=["browser"])  # the next session
    try:
        await runtime.start()
        await asyncio.to_thread(runtime.sweeper.join, 30)
        assert not present(folder)
        assert marker_processes(marker) == []
        assert present(runtime._tmp)  # its own folder stays: its owner lives
    finally:
        await runtime.close()


@pytest.mark.docker
async def test_a_killed_docker_session_stops_at_once_and_the_next_start_removes_it(
    killed_app: Any, tmp_path: Path, docker_api: Any
) -> None:
    _, details, marker = killed_app("docker", base_image=BASE_IMAGE, memory="1g")
    container = docker_api.containers.get(details["container"])

    def stopped() -> bool:
        container.reload()
        return bool(container.status != "running")

    # The app is gone: its container stops by itself, taking the agent's command with it.
    wait_until(stopped, 30, "the container to stop")
    assert marker_processes(marker) == []
    runtime = LocalRuntime(tmp_path, disable=["browser"])  # the next session, any runtime
    try:
        await runtime.start()
        await asyncio.to_thread(runtime.sweeper.join, 30)
        with pytest.raises(docker.errors.NotFound):
            docker_api.containers.get(details["container"])
    finally:
        await runtime.close()


@pytest.mark.docker
async def test_a_new_docker_session_removes_a_killed_local_sessions_folder(
    killed_app: Any, make_runtime: MakeRuntime
) -> None:
    _, details, marker = killed_app("local", isolation="none")
    folder = Path(details["tmp"])
    assert present(folder)
    await make_runtime()
    assert not present(folder)
    assert marker_processes(marker) == []


def test_only_dead_owners_are_leftovers(tmp_path: Path) -> None:
    alive = leftovers.owner_label()
    assert leftovers.label_owner_dead(alive) is False
    host, namespace, pid, started = alive.split(":")
    assert leftovers.label_owner_dead(f"{host}:{namespace}:{pid}:{int(started) + 1}") is True
    assert leftovers.label_owner_dead(f"elsewhere:{namespace}:{pid}:{started}") is None
    labels = {f"{leftovers.CONTAINER_LABEL}.owner": "elsewhere:1:2:3"}
    assert not leftovers.container_is_leftover(labels, "running")  # cannot tell: kept
    assert leftovers.container_is_leftover(labels, "exited")
    kept = {**labels, f"{leftovers.CONTAINER_LABEL}.keep_alive": "1"}
    assert not leftovers.container_is_leftover(kept, "exited")
    mine = tmp_path / f"{leftovers.LOCAL_PREFIX}mine"
    mine.mkdir()
    leftovers.record_owner(mine, "no-such-session")
    unowned = tmp_path / f"{leftovers.LOCAL_PREFIX}being-made"
    unowned.mkdir()
    assert leftovers.sweep_folders(tmp_path) == [] and mine.exists() and unowned.exists()


def test_the_sweep_reads_no_fifo_symlink_or_big_file(tmp_path: Path) -> None:
    """A FIFO planted as a temp folder's owner record hung the sweep (and a Docker start)."""
    for name, plant in (
        ("fifo", lambda p: os.mkfifo(p)),
        ("link", lambda p: p.symlink_to("/dev/zero")),
        ("big", lambda p: p.write_bytes(b" " * (leftovers.MAX_OWNER_BYTES + 1))),
    ):
        folder = tmp_path / f"{leftovers.LOCAL_PREFIX}{name}"
        folder.mkdir()
        plant(folder / leftovers.OWNER_FILE)
    dead = tmp_path / f"{leftovers.LOCAL_PREFIX}dead"
    dead.mkdir()
    (dead / leftovers.OWNER_FILE).write_text(json.dumps({"pid": 1, "start": "0", "session": ""}))
    swept = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from sandbox.runtimes import leftovers; "
            "print(leftovers.sweep_folders(sys.argv[1]))",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert swept.returncode == 0, swept.stderr
    assert not dead.exists() and len(list(tmp_path.iterdir())) == 3


def test_the_sweep_leaves_another_user_s_folder(tmp_path: Path) -> None:
    """A folder of another uid with a dead owner's record naming a session is not trusted: its
    record could name one of our live sessions, whose processes the sweep would kill."""
    theirs = tmp_path / f"{leftovers.LOCAL_PREFIX}theirs"
    theirs.mkdir()
    (theirs / leftovers.OWNER_FILE).write_text(json.dumps({"pid": 1, "start": "0", "session": ""}))
    if os.geteuid() == 0:  # as root, hand it to another uid; otherwise it is ours anyway
        os.chown(theirs, 65534, 65534)
        assert leftovers.sweep_folders(tmp_path) == [] and theirs.exists()
        os.chown(theirs, 0, 0)
    assert leftovers.sweep_folders(tmp_path) == [theirs] and not theirs.exists()


@pytest.mark.docker
async def test_a_fifo_in_a_temp_folder_does_not_hold_up_a_start(
    make_runtime: MakeRuntime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started beside a FIFO planted as an owner record, a Docker runtime (which sweeps the
    temp folders before it starts its container) starts about as fast as without it. The temp
    folder is this test's own: a FIFO in the shared one would hang others' starts."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))

    async def start() -> float:
        began = time.perf_counter()
        runtime = await make_runtime()
        took = time.perf_counter() - began
        await runtime.close()
        return took

    await start()  # warm: the image and the engine's caches
    plain = await start()
    planted = Path(tempfile.mkdtemp(prefix=leftovers.LOCAL_PREFIX))
    assert planted.parent == temp
    os.mkfifo(planted / leftovers.OWNER_FILE)
    try:
        beside = await asyncio.wait_for(start(), timeout=20 * plain + 10)
    finally:
        with contextlib.suppress(OSError):  # a sweep stuck on it (without the fix) goes on
            os.close(os.open(planted / leftovers.OWNER_FILE, os.O_WRONLY | os.O_NONBLOCK))
    assert beside < 3 * plain, (beside, plain)


# ------------------------------------------------------------------ the real app, headless


def owned_by(pid: int) -> tuple[list[Path], list[str]]:
    """The temp folders and sandbox containers whose recorded owner is `pid`."""
    folders = []
    for folder in Path(tempfile.gettempdir()).glob(f"{leftovers.LOCAL_PREFIX}*"):
        try:
            if json.loads((folder / leftovers.OWNER_FILE).read_text())["pid"] == pid:
                folders.append(folder)
        except (OSError, ValueError, KeyError):
            continue
    containers = []
    if os.path.exists("/var/run/docker.sock"):
        import docker

        client = docker.from_env()
        for container in client.containers.list(all=True, filters={"label": LABEL}):
            owner = container.labels.get(f"{LABEL}.owner", "").split(":")
            if len(owner) >= 3 and owner[2] == str(pid):
                containers.append(str(container.name))
        client.close()
    return folders, containers


@pytest.mark.parametrize("runtime", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_a_sigkilled_headless_run_leaves_nothing_after_the_next_run(
    runtime: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if runtime == "docker":
        request.getfixturevalue("sandbox_image")
    marker = f"{9000 + secrets.randbelow(999)}.{secrets.randbelow(10**6)}"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    extra = {"RUNTIME": runtime, "WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE": BASE_IMAGE}
    script = [bash(f"setsid nohup sleep {marker} >/dev/null 2>&1 & sleep {marker}"), finish()]
    with ScriptedLLMServer(script) as server:
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))},
            **cli_env(tmp_path, server.base_url, **extra),
        }
        app = subprocess.Popen(
            [sys.executable, "-m", "workbench", "--headless", "-t", "sleep"],
            env=env,
            cwd=workspace,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(lambda: len(marker_processes(marker)) >= 2, 120, "both sleeps to run")
            folders, containers = owned_by(app.pid)
            assert folders if runtime == "local" else containers
        finally:
            app.send_signal(signal.SIGKILL)
            app.wait()
    if runtime == "docker":  # its container stops with the app, before any new session
        wait_until(lambda: marker_processes(marker) == [], 30, "the agent's sleeps to end")
    with ScriptedLLMServer([finish()]) as server:  # the next session, on the local runtime
        env.update(LLM_BASE_URL=server.base_url, RUNTIME="local")
        done = run_cli(["--headless", "-t", "nothing"], env, workspace, timeout=300)
    assert done.returncode == 0, done.stderr
    # The sweep of a local start runs beside it: give it a moment after the run.
    wait_until(lambda: owned_by(app.pid) == ([], []), 30, "the killed app's leftovers gone")
    assert marker_processes(marker) == []
