"""The local runtime with a real server child process: start, restart, close, isolation."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest
from waiting import until

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
    OutputChunk,
)
from sandbox.runtimes import create_runtime
from sandbox.runtimes.base import SandboxError
from sandbox.runtimes.local import LocalRuntime, session_processes


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    (tmp_path / "ws").mkdir()
    rt = LocalRuntime(tmp_path / "ws")
    await rt.start()
    yield rt
    await rt.close()


def family(pid: int) -> list[psutil.Process]:
    """The process and everything below it."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running (zombies count as gone)."""
    left = []
    for proc in processes:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except psutil.NoSuchProcess:
            pass
    return left


async def family_running(pid: int, *commands: str) -> list[psutil.Process]:
    """`family(pid)` once each of `commands` runs in it: a job sent to the background is
    forked before the prompt comes back, but may exec its command only after."""

    def found() -> list[psutil.Process]:
        processes = family(pid)
        try:
            lines = " | ".join(" ".join(p.cmdline()) for p in processes)
        except psutil.NoSuchProcess:
            return []
        return processes if all(c in lines for c in commands) else []

    return await until(found, 30, f"{', '.join(commands)} to run")


async def wait_dead(pid: int) -> None:
    def dead() -> bool:
        try:
            return not alive([psutil.Process(pid)])
        except psutil.NoSuchProcess:
            return True

    await until(dead, 30, f"process {pid} to die")


def sleeping(cmdline: list[str]) -> list[psutil.Process]:
    """The processes running exactly `cmdline` (a sleep with a unique duration)."""
    return [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == cmdline]


async def echo_until_streamed(runtime: LocalRuntime, chunks: list[str], word: str) -> None:
    """Echo `word` every 0.05 s until the stream has carried it: the stream may subscribe
    later than a first command runs (after a start, after a restart)."""
    stop = f"streamed-{word}"
    loop = f"until [ -e {stop} ]; do echo {word}; sleep 0.05; done"
    echoing = asyncio.create_task(runtime.execute(CmdRunAction(command=loop, timeout=120)))
    try:
        await until(lambda: any(word in chunk for chunk in chunks), 30, f"{word!r} streamed")
    finally:
        (runtime.workspace / stop).touch()
    echoed = await asyncio.wait_for(echoing, 30)
    assert isinstance(echoed, CmdOutputObservation) and echoed.exit_code == 0, echoed


async def test_start_execute_info_close(runtime: LocalRuntime) -> None:
    assert runtime.state == "ready" and runtime.pid is not None
    info = await runtime.info()
    assert info.workspace == str(runtime.workspace)
    # In bubblewrap the server reports its pid in its own namespace; without it, the host's.
    assert (info.pid == runtime.pid) == (runtime.isolation == "none")
    observation = await runtime.execute(CmdRunAction(command="echo hello"))
    assert isinstance(observation, CmdOutputObservation)
    assert observation.exit_code == 0 and "hello" in observation.content
    assert observation.note is None


async def test_runtime_files_and_artifacts(runtime: LocalRuntime) -> None:
    await runtime.upload("a/b.txt", b"payload")
    assert (runtime.workspace / "a" / "b.txt").read_bytes() == b"payload"
    assert await runtime.download_file("a/b.txt") == b"payload"
    assert [e.path for e in await runtime.list_files("a")] == ["a/b.txt"]
    (runtime.artifacts / "shot.png").write_bytes(b"png")
    assert await runtime.download("shot.png") == b"png"


async def test_killed_server_is_restarted_and_the_next_action_works(runtime: LocalRuntime) -> None:
    await runtime.execute(CmdRunAction(command="export GONE=1"))
    old_pid = runtime.pid
    assert old_pid is not None
    os.kill(old_pid, signal.SIGKILL)
    await wait_dead(old_pid)
    observation = await runtime.execute(CmdRunAction(command="echo ok ${GONE:-unset}"))
    assert isinstance(observation, CmdOutputObservation), (observation, runtime._log_tail())
    assert observation.exit_code == 0 and "ok unset" in observation.content
    assert observation.note and "restarted" in observation.note
    assert runtime.pid != old_pid and runtime.restarts == 1 and runtime.state == "ready"
    again = await runtime.execute(CmdRunAction(command="echo fine"))
    assert isinstance(again, CmdOutputObservation) and again.note is None


async def test_restart_note_on_an_observation_without_a_note_field(runtime: LocalRuntime) -> None:
    assert runtime.pid is not None
    os.kill(runtime.pid, signal.SIGKILL)
    await wait_dead(runtime.pid)
    view = await runtime.execute(FileEditAction(command="view", path=str(runtime.workspace)))
    assert isinstance(view, FileEditObservation), (view.content, runtime._log_tail())
    assert "restarted" in view.content


