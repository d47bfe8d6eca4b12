"""What an app that died leaves behind, and removing it at the next start of any runtime.

Every runtime records its owner, the app process, by pid and start time (pids get reused): the
local runtime in an `owner.json` in its `sandbox-local-*` temp folder, the Docker runtime in
its container's `workbench.sandbox.owner` label. A SIGKILLed app cannot clean up, so whichever
runtime starts next removes the folders and the (not kept-alive) containers whose owner is
dead, and kills the processes of such a local session that are still running. An owner on
another host or in another pid namespace cannot be checked: its container is removed only once
it has stopped.

Docker is reached here with the standard library (a unix socket, two endpoints), not the
docker SDK: the local runtime's start must stay fast, and it runs in a background thread.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import shutil
import signal
import socket
import stat
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from pathlib import Path

LOCAL_PREFIX = "sandbox-local-"
OWNER_FILE = "owner.json"
MAX_OWNER_BYTES = 4096
SWEEP_BUDGET_S = 2.0
"""At most this long scanning temp folders at a start; what is left waits for the next."""
SESSION_ENV = "SANDBOX_SESSION"
"""The local runtime's marker: every process of a session has it in its environment."""
CONTAINER_LABEL = "workbench.sandbox"
"""Every sandbox container carries it; `<label>.owner` and `<label>.keep_alive` beside it."""

log = logging.getLogger("sandbox.leftovers")


def start_time(pid: int) -> str | None:
    """A process's start time (clock ticks after boot) as text, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def owner_alive(pid: int, started: str) -> bool:
    """Whether process `pid` is still the one that started at `started` (a zombie is dead)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except OSError:
        return False
    return len(fields) > 19 and fields[0] != b"Z" and fields[19].decode() == started


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def owner_label() -> str:
    """This process as a container label: host, pid namespace, pid and start time. The
    namespace matters: a container on the host's network shares its host name, not its pids."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{_pid_namespace()}:{pid}:{start_time(pid) or 0}"


def label_owner_dead(label: str) -> bool | None:
    """Whether the owner a label names is dead; None when it cannot be told from here."""
    parts = label.split(":")
    if len(parts) == 3:  # written before start times were recorded: host:namespace:pid
        parts.append("")
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    host, namespace, pid, started = parts
    if (host, namespace) != (socket.gethostname(), str(_pid_namespace())):
        return None
    if not started:
        return start_time(int(pid)) is None
    return not owner_alive(int(pid), started)


def container_is_leftover(labels: Mapping[str, str], state: str) -> bool:
    """Whether a sandbox container (by its labels and state) belongs to no live session."""
    if labels.get(f"{CONTAINER_LABEL}.keep_alive") == "1":
        return False
    dead = label_owner_dead(labels.get(f"{CONTAINER_LABEL}.owner", ""))
    if dead is None:
        return state in ("exited", "dead")
    return dead


# ---------------------------------------------------------------------- local sessions


def session_processes(session_id: str) -> set[int]:
    """Processes whose environment carries this session's marker (orphans included)."""
    marker = f"{SESSION_ENV}={session_id}".encode()
    me = os.getpid()
    found: set[int] = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as environ:
                if marker in environ.read().split(b"\0"):
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def kill(pids: Iterable[int]) -> None:
    """SIGKILL each pid that still exists."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def record_owner(folder: Path, session: str) -> None:
    """Write who owns `folder` (this process) and the session its processes carry."""
    pid = os.getpid()
    record = {"pid": pid, "start": start_time(pid), "session": session}
    partial = folder / f".{OWNER_FILE}.tmp"
    partial.write_text(json.dumps(record))
    os.replace(partial, folder / OWNER_FILE)


def read_owner(folder: str) -> tuple[int, str, str] | None:
    """The owner record (pid, start time, session) in `folder`, or None when there is none.

    Anyone who can write the folder can plant something there: only a small regular file is
    read, opened without blocking or following a symlink (a FIFO once hung every start)."""
    path = os.path.join(folder, OWNER_FILE)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_OWNER_BYTES:
            return None
        record = json.loads(os.read(fd, MAX_OWNER_BYTES))
        return int(record["pid"]), str(record["start"]), str(record["session"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(fd)


def sweep_folders(root: Path | None = None, budget_s: float = SWEEP_BUDGET_S) -> list[Path]:
    """Remove the `sandbox-local-*` folders whose owner is dead, after killing their session's
    processes; the folders removed. Those without an owner record (being made) stay. Stops
    after `budget_s` seconds (the rest waits for the next start): a start never waits long."""
    removed: list[Path] = []
    root = root or Path(tempfile.gettempdir())
    deadline = time.monotonic() + budget_s
    with contextlib.suppress(OSError), os.scandir(root) as entries:
        for entry in entries:
            if time.monotonic() > deadline:
                log.info("left the rest of %s for the next sweep (over %.1f s)", root, budget_s)
                break
            if not entry.name.startswith(LOCAL_PREFIX) or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue  # another user's: its record could name one of our live sessions
            record = read_owner(entry.path)
            if record is None or owner_alive(record[0], record[1]):
                continue
            if record[2]:
                kill(session_processes(record[2]))
            shutil.rmtree(entry.path, ignore_errors=True)
            log.info("removed %s, left by a workbench that died", entry.path)
            removed.append(Path(entry.path))
    return removed


# ---------------------------------------------------------------------- containers


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def _docker_socket() -> str | None:
    host = os.environ.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return None  # a remote engine: the Docker runtime's own sweep covers it
    path = host.removeprefix("unix://") or "/var/run/docker.sock"
    return path if os.path.exists(path) else None


def _docker(path: str, method: str, url: str, timeout: float = 5.0) -> bytes:
    connection = _UnixConnection(path, timeout)
    try:
        connection.request(method, url)
        response = connection.getresponse()
        body = response.read()
        if response.status >= 400 and response.status != 404:
            raise OSError(f"Docker answered {response.status} to {method} {url}")
        return body
    finally:
        connection.close()


def sweep_containers() -> list[str]:
    """Remove the sandbox containers left by dead apps through the local Docker socket (none
    when there is no engine); the names removed."""
    path = _docker_socket()
    if path is None:
        return []
    filters = urllib.parse.quote(json.dumps({"label": [CONTAINER_LABEL]}))
    try:
        found = json.loads(_docker(path, "GET", f"/containers/json?all=1&filters={filters}"))
    except (OSError, ValueError):
        return []
    removed: list[str] = []
    for container in found if isinstance(found, list) else []:
        labels = container.get("Labels") or {}
        if container_is_leftover(labels, str(container.get("State", ""))):
            name = str((container.get("Names") or [container.get("Id", "")])[0]).lstrip("/")
            with contextlib.suppress(OSError):
                _docker(path, "DELETE", f"/containers/{container['Id']}?force=1&v=1")
                log.info("removed the container %s, left by a workbench that died", name)
                removed.append(name)
    return removed


def sweep_in_background() -> threading.Thread:
    """Remove dead apps' temp folders and containers in a daemon thread (started, returned)."""

    def sweep() -> None:
        sweep_folders()
        sweep_containers()

    thread = threading.Thread(target=sweep, name="sandbox-leftovers", daemon=True)
    thread.start()
    return thread
