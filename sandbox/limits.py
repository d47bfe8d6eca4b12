"""Per-session resource limits (processes, memory, tmpfs sizes) and how this machine applies them.

`Limits` is the data (0 means "no limit"); `AgentCgroup.create` makes the session's control
group where the machine lets us: a delegated cgroup v2 subtree with the `pids` and `memory`
controllers, else cgroup v1 hierarchies we may write (root on most machines). The agent's
processes join it (`join_files`: writing "0" to a `cgroup.procs` moves the writer), so a fork
bomb or a memory hog stops at the session's limit while the sandbox server, outside the group,
keeps answering. Where no cgroup can be made, an agent with its own uid gets `RLIMIT_NPROC`
(per real uid, so meaningful only then); memory is then not limited (`RLIMIT_AS` breaks
browsers and JITs that reserve address space). tmpfs sizes are mount options, applied by the
runtime (`bwrap --size`, Docker `--tmpfs size=`). `InForce` says what holds and how, in one line
for the TUI, `--help` and the session log.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

GIB = 1 << 30
DEFAULT_PROCESSES = 1024
DEFAULT_TMPFS = GIB
MAX_DEFAULT_MEMORY = 8 * GIB
CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "workbench-"
"""Name prefix of the session groups, `workbench-<app pid>-<session>`: those of apps that died
are removed at the next start."""
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": GIB, "t": 1 << 40}


def parse_size(text: str | int) -> int:
    """Bytes from "8g", "512m", "1024" or an int (0: no limit); ValueError saying what is wrong."""
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"a size must not be negative, not {text}")
        return text
    match = re.fullmatch(r"\s*(\d+)\s*([bkmgt]?)i?b?\s*", text.lower())
    if match is None:
        raise ValueError(f"not a size: {text!r} (use e.g. 512m, 8g or 0 for no limit)")
    return int(match[1]) * _UNITS[match[2]]


def format_size(size: int) -> str:
    """`size` bytes for a person: "8 GiB", "512 MiB", "1000 B"."""
    for unit, name in ((1 << 40, "TiB"), (GIB, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= unit and size % unit == 0:
            return f"{size // unit} {name}"
    if size >= GIB:
        return f"{size / GIB:.1f} GiB"
    return f"{size} B"


def default_memory() -> int:
    """Half the machine's RAM, at most 8 GiB."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return MAX_DEFAULT_MEMORY
    return min(total // 2, MAX_DEFAULT_MEMORY)


@dataclass(frozen=True)
class Limits:
    """A session's limits; 0 turns one off. `memory` -1: the default (half the RAM, <= 8 GiB)."""

    processes: int = DEFAULT_PROCESSES
    memory: int = -1
    tmpfs: int = DEFAULT_TMPFS
    """The size of each of /tmp, /run and /dev/shm in the sandbox."""

    def resolved(self) -> Limits:
        """These limits with the default memory filled in."""
        memory = default_memory() if self.memory < 0 else self.memory
        return Limits(self.processes, memory, self.tmpfs)


@dataclass
class AgentCgroup:
    """The control group(s) a session's agent processes join: one per v1 hierarchy, or one v2."""

    version: Literal[1, 2]
    dirs: dict[str, Path]
    """Controller ("pids", "memory"; "unified" for v2) -> the session's folder."""
    limits: Limits

    @classmethod
    def create(cls, session: str, limits: Limits) -> tuple[AgentCgroup | None, str]:
        """The session's group with `limits` set, or None and why it cannot be made here."""
        name = f"{os.getpid()}-{session}"
        wanted = [c for c, on in (("pids", limits.processes), ("memory", limits.memory)) if on]
        if not wanted:
            return None, "no process or memory limit asked"
        v2, why2 = _v2_parent(wanted)
        if v2 is not None:
            group = cls(2, {"unified": v2 / (PREFIX + name)}, limits)
        else:
            v1, why1 = _v1_parents(wanted)
            if v1 is None:
                return None, f"{why2}; {why1}"
            group = cls(1, {c: parent / (PREFIX + name) for c, parent in v1.items()}, limits)
        try:
            group._make()
        except OSError as exc:
            group.remove()
            return None, f"cannot set up cgroup v{group.version}: {exc}"
        return group, ""

    def _make(self) -> None:
        for folder in self.dirs.values():
            _sweep(folder.parent)
            folder.mkdir(mode=0o755)
        processes, memory = self.limits.processes, self.limits.memory
        if self.version == 2:
            folder = self.dirs["unified"]
            if processes:
                (folder / "pids.max").write_text(str(processes))
            if memory:
                (folder / "memory.max").write_text(str(memory))
                with contextlib.suppress(OSError):  # no swap for a hog to spill into
                    (folder / "memory.swap.max").write_text("0")
            return
        if processes:
            (self.dirs["pids"] / "pids.max").write_text(str(processes))
        if memory:
            (self.dirs["memory"] / "memory.limit_in_bytes").write_text(str(memory))

    @property
    def how(self) -> str:
        """ "cgroup v1" or "cgroup v2"."""
        return f"cgroup v{self.version}"

    def join_files(self) -> list[Path]:
        """The `cgroup.procs` files a process writes "0" to, to join the group."""
        return [folder / "cgroup.procs" for folder in self.dirs.values()]

    def join(self, pid: int = 0) -> None:
        """Move process `pid` (0: this one) into the group."""
        for procs in self.join_files():
            procs.write_text(str(pid))

    def events_file(self) -> Path | None:
        """The file whose `oom_kill N` line counts the group's OOM kills."""
        if self.version == 2:
            return self.dirs["unified"] / "memory.events"
        memory = self.dirs.get("memory")
        return memory / "memory.oom_control" if memory else None

    def oom_kills(self) -> int:
        """How many processes the kernel killed for the group's memory limit so far."""
        events = self.events_file()
        return oom_kills_in(events) if events else 0

    def processes(self) -> set[int]:
        """The pids in the group (as this process sees them)."""
        found: set[int] = set()
        for procs in self.join_files():
            with contextlib.suppress(OSError, ValueError):
                found |= {int(line) for line in procs.read_text().split()}
        return found

    def remove(self, timeout_s: float = 2.0) -> None:
        """Kill what is left in the group, then remove its folders (best effort)."""
        deadline = time.monotonic() + timeout_s
        while (left := self.processes()) and time.monotonic() < deadline:
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        for folder in self.dirs.values():
            while folder.exists():
                try:
                    folder.rmdir()
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.01)


