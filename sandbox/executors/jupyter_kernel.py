"""One IPython kernel process driven through jupyter_client: start, run a cell, interrupt, stop.

Imported lazily by `sandbox.executors.jupyter` (jupyter_client costs ~0.15 s to import). The
kernel talks over ipc sockets in a private temporary folder (no TCP ports, no "unencrypted
connection" warning), runs `sys.executable` with IPython history off, and is the leader of its
own process group, so a kill reaches whatever the kernel started.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import KernelManager

from sandbox import confine

READY_TIMEOUT_S = 60.0
INTERRUPT_GRACE_S = 5.0
"""How long an interrupted cell may take to stop before the kernel counts as stuck."""
POLL_S = 0.2
"""How often a waiting cell checks that the kernel process is still alive."""


# ipykernel's own parent watch exits the kernel alone when the sandbox server dies; this one
# (ipykernel's is turned off by dropping JPY_PARENT_PID) takes the kernel's whole process
# group with it, so nothing the agent started from a cell outlives the server.
LAUNCHER = """\
import os, shutil, signal, sys, threading, time
def _watch(parent=os.getppid(), folder=os.path.dirname(sys.argv[sys.argv.index("-f") + 1])):
    while os.getppid() == parent:
        time.sleep(0.5)
    shutil.rmtree(folder, ignore_errors=True)  # the connection file and ipc sockets
    os.killpg(0, signal.SIGKILL)
threading.Thread(target=_watch, name="parent-watch", daemon=True).start()
os.environ.pop("JPY_PARENT_PID", None)
if sys.path and sys.path[0] == "":
    del sys.path[0]  # as ipykernel_launcher does; IPython adds the cwd back for cells
from ipykernel import kernelapp
kernelapp.launch_new_instance()
"""


class KernelStartError(Exception):
    """The kernel process could not be started; the message says why."""


class _FixedSpecManager(KernelSpecManager):
    """Always answers with a spec that runs ipykernel on `python`: the agent's env (layered over
    the sandbox venv, `sandbox/agent_env.py`) or this interpreter.

    A user-installed `python3` kernelspec must not change which Python the agent gets.
    """

    python = sys.executable

    def get_kernel_spec(self, kernel_name: str) -> Any:
        argv = [self.python, "-c", LAUNCHER, "-f", "{connection_file}"]
        return KernelSpec(
            argv=confine.wrap([*argv, "--HistoryManager.enabled=False"]),
            display_name="Python 3 (sandbox)",
            language="python",
            # Confined, the process we started is bwrap, which a SIGINT would end: ask the
            # kernel to interrupt itself instead.
            interrupt_mode="message" if confine.enabled() else "signal",
        )


@dataclass
class CellRun:
    """What one execute request produced: its iopub messages in order and how it ended."""

    messages: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: str = "ok"
    """The reply's status: "ok", "error" or "aborted"; "timeout" or "died" when none came."""
    interrupted: bool = False
    started: bool = False
    """Whether the kernel said it was busy with this cell."""
    payloads: list[dict[str, Any]] = field(default_factory=list)
    expressions: dict[str, Any] = field(default_factory=dict)
    """The reply's `user_expressions`: each as IPython's display bundle, or an error."""


