"""`LocalRuntime`: the sandbox server as a child process of this one, optionally in bubblewrap.

The server runs in its own process group, gets its token through a pipe (`--token-fd`: never
in an environment, where `/proc/PID/environ` would show it, nor in a file) and a session marker
(`SANDBOX_SESSION`) that every process it starts inherits, so `close()` can find and kill them
all, even those orphaned when the server died. Its temp folder records its owner (this
process): the next runtime to start removes it, and the session's processes, if this process
was killed before it could (`leftovers.py`).

Isolation "auto" (the default) is "bwrap" where bubblewrap works and "none", with a warning
(`LocalRuntime.warning`), where it does not. With bwrap the server runs in a bwrap of its own
(its pid namespace hides the app; the system read-only) and starts the agent's shell and kernel
in a nested one (`sandbox/confine.py`) that hides the server too. When this process is root,
the agent's processes there run as a separate unprivileged uid (`agent_user.py`).

Limits (`sandbox/limits.py`): the agent's processes join a cgroup of the session (processes,
memory) where the machine allows; with the agent on its own uid only they do, and the server
stays outside it, so a fork bomb or a memory hog never stops the server. Otherwise the whole
server joins it (a `sh` that writes `cgroup.procs` then execs it). The tmpfs sizes are bwrap's.
`LocalRuntime.limits_in_force` says what holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from sandbox.errors import SandboxError
from sandbox.limits import AgentCgroup, InForce, Limits, events_spec, plan
from sandbox.net_proxy import NetProxy, NetworkMode, network_mode
from sandbox.quarantine import copy_regular
from sandbox.runtimes import leftovers
from sandbox.runtimes.agent_user import agent_user, default_agent_uid, runs_as_own_uid
from sandbox.runtimes.base import ServerRuntime
from sandbox.runtimes.host_guard import HostGuard
from sandbox.runtimes.leftovers import SESSION_ENV, kill, session_processes
from sandbox.runtimes.local_processes import (
    close_quietly,
    descendants,
    is_zombie,
    signal_group,
    start_time,
    wait_exit,
    wait_gone,
    wait_pids_gone,
)

if TYPE_CHECKING:
    from sandbox.client import SandboxClient

READY_PREFIX = b"SANDBOX READY "
# The app's own settings (and those it gives its LLM library) are not the agent's business.
_HIDDEN_PREFIXES = ("LLM_", "WORKBENCH_", "SANDBOX_", "LITELLM_", "EXPERIMENTAL_OPENAI_")
_SECRET_WORDS = ("API_KEY", "APIKEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


class LocalRuntime(ServerRuntime):
    """Runs `python -m sandbox serve` as a child process; restarts it if it dies."""

    name = "local"

    def __init__(
        self,
        workspace: Path | str,
        env: Mapping[str, str] | None = None,
        isolation: Literal["auto", "none", "bwrap"] = "auto",
        network: bool | str = True,
        soft_timeout_s: float | None = None,
        artifacts: Path | None = None,
        startup_timeout_s: float = 30.0,
        disable: Sequence[str] = (),
        warm_up: bool = True,
        read_only: Sequence[str] = (),
        checkpoints: Path | None = None,
        mcp_mounts: Sequence[tuple[str, bool]] | None = None,
        limits: Limits | None = None,
        agent_uid: int = -1,
        home_like: bool = False,
        python_env: Path | None = None,
    ) -> None:
        super().__init__(soft_timeout_s)
        if isolation not in ("auto", "none", "bwrap"):
            raise SandboxError(f"unknown isolation {isolation!r}: use 'auto', 'none' or 'bwrap'")
        self.warning: str | None = None
        """Why the sandbox is less isolated than asked ("auto" without bubblewrap), or None."""
        self.isolation: Literal["none", "bwrap"] = self._resolve(isolation)
        self.network: NetworkMode = network_mode(network)
        """"on", "off" or "allowlist" (only through `net_proxy`, which asks the app)."""
        if self.network == "off" and self.isolation == "none":
            raise SandboxError("network off needs isolation: bubblewrap is not available here")
        self.net_proxy = NetProxy() if self.network == "allowlist" else None
        """The agent's one way out under "allowlist"; the app sets its `decide` and `observe`."""
        if self.net_proxy is not None and self.isolation == "none":
            self.warning = (self.warning + " " if self.warning else "") + (
                "Without isolation the network allowlist is advisory: the agent's HTTP clients "
                "use the proxy, but nothing stops a direct connection."
            )
        self._proxy_port = 0
        self.workspace = Path(workspace).expanduser().resolve()
        self.env = dict(env or {})
        self.startup_timeout_s = startup_timeout_s
        self.disable = tuple(disable)
        self.warm_up = warm_up
        self.checkpoints = checkpoints
        """The workspace's checkpoint store (None: one in the runtime's temporary folder)."""
        self.read_only = tuple(read_only)
        """Folders of the workspace (relative paths) that the agent can read but not change,
        with isolation on, where they exist (the app's own rules)."""
        self.mcp_mounts = None if mcp_mounts is None else tuple(mcp_mounts)
        """Host paths (path, writable) staged for the MCP servers, hidden from the agent
        (None: no sandboxed stdio MCP server, nothing staged); see `sandbox/confine.py`."""
        self.limits = (limits or Limits()).resolved()
        """The session's limits (0: none), applied as far as this machine allows."""
        self.agent_uid = default_agent_uid() if agent_uid < 0 else agent_uid
        """The agent's uid when it runs as its own (bwrap, this process root; 0: as root)."""
        self.own_uid = runs_as_own_uid(self.isolation, self.agent_uid)
        """Whether the agent's processes run as `agent_uid` rather than as this process's uid."""
        self.limits_in_force: InForce | None = None
        """Which limits hold and how (set at start)."""
        self._cgroup: AgentCgroup | None = None
        self.home_like = home_like
        """The workspace is a home folder: its root dotfiles are protected paths too."""
        self.session_id = secrets.token_hex(8)
        self._tmp = Path(tempfile.mkdtemp(prefix=leftovers.LOCAL_PREFIX))
        self.python_env = python_env or self._tmp / "agent-env"
        """The host folder holding the agent's writable Python env (`sandbox/agent_env.py`),
        shown to it at `AGENT_ENV` with bubblewrap (default: one for this session only)."""
        self.quarantine = self._tmp / "quarantine"
        """Where the guard moves what the agent left under protected paths (`protect.py`)."""
        self.host_guard = HostGuard(self.workspace, home_like, self.session_id)
        """The app's own check of the protected paths (`host_guard.py`)."""
        leftovers.record_owner(self._tmp, self.session_id)
        self.sweeper = leftovers.sweep_in_background()
        """Removing what apps that died left (temp folders, containers): a daemon thread."""
        self.artifacts = artifacts or self._tmp / "artifacts"
        self.log_file = self._tmp / "server.log"
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._tree: dict[int, bytes] = {}
        """The server's process tree when it became ready: pid -> start time (pids get reused)."""

    # ------------------------------------------------------------------ ServerRuntime

    async def _launch(self) -> SandboxClient:
        if not self.workspace.is_dir():
            raise SandboxError(f"the workspace {self.workspace} does not exist or is not a folder")
        self.artifacts.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(self.host_guard.check)  # a walk: off the event loop
        await self._start_proxy()
        token = secrets.token_urlsafe(32)
        token_fd = _token_pipe(token)
        command = [sys.executable, "-P", "-m", "sandbox", "serve", "--watch-stdin"]
        command += ["--token-fd", str(token_fd)]
        command += ["--workspace", str(self.workspace), "--artifacts", str(self.artifacts)]
        if self.checkpoints is not None:
            self.checkpoints.mkdir(parents=True, exist_ok=True)
            command += ["--checkpoints", str(self.checkpoints)]
        for name in self.disable:
            command += ["--disable", name]
        command += ["--quarantine", str(self.quarantine)]
        self.python_env.mkdir(mode=0o700, parents=True, exist_ok=True)
        from sandbox.agent_env import AGENT_ENV

        inside = AGENT_ENV if self.isolation == "bwrap" else str(self.python_env)
        command += ["--python-env", inside]
        if self.home_like:
            command.append("--home-like")
        if not self.warm_up:
            command.append("--no-warm-up")
        command = self._limited(command)
        with self.log_file.open("ab") as log:
            try:
                # A Popen (not asyncio's) so liveness is a cheap poll() from any loop.
                proc = subprocess.Popen(  # noqa: ASYNC220
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=self._child_env(),
                    cwd=self.workspace,
                    start_new_session=True,
                    pass_fds=(token_fd,),
                )
            except OSError as exc:
                raise SandboxError(
                    f"cannot start the sandbox server ({command[0]}): {exc}"
                ) from exc
            finally:
                os.close(token_fd)
        self._proc = proc
        # Imported here, not at module import: loading aiohttp overlaps the server's start.
        from sandbox.client import SandboxClient

        assert proc.stdout is not None
        try:
            ready = await _read_ready_line(proc.stdout.fileno(), self.startup_timeout_s)
        finally:
            proc.stdout.close()
        if ready is None:
            await wait_exit(proc, 0.5)  # EOF on stdout usually means it is exiting
            code = proc.poll()
            await self._terminate()
            what = (
                f"exited with code {code} before it was ready"
                if code is not None
                else f"did not start within {self.startup_timeout_s:.0f} s"
            )
            raise SandboxError(
                f"the sandbox server {what}. "
                f"Its log ({self.log_file}) ends with:\n{self._log_tail()}"
            )
        try:
            details = json.loads(ready.removeprefix(READY_PREFIX))
            port = int(details["port"])
        except (ValueError, KeyError, TypeError) as exc:
            await self._terminate()
            raise SandboxError(
                f"the sandbox server sent a malformed READY line: {ready!r}"
            ) from exc
        self.pid = proc.pid
        self._tree = {pid: t for pid in descendants(proc.pid) if (t := start_time(pid))}
        return SandboxClient(f"http://127.0.0.1:{port}", token)

    def _alive(self) -> bool:
        # A killed server whose threads are still exiting is a zombie leader that waitpid
        # does not report yet: it serves nothing, so it counts as dead.
        proc = self._proc
        return proc is not None and proc.poll() is None and not is_zombie(proc.pid)

    async def _terminate(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            # With bwrap, a SIGKILLed server leaves its namespace's init exiting, reparented
            # away (no longer our descendant) while the namespace's processes die.
            family = descendants(proc.pid) | {
                pid for pid, start in self._tree.items() if start_time(pid) == start
            }
            self._tree = {}
            if proc.poll() is None:
                close_quietly(proc.stdin)  # with --watch-stdin the server shuts down at EOF
                signal_group(proc.pid, signal.SIGTERM)
                await wait_exit(proc, timeout_s=3.0)
            signal_group(proc.pid, signal.SIGKILL)
            kill(family)
            await wait_exit(proc, timeout_s=5.0)
            # Processes in bwrap's pid namespaces die as their namespace ends, a moment later.
            await wait_pids_gone(family, timeout_s=2.0)
        kill(session_processes(self.session_id))
        await wait_gone(self.session_id, timeout_s=2.0)
        cgroup, self._cgroup = self._cgroup, None
        if cgroup is not None:
            await asyncio.to_thread(cgroup.remove)

    def _describe_failure(self) -> str:
        return f"The server's log is {self.log_file}."

    async def close(self) -> None:
        """Stop the server and every process of the session, neutralise what the agent left
        under protected paths, then remove the temporary files."""
        await super().close()
        if self.net_proxy is not None:
            await self.net_proxy.close()
        await asyncio.to_thread(self.host_guard.check)  # a walk: off the event loop
        if self.quarantine.is_dir():  # what the server moved away, kept for the person
            with contextlib.suppress(OSError):
                kept = self.host_guard.quarantine
                shutil.copytree(
                    self.quarantine, kept, symlinks=True, dirs_exist_ok=True,
                    copy_function=copy_regular,  # the agent can write there: no FIFO may block
                )  # fmt: skip
        shutil.rmtree(self._tmp, ignore_errors=True)

    # ------------------------------------------------------------------ helpers

    async def _start_proxy(self) -> None:
        """Start the proxy once (it outlives server restarts): on a unix socket bound into
        bwrap, or without isolation on a port of this machine's loopback."""
        if self.net_proxy is None or self._proxy_port or (self._tmp / "net").is_dir():
            return
        if self.isolation == "bwrap":
            folder = self._tmp / "net"
            folder.mkdir(mode=0o755)
            await self.net_proxy.listen_unix(str(folder / "proxy.sock"))
        else:
            self._proxy_port = await self.net_proxy.listen_tcp()

    def _resolve(self, isolation: str) -> Literal["none", "bwrap"]:
        """The isolation to use: "auto" is bwrap where it works, else none with a warning."""
        if isolation == "none":
            return "none"
        from sandbox.runtimes.bwrap import bwrap_available

        why = bwrap_available()
        if why is None:
            return "bwrap"
        if isolation == "bwrap":
            raise SandboxError(f"isolation 'bwrap' is not possible here: {why}")
        self.warning = (
            f"The sandbox is NOT isolated ({why}): the agent's commands run with your "
            "rights and can read your files. Install bubblewrap, or set "
            'sandbox.local.isolation = "none" to accept this.'
        )
        logging.getLogger("sandbox.runtime").warning("%s", self.warning)
        return "none"

    def _child_env(self) -> dict[str, str]:
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(_HIDDEN_PREFIXES)
            and not any(word in name.upper() for word in _SECRET_WORDS)
        }
        env.update(self.env)
        if self._proxy_port:  # no isolation: the clients are told, nothing more
            from sandbox.net_bridge import proxy_env

            env.update(proxy_env(self._proxy_port))
        env[SESSION_ENV] = self.session_id
        if not any(Path(p or ".").resolve() == _PACKAGE_ROOT for p in sys.path[1:]):
            env["PYTHONPATH"] = os.pathsep.join(
                filter(None, [str(_PACKAGE_ROOT), env.get("PYTHONPATH")])
            )
        return env

    def _limited(self, command: list[str]) -> list[str]:
        """`command` (the server's) with the session's cgroup, agent uid and bwrap applied."""
        cgroup, why = AgentCgroup.create(self.session_id, self.limits)
        self._cgroup = cgroup
        bwrap = self.isolation == "bwrap"
        self.limits_in_force = plan(
            self.limits, cgroup, why, self.own_uid, "bwrap tmpfs size" if bwrap else None
        )
        if cgroup is not None and (events := events_spec(cgroup)):
            command += ["--limit-events", events]
        if not bwrap:
            return _joining(cgroup, command)
        command += ["--confine-agent", {"on": "net", "off": "nonet"}.get(self.network, "allowlist")]
        if self.own_uid:
            agent = agent_user(
                self.agent_uid,
                self.workspace,
                [self.artifacts],
                self._tmp,
                join=cgroup.join_files() if cgroup else (),
                nproc=0 if cgroup else self.limits.processes,
            )
            command += ["--agent-uid", agent.to_json()]
            return self._bwrap_prefix(cgroup) + command
        return _joining(cgroup, self._bwrap_prefix(cgroup) + command)

    def _bwrap_prefix(self, cgroup: AgentCgroup | None) -> list[str]:
        from sandbox.runtimes.bwrap import bwrap_command

        readable = [Path(sys.prefix), Path(sys.base_prefix), _PACKAGE_ROOT]
        readable.append(Path(sys.executable).resolve().parent)
        writable = [self._tmp, self.artifacts, *filter(None, [self.checkpoints])]
        if cgroup is not None:  # at their own paths: the server reads memory.events there
            writable += cgroup.dirs.values()
        command = (
            bwrap_command(
                self.workspace,
                writable=writable,
                readable=readable,
                read_only=[
                    *(self.workspace / name for name in self.read_only),
                    *self.host_guard.existing(),
                ],
                pinned=self.host_guard.pinned(),
                tmpfs_size=self.limits.tmpfs,
            )
            + self._mcp_stage()
            + self._python_env_bind()
        )
        if self.net_proxy is not None:
            from sandbox.net_bridge import PROXY_DIR

            command += ["--ro-bind", str(self._tmp / "net"), PROXY_DIR]
        if self.own_uid:  # bwrap makes the folders above a bind 0700: the agent must pass
            for folder in _skeleton([self.workspace, *writable, *readable]):
                command += ["--chmod", "0755", str(folder)]
        return command

    def _python_env_bind(self) -> list[str]:
        """bwrap options showing the agent's Python env at its fixed path, writable. Under
        /run, whose idmapped view the agent gets when it runs as its own uid (`agent_user.py`):
        its files are the folder owner's on the host and the agent's in the sandbox."""
        from sandbox.agent_env import AGENT_ENV

        return ["--bind", str(self.python_env.resolve()), AGENT_ENV]

    def _mcp_stage(self) -> list[str]:
        """bwrap options staging the MCP servers' host paths and cache under `MCP_STAGE`."""
        if self.mcp_mounts is None:
            return []
        from sandbox.confine import MCP_STAGE, stage_name

        cache = self._tmp / "mcp-cache"
        cache.mkdir(mode=0o700, exist_ok=True)
        # Not under the runtime's temp folder as the agent sees it (an empty tmpfs there).
        args = ["--tmpfs", str(cache), "--bind", str(cache), f"{MCP_STAGE}/cache"]
        for path, writable in self.mcp_mounts:
            if os.path.exists(path):
                args += ["--bind" if writable else "--ro-bind", path, stage_name(path, writable)]
        return args

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty)"