@dataclass(frozen=True)
class InForce:
    """Which limits hold for a session and how, said in one line."""

    limits: Limits
    processes: str = "not limited"
    memory: str = "not limited"
    tmpfs: str = "not limited"

    def line(self) -> str:
        """E.g. "limits: 1024 processes (cgroup v1), memory 8 GiB (cgroup v1), tmpfs 1 GiB each"."""
        return f"limits: {self.processes}, {self.memory}, {self.tmpfs}"


def plan(
    limits: Limits,
    cgroup: AgentCgroup | None,
    why_not: str,
    own_uid: bool,
    tmpfs_by: str | None,
) -> InForce:
    """What holds given the cgroup made (or why not), whether the agent has its own uid (then
    `RLIMIT_NPROC` stands in for a pids cgroup) and what sizes the tmpfs (None: nothing)."""
    limits = limits.resolved()
    if limits.processes:
        if cgroup is not None:
            processes = f"{limits.processes} processes ({cgroup.how})"
        elif own_uid:
            processes = f"{limits.processes} processes (RLIMIT_NPROC of the agent's uid)"
        else:
            processes = f"processes not limited ({why_not})"
    else:
        processes = "processes not limited (off)"
    if limits.memory:
        memory = (
            f"memory {format_size(limits.memory)} ({cgroup.how})"
            if cgroup is not None
            else f"memory not limited ({why_not})"
        )
    else:
        memory = "memory not limited (off)"
    if not limits.tmpfs:
        tmpfs = "tmpfs not limited (off)"
    elif tmpfs_by is None:
        tmpfs = "tmpfs not limited (no private /tmp without isolation)"
    else:
        tmpfs = f"/tmp, /run, /dev/shm {format_size(limits.tmpfs)} each ({tmpfs_by})"
    return InForce(limits, processes, memory, tmpfs)


def docker_in_force(limits: Limits, memory: str | None) -> InForce:
    """What holds in a Docker sandbox with `limits` and the container's `memory` limit."""
    size = parse_size(memory) if memory else 0
    return InForce(
        limits,
        f"{limits.processes} processes (Docker pids limit)"
        if limits.processes
        else "processes not limited (off)",
        f"memory {format_size(size)} (Docker memory limit)" if size else "memory not limited",
        f"/tmp, /run, /dev/shm {format_size(limits.tmpfs)} each (Docker tmpfs)"
        if limits.tmpfs
        else "tmpfs not limited (off)",
    )


def docker_options(limits: Limits) -> dict[str, object]:
    """`containers.create` options for the processes limit and the tmpfs sizes."""
    options: dict[str, object] = {}
    if limits.processes:
        options["pids_limit"] = limits.processes
    if limits.tmpfs:
        # exec: pip builds and test runners run programs from /tmp
        tmpfs = f"rw,exec,nosuid,nodev,mode=1777,size={limits.tmpfs}"
        options |= {"tmpfs": {"/tmp": tmpfs, "/run": tmpfs}, "shm_size": limits.tmpfs}
    return options


def describe_machine() -> str:
    """How limits would be applied on this machine (no side effects), for `--help`."""
    v2, why2 = _v2_parent(["pids", "memory"])
    if v2 is not None:
        return f"cgroup v2 (delegated subtree {v2})"
    v1, why1 = _v1_parents(["pids", "memory"])
    if v1 is not None:
        return "cgroup v1 (" + ", ".join(f"{c} under {p}" for c, p in v1.items()) + ")"
    return f"no writable cgroup ({why2}; {why1}): RLIMIT_NPROC for a separate agent uid only"


def oom_kills_in(events: Path) -> int:
    """The `oom_kill N` count of a `memory.events` (v2) or `memory.oom_control` (v1) file."""
    return _count_in(events, "oom_kill")