async def test_action_lost_mid_flight_says_so(runtime: LocalRuntime) -> None:
    pid = runtime.pid
    assert pid is not None
    began = runtime.workspace / "began"
    command = f"touch {began}; sleep 5; echo late"
    running = asyncio.create_task(runtime.execute(CmdRunAction(command=command)))
    await until(began.exists)  # the action is mid-flight, not yet sent
    os.kill(pid, signal.SIGKILL)
    observation = await asyncio.wait_for(running, 10)
    assert isinstance(observation, ErrorObservation) and observation.error_kind == "sandbox"
    assert "restarted" in observation.content and "run it again" in observation.content
    after = await runtime.execute(CmdRunAction(command="echo back"))
    assert isinstance(after, CmdOutputObservation) and "back" in after.content


async def test_unrecoverable_after_failed_restarts(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = LocalRuntime(workspace)
    await runtime.start()
    try:
        assert runtime.pid is not None
        shutil.rmtree(workspace)  # every restart now fails
        os.kill(runtime.pid, signal.SIGKILL)
        await wait_dead(runtime.pid)
        with pytest.raises(SandboxError, match="unrecoverable") as failure:
            await runtime.execute(CmdRunAction(command="echo hi"))
        assert "does not exist" in str(failure.value) and "start a new one" in str(failure.value)
        assert runtime.state == "dead"
        with pytest.raises(SandboxError, match="unrecoverable"):
            await runtime.execute(CmdRunAction(command="echo hi"))
    finally:
        await runtime.close()


async def test_start_failure_is_actionable(tmp_path: Path) -> None:
    runtime = LocalRuntime(tmp_path / "missing")
    with pytest.raises(SandboxError, match="does not exist"):
        await runtime.start()
    await runtime.close()
    with pytest.raises(SandboxError, match="closed"):
        await runtime.execute(CmdRunAction(command="echo hi"))


async def test_close_leaves_no_process(tmp_path: Path) -> None:
    runtime = LocalRuntime(tmp_path)
    await runtime.start()
    await runtime.execute(CmdRunAction(command="sleep 300 > /dev/null 2>&1 &"))
    await runtime.execute(CmdRunAction(command="(setsid sleep 301 > /dev/null 2>&1 &)"))
    cell = await runtime.execute(IPythonAction(code="import os; os.getpid()"))
    assert isinstance(cell, IPythonObservation) and not cell.error
    assert runtime.pid is not None
    before = await family_running(runtime.pid, "sleep 300", "kernel", "bash")
    await runtime.close()
    assert alive(before) == []
    assert session_processes(runtime.session_id) == set()
    assert runtime.state == "closed"
    assert not runtime._tmp.exists()


SLEEPER = ["sleep", "302.017"]


async def test_close_after_a_crash_kills_the_orphans(tmp_path: Path) -> None:
    # Without isolation nothing else reaps them (under bwrap the pid namespace already does):
    # the orphans must outlive the crash, so that close() is what kills them. Two layers do:
    # the session's environment marker and the limits' cgroup; the test fails without both.
    runtime = LocalRuntime(tmp_path, isolation="none")
    await runtime.start()
    # setsid: out of the shell's job control, so the hang-up of the dying pty does not reach it
    await runtime.execute(CmdRunAction(command="setsid sleep 302.017 > /dev/null 2>&1 &"))
    assert runtime.pid is not None
    before = family(runtime.pid)
    # setsid forks away from the shell: found by its unique command line
    orphans = await until(lambda: sleeping(SLEEPER), 30, "the background sleep to run")
    before += orphans
    os.kill(runtime.pid, signal.SIGKILL)
    await wait_dead(runtime.pid)
    assert alive(orphans) == orphans, "the orphan died with the server: nothing left to clean up"
    await runtime.close()
    assert alive(before) == []


async def test_a_crashed_bwrap_sandbox_takes_its_processes_along(tmp_path: Path) -> None:
    runtime = LocalRuntime(tmp_path, isolation="bwrap")
    await runtime.start()
    await runtime.execute(CmdRunAction(command="sleep 303 > /dev/null 2>&1 &"))
    assert runtime.pid is not None
    before = await family_running(runtime.pid, "sleep 303")
    os.kill(runtime.pid, signal.SIGKILL)
    await wait_dead(runtime.pid)
    await runtime.close()
    assert alive(before) == []


async def test_stream_follows_commands(runtime: LocalRuntime) -> None:
    chunks: list[str] = []

    async def listen() -> None:
        async for event in runtime.stream():
            if isinstance(event, OutputChunk):
                chunks.append(event.data)

    listener = asyncio.create_task(listen())
    await echo_until_streamed(runtime, chunks, "streamed")
    await runtime.close()
    await asyncio.wait_for(listener, 5)  # the stream ends with the runtime


async def test_stream_survives_a_restart(runtime: LocalRuntime) -> None:
    chunks: list[str] = []

    async def listen() -> None:
        async for event in runtime.stream():
            if isinstance(event, OutputChunk):
                chunks.append(event.data)

    listener = asyncio.create_task(listen())
    try:
        await echo_until_streamed(runtime, chunks, "before")
        assert runtime.pid is not None
        os.kill(runtime.pid, signal.SIGKILL)
        await wait_dead(runtime.pid)
        await echo_until_streamed(runtime, chunks, "after")
    finally:
        listener.cancel()


async def test_secrets_and_the_token_stay_out_of_the_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_API_KEY", "sk-very-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-secret")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    runtime = LocalRuntime(tmp_path, env={"EXTRA": "given"})
    await runtime.start()
    try:
        observation = await runtime.execute(CmdRunAction(command="env"))
        assert isinstance(observation, CmdOutputObservation)
        assert "HARMLESS_SETTING=visible" in observation.content
        assert "EXTRA=given" in observation.content
        for secret in ("sk-very-secret", "tok-secret", "SANDBOX_TOKEN"):
            assert secret not in observation.content
        # Nor a setting the server uses for itself while it starts (it once leaked here).
        assert "PYDANTIC_DISABLE_PLUGINS" not in observation.content
    finally:
        await runtime.close()


async def test_soft_timeout_from_the_runtime(tmp_path: Path) -> None:
    runtime = create_runtime("local", workspace=tmp_path, soft_timeout_s=0.5)
    await runtime.start()
    try:
        observation = await runtime.execute(CmdRunAction(command="sleep 3"))
        assert isinstance(observation, CmdOutputObservation) and observation.exit_code == -1
        await runtime.execute(CmdRunAction(command="C-c", is_input=True))
        # A hard timeout replaces the soft one, also across the wire.
        waited = await runtime.execute(CmdRunAction(command="sleep 1.5; echo done", timeout=10))
        assert isinstance(waited, CmdOutputObservation)
        assert waited.exit_code == 0 and "done" in waited.content
    finally:
        await runtime.close()


def test_create_runtime_rejects_unknown_names() -> None:
    with pytest.raises(SandboxError, match="unknown sandbox runtime 'moon'"):
        create_runtime("moon")
    with pytest.raises(SandboxError, match="isolation"):
        LocalRuntime(".", isolation="jail")  # type: ignore[arg-type]


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_bwrap_isolation(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    runtime = LocalRuntime(workspace, isolation="bwrap")
    await runtime.start()
    try:
        wrote = await runtime.execute(CmdRunAction(command="echo made > inside.txt && pwd"))
        assert isinstance(wrote, CmdOutputObservation) and wrote.exit_code == 0
        assert (workspace / "inside.txt").read_text() == "made\n"
        system = await runtime.execute(CmdRunAction(command="touch /usr/escape; echo rc=$?"))
        assert isinstance(system, CmdOutputObservation) and "rc=1" in system.content
        outside = await runtime.execute(CmdRunAction(command=f"ls {tmp_path}"))
        assert isinstance(outside, CmdOutputObservation) and "ws" in outside.content
        assert "server.log" not in outside.content  # only the workspace of tmp_path is there
    finally:
        await runtime.close()


async def test_send_input_interrupts_a_command_the_agent_waits_on(runtime: LocalRuntime) -> None:
    assert not await runtime.send_input("C-c")  # nothing runs yet
    waiting = asyncio.create_task(
        runtime.execute(CmdRunAction(command="sleep 30.019", soft_timeout=25))
    )
    await until(lambda: sleeping(["sleep", "30.019"]), 30, "the command to run")
    assert await runtime.send_input("C-c")
    obs = await asyncio.wait_for(waiting, 10)
    assert isinstance(obs, CmdOutputObservation)
    assert obs.exit_code == 130


async def test_send_input_answers_a_prompt(runtime: LocalRuntime) -> None:
    first = await runtime.execute(
        CmdRunAction(command='read -p "Name: " n && echo "Hi $n"', soft_timeout=0.5)
    )
    assert isinstance(first, CmdOutputObservation) and first.exit_code == -1
    assert await runtime.send_input("Ann")
    obs = await runtime.execute(CmdRunAction(command=""))
    assert isinstance(obs, CmdOutputObservation)
    assert "Hi Ann" in obs.content and obs.exit_code == 0


def test_auto_without_bubblewrap_falls_back_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sandbox.runtimes.bwrap

    missing = "bubblewrap is not installed (apt-get install bubblewrap)"
    monkeypatch.setattr(sandbox.runtimes.bwrap, "bwrap_available", lambda: missing)
    runtime = LocalRuntime(tmp_path)
    assert runtime.isolation == "none"
    assert runtime.warning is not None and "NOT isolated" in runtime.warning
    assert missing in runtime.warning
    assert LocalRuntime(tmp_path, isolation="none").warning is None  # chosen, not a fallback
    with pytest.raises(SandboxError, match="not possible here"):
        LocalRuntime(tmp_path, isolation="bwrap")
    with pytest.raises(SandboxError, match="network off needs isolation"):
        LocalRuntime(tmp_path, network=False)