# ---------------------------------------------------------------------- processes


def _skeleton(bound: Sequence[Path]) -> list[Path]:
    """The folders bwrap makes above the `bound` ones (not themselves bound nor in one), outer
    first: only the sandbox's own tmpfs skeleton, never a host folder."""
    from sandbox.runtimes.bwrap import SYSTEM_DIRS

    paths = [p.resolve() for p in bound] + [Path(d) for d in SYSTEM_DIRS]
    above = {a for p in paths for a in p.parents if a != Path("/")}
    inside = {a for a in above if any(a.is_relative_to(p) for p in paths)}
    return sorted(above - inside, key=lambda p: len(p.parts))


def _joining(cgroup: AgentCgroup | None, command: list[str]) -> list[str]:
    """`command` started in `cgroup`: a `sh` writes "0" to each `cgroup.procs`, then execs it."""
    if cgroup is None:
        return command
    files = [str(path) for path in cgroup.join_files()]
    script = "set -e; " + " ".join(f'echo 0 > "${i}";' for i in range(1, len(files) + 1))
    return ["/bin/sh", "-c", f'{script} shift {len(files)}; exec "$@"', "sh", *files, *command]


def _token_pipe(token: str) -> int:
    """The read end of a pipe holding `token` (the write end closed): the child reads it once."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, token.encode())  # far below the pipe's buffer: never blocks
    finally:
        os.close(write_fd)
    return read_fd


async def _read_ready_line(fd: int, timeout_s: float) -> bytes | None:
    """The READY line the server prints on `fd`, or None (EOF, timeout or something else)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[bytes | None] = loop.create_future()
    buffer = bytearray()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        buffer.extend(data)
        if b"\n" in buffer or not data:
            line = bytes(buffer).split(b"\n", 1)[0].strip()
            if not done.done():
                done.set_result(line if line.startswith(READY_PREFIX) else None)

    loop.add_reader(fd, readable)
    try:
        return await asyncio.wait_for(done, timeout_s)
    except TimeoutError:
        return None
    finally:
        loop.remove_reader(fd)