# ---------------------------------------------------------------------- finding the hierarchies


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per v1 controller, and "" -> its v2 path."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                found[controller] = path
    return found


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fstype, _, options = [*right.split(), "", "", ""][:3]
            if fstype in ("cgroup", "cgroup2"):
                point = left.split()[4].replace("\\040", " ")
                found.append((point, fstype, set(options.split(","))))
    return found


def _v2_parent(wanted: list[str]) -> tuple[Path | None, str]:
    """Our own v2 group when we may make children with `wanted` controllers, or why not."""
    points = [p for p, kind, _ in _mounts() if kind == "cgroup2"]
    if not points:
        return None, "no cgroup v2 mount"
    own = _own_cgroups().get("")
    if own is None:
        return None, "not in a cgroup v2 group"
    folder = Path(points[0]) / own.lstrip("/")
    try:
        enabled = set((folder / "cgroup.subtree_control").read_text().split())
    except OSError:
        enabled = set()
    missing = [c for c in wanted if c not in enabled]
    if missing:
        return None, f"cgroup v2 at {points[0]} delegates no {'/'.join(missing)} controller"
    if not os.access(folder, os.W_OK):
        return None, f"cgroup v2 group {folder} is not writable"
    return folder, ""


def _v1_parents(wanted: list[str]) -> tuple[dict[str, Path] | None, str]:
    """Our own group in each v1 hierarchy of `wanted` when writable, or why not."""
    own = _own_cgroups()
    parents: dict[str, Path] = {}
    for controller in wanted:
        point = next((p for p, kind, o in _mounts() if kind == "cgroup" and controller in o), None)
        if point is None or controller not in own:
            return None, f"no cgroup v1 {controller} hierarchy"
        folder = Path(point) / own[controller].lstrip("/")
        if not os.access(folder, os.W_OK):
            return None, f"cgroup v1 {controller} group {folder} is not writable"
        parents[controller] = folder
    return parents, ""


def _sweep(parent: Path) -> None:
    """Remove the session groups that apps which died left under `parent`."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            owner = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if entry.name.startswith(PREFIX) and owner.isdigit() and not pid_alive(int(owner)):
                AgentCgroup(1, {"left": entry}, Limits()).remove(timeout_s=0.5)


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists (one of another uid counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------- inside the server

_watched: dict[str, tuple[int, Path]] = {}
""""memory" / "pids" -> (the limit, the agent group's events file), set by the server."""


def watch(kind: str, limit: int, events: Path) -> None:
    """Report the agent reaching `limit` of `kind` ("memory", "pids"), counted in `events`
    (the server's `--limit-events`)."""
    _watched[kind] = (limit, events)


def events_spec(group: AgentCgroup) -> str:
    """`--limit-events` for the server: "kind:limit:path" joined by commas."""
    found = []
    if group.limits.memory and (memory := group.events_file()):
        found.append(f"memory:{group.limits.memory}:{memory}")
    if group.limits.processes:
        folder = group.dirs.get("pids") or group.dirs["unified"]
        found.append(f"pids:{group.limits.processes}:{folder / 'pids.events'}")
    return ",".join(found)


def watch_spec(spec: str) -> None:
    """Watch what `events_spec` wrote."""
    for part in filter(None, spec.split(",")):
        kind, limit, path = part.split(":", 2)
        watch(kind, int(limit), Path(path))


def counts() -> tuple[int, int]:
    """The agent's OOM kills and refused forks so far (0 for what is not watched)."""
    memory, pids = _watched.get("memory"), _watched.get("pids")
    return (
        _count_in(memory[1], "oom_kill") if memory else 0,
        _count_in(pids[1], "max") if pids else 0,
    )


def limit_note(since: tuple[int, int]) -> str | None:
    """What the agent should know when a limit was reached since `counts()` was `since`."""
    now, notes = counts(), []
    if now[0] > since[0]:
        notes.append(
            f"killed: memory limit {format_size(_watched['memory'][0])} reached (the kernel "
            "ended the process using the most memory; use less, or ask the person to raise "
            "sandbox.limits.memory)."
        )
    if now[1] > since[1]:
        notes.append(
            f"process limit reached: the sandbox allows {_watched['pids'][0]} processes and "
            f"{now[1] - since[1]} could not start (end the ones you no longer need, e.g. "
            "`kill -9 -1` ends all yours and the shell restarts)."
        )
    return " ".join(notes) or None


def _count_in(events: Path, key: str) -> int:
    try:
        text = events.read_text()
    except OSError:
        return 0
    match = re.search(rf"^{key} (\d+)$", text, re.MULTILINE)
    return int(match[1]) if match else 0


def help_text() -> str:
    """The limits section of `workbench --help`: the defaults and how this machine applies them."""
    return (
        f"  per session ([sandbox.limits]): {DEFAULT_PROCESSES} processes, memory half the RAM "
        f"up to 8 GiB (here {format_size(default_memory())}),\n"
        f"  /tmp, /run, /dev/shm {format_size(DEFAULT_TMPFS)} each; workspace writes unlimited.\n"
        f"  Here: {describe_machine()}.\n"
    )