class Kernel:
    """A started IPython kernel and a blocking client connected to it."""

    def __init__(self, cwd: Path, env: dict[str, str], python: str | None = None) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="wb-kernel-"))
        self._log_path = self._dir / "kernel.log"
        specs = _FixedSpecManager()
        specs.python = python or sys.executable
        self._km = KernelManager(kernel_name="python3", transport="ipc", kernel_spec_manager=specs)
        self._km.connection_file = str(self._dir / "kernel.json")
        self._km.ip = str(self._dir / "ipc")
        self._client: BlockingKernelClient | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.python = specs.python
        """The interpreter the kernel runs on (`_FixedSpecManager` always launches this one)."""
        try:
            with open(self._log_path, "wb") as log:
                self._km.start_kernel(
                    cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=log,
                )  # fmt: skip
            self._process = getattr(self._km.provisioner, "process", None)
            self.pid = self._process.pid if self._process is not None else 0
            client = self._km.client()
            client.start_channels()
            self._client = client
            client.wait_for_ready(timeout=READY_TIMEOUT_S)
        except Exception as exc:
            detail = self.log_tail()
            self.shutdown()
            raise KernelStartError(
                f"The IPython kernel ({specs.python} with ipykernel) did not start: "
                f"{type(exc).__name__}: {exc}" + (f"\nKernel log:\n{detail}" if detail else "")
            ) from exc

    def exit_code(self) -> int | None:
        """None while the kernel process runs, else its exit code (negative: killed by signal)."""
        if self._process is None:
            return -1
        return self._process.poll()

    def alive(self) -> bool:
        """Whether the kernel process is still running (a killed one may not be reapable yet)."""
        return self.exit_code() is None and _proc_state(self.pid) not in ("Z", "X", "")

    def log_tail(self, chars: int = 2000) -> str:
        """The end of what the kernel wrote to stderr (for start-up failures)."""
        try:
            return self._log_path.read_text(errors="replace")[-chars:].strip()
        except OSError:
            return ""

    def run(
        self,
        code: str,
        timeout: float,
        silent: bool = False,
        expressions: dict[str, str] | None = None,
        on_message: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> CellRun:
        """Execute `code` and collect its output until the kernel is idle again.

        On `timeout` the kernel is interrupted and the output up to then kept; if it does not
        stop within INTERRUPT_GRACE_S the run ends with status "timeout". A kernel that dies
        meanwhile ends the run with status "died". `expressions` are evaluated by the kernel
        after a cell that succeeds, in the same request (`CellRun.expressions`). `on_message`
        sees each output message as it arrives (for live output).
        """
        assert self._client is not None
        client = self._client
        msg_id: str = client.execute(
            code,
            silent=silent,
            store_history=not silent,
            allow_stdin=False,
            user_expressions=expressions or {},
        )
        run = CellRun()
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if run.interrupted:
                    run.status = "timeout"
                    return run
                run.interrupted = True
                self.interrupt()
                deadline = time.monotonic() + INTERRUPT_GRACE_S
                continue
            try:
                msg = client.get_iopub_msg(timeout=min(remaining, POLL_S))
            except queue.Empty:
                if not self.alive():
                    run.status = "died"
                    return run
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue  # left over from an earlier, interrupted cell
            kind: str = msg["msg_type"]
            content: dict[str, Any] = msg["content"]
            if kind == "status":
                if content.get("execution_state") == "idle":
                    break
                run.started = True
                continue
            run.messages.append((kind, content))
            if on_message is not None:
                on_message(kind, content)
        reply = self._reply(msg_id)
        if reply is None:
            run.status = "died" if not self.alive() else "error"
        else:
            run.status = str(reply.get("status", "error"))
            run.payloads = list(reply.get("payload") or [])
            run.expressions = dict(reply.get("user_expressions") or {})
        return run

    def _reply(self, msg_id: str) -> dict[str, Any] | None:
        assert self._client is not None
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                msg = self._client.get_shell_msg(timeout=min(remaining, POLL_S))
            except queue.Empty:
                if not self.alive():
                    return None
                continue
            if msg["parent_header"].get("msg_id") == msg_id:
                content: dict[str, Any] = msg["content"]
                return content
        return None

    def interrupt(self) -> None:
        """Send SIGINT to the kernel's process group (a KeyboardInterrupt in the cell)."""
        with contextlib.suppress(Exception):
            self._km.interrupt_kernel()

    def kill(self) -> None:
        """SIGKILL the kernel, its process group and its other descendants; safe from any thread."""
        if self.pid <= 0:
            return
        doomed = _descendants(self.pid)
        with contextlib.suppress(OSError):
            os.killpg(self.pid, signal.SIGKILL)  # the kernel leads its own session and group
        for pid in [self.pid, *doomed]:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def shutdown(self) -> None:
        """Stop the kernel and everything it started, close the sockets, remove the temp folder."""
        self.kill()
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.stop_channels()
            self._client = None
        with contextlib.suppress(Exception):
            self._km.shutdown_kernel(now=True)
        if self._process is not None:
            with contextlib.suppress(Exception):
                self._process.wait(timeout=5)
        shutil.rmtree(self._dir, ignore_errors=True)


def _proc_state(pid: int) -> str | None:
    """The /proc state letter of `pid` ("" if gone), or None where /proc does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return "" if os.path.isdir("/proc/self") else None
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :][:1].decode()


def _descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (Linux /proc; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Fields after the command name, which is in parentheses and may contain spaces.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
