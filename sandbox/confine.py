"""Where the agent's own processes run: apart from the server, so it cannot read or signal it.

Two ways, one per runtime: `enable` (local runtime with bubblewrap: a nested pid namespace) and
`run_agent_as` (Docker runtime: another uid). Both make `wrap` prefix the command that starts
the shell, the kernel or the browser worker.

**Nested bwrap (local).**
The local runtime with isolation starts the server inside bubblewrap (system read-only, only
the workspace and a private /tmp writable). That alone leaves the agent's shell beside the
server: same uid, same pid namespace, so it could signal the server, and as root (bwrap keeps a
root caller's capabilities) read its memory. So the server runs each agent process through a
second, nested `bwrap`: a new pid namespace (the server, the app and every other process are
invisible, so nothing of theirs can be signalled or read), all capabilities dropped, the file
system view the server already has (`--bind / /`: a bind keeps the read-only mounts beneath),
and, under network "off" or "allowlist", the session's one network namespace, which all agent
processes share (`nsenter` first: `sandbox/net_namespace.py`). The server itself stays outside
that pid namespace: it must see the processes it kills, and its token never enters the agent's
world.

Why nested and not "server outside bwrap, only the shell inside": the editor and the upload
endpoint write files from the server process, so the server's own file system view must be the
confined one too. A nested bwrap costs ~5 ms per process start.

**Another uid (Docker).** A default Docker container may not create namespaces (its seccomp
profile refuses `unshare`), so there the server keeps root as its real and saved uid and works
with the agent's uid as its effective one (`setresuid(0, U, 0)`): files it writes (editor,
upload) belong to U like the agent's own, its rights on files are U's, yet a process of uid U
may not signal it (the kernel compares the sender's uids with the target's real and saved uid)
nor read its `/proc/PID/environ`, `mem` or fds (ptrace access needs all of the target's uids to
match). Each agent process starts through `python -I -S -c _DROP U G -- argv`: it sets all
three uids and gids to U and G (allowed without capabilities: each value is one the process
already holds), which clears every capability, sets no-new-privileges (a setuid `su` gains
nothing), then `exec`s. `-I -S`: nothing from the workspace, the environment or site-packages
runs before the drop, while the process could still take root back.

**Its own uid (local, app running as root).** Without a user namespace of its own, a nested
bwrap as root leaves the agent uid 0: with capabilities dropped it still reads every file root
owns (`/etc/shadow`: the owner check passes), and mapping uid 0 to another uid inside a user
namespace does not change that (the kernel's uid stays 0). So with `enable(agent=AgentUser(...))`
the server makes, once, an **idmapped mount** of each place the agent writes (the workspace,
/tmp with its HOME, /run, /dev/shm) whose user namespace maps the folder's owner to the agent's
uid (so what the agent creates there belongs to that owner on the host, and the folder's files
are the agent's to change), and each nested bwrap binds those over the real folders, shows a
passwd entry, joins the session's cgroups (`sandbox/limits.py`) and ends in `setpriv`, which
sets all uids and gids to the agent's (no capabilities left) and no-new-privileges before it
`exec`s (`sandbox/agent_uid.py`). Everything else is read with the rights of an unprivileged
uid.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.agent_uid import AgentUser, agent_parts

if TYPE_CHECKING:
    from sandbox.net_namespace import HolderStart

_prefix: list[str] = []
_agent: AgentUser | None = None
"""The agent's own uid on the local runtime (None: the server's, or another runtime)."""

MCP_STAGE = "/run/sandbox-mcp"
"""Where the local runtime stages host paths for MCP servers (`mcp_prefix`); hidden from the
agent's processes by an empty tmpfs."""

_DROP = """\
import os, sys
uid, gid = int(sys.argv[1]), int(sys.argv[2])
os.setresgid(gid, gid, gid)
os.setresuid(uid, uid, uid)
if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or os.getgroups():
    sys.exit("sandbox: could not drop to the agent's uid")
import ctypes
if ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0) != 0:
    sys.exit("sandbox: could not set no_new_privs")
os.execvp(sys.argv[4], sys.argv[4:])
"""
"""Run by `python -I -S -c`: become uid:gid for good (PR_SET_NO_NEW_PRIVS is 38), exec argv."""


def enable(
    network: bool | str = True, protect: Sequence[Path] = (), agent: AgentUser | None = None
) -> str | None:
    """Run agent processes in a nested bwrap from now on; None when it works, otherwise why not.

    `protect`: folders the server writes that the agent may only read (the checkpoint store:
    an agent that rewrote it could make a rewind bring back what it chose). `agent`: run them as
    that unprivileged uid (the server must be root); None: as the server's uid with no
    capabilities."""
    return begin(network, protect, agent).wait()


class Enabling:
    """`enable` under way (`begin`): the rest runs in a thread; `wait()` gives its answer."""

    def __init__(self, finish: Callable[[], str | None] | None, why: str | None = None) -> None:
        self._why = why
        self._thread: threading.Thread | None = None
        if finish is not None:
            self._thread = threading.Thread(
                target=self._run, args=(finish,), name="confine", daemon=True
            )
            self._thread.start()

    def _run(self, finish: Callable[[], str | None]) -> None:
        try:
            self._why = finish()
        except Exception as exc:  # reported by wait(), never lost in the thread
            self._why = f"setting up the agent's confinement failed: {type(exc).__name__}: {exc}"

    def wait(self) -> str | None:
        """None once agent processes are confined (`enabled()`), otherwise why they cannot be."""
        if self._thread is not None:
            self._thread.join()
        return self._why


def begin(
    network: bool | str = True, protect: Sequence[Path] = (), agent: AgentUser | None = None
) -> Enabling:
    """`enable`, begun: the network namespace's holder and the agent's mounts are started
    here, in this thread (the holder's bwrap dies with the thread that started it: call from
    the one that lives as long as the server); waiting for the holder and the probe that tries
    the whole prefix happen in a thread meanwhile, so the server's imports go on. Nothing of
    the agent may start before `wait()` returned None."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return Enabling(None, "bwrap is not installed")
    prefix = [
        bwrap,
        "--bind", "/", "/",
        "--dev-bind", "/dev", "/dev",
        "--proc", "/proc",
        "--unshare-pid",
    ]  # fmt: skip
    mode = ("on" if network else "off") if isinstance(network, bool) else network
    holder: HolderStart | None = None
    if mode in ("off", "allowlist"):  # one namespace for the session (sandbox/net_namespace.py)
        from sandbox.net_bridge import PROXY_PORT, PROXY_SOCKET, proxy_env
        from sandbox.net_namespace import spawn_holder

        bridged = PROXY_SOCKET if mode == "allowlist" else None
        spawned = spawn_holder(bwrap, bridged, PROXY_PORT)  # starts while the rest goes on
        if isinstance(spawned, str):
            return Enabling(None, spawned)
        holder = spawned
    tail: list[str] = []
    if agent is None:
        prefix += ["--cap-drop", "ALL"]
    else:  # bwrap keeps root's capabilities for the tail, which drops them all
        parts = agent_parts(agent)
        if isinstance(parts, str):
            return Enabling(None, parts)
        prefix += parts[0]
        tail = parts[1]
    # No --die-with-parent: its PR_SET_PDEATHSIG fires when the *thread* that forked exits, and
    # the shell is started in a warm-up thread. The server kills the session itself, and if the
    # server dies the outer bwrap's pid namespace ends, taking this nested one with it.
    for folder in protect:
        folder.mkdir(parents=True, exist_ok=True)
        prefix += ["--ro-bind", str(folder), str(folder)]
    if mode == "allowlist":
        for name, value in proxy_env().items():
            prefix += ["--setenv", name, value]
    # The host paths staged for MCP servers (and their caches) are theirs, not the agent's.
    if Path(MCP_STAGE).is_dir():
        prefix += ["--tmpfs", MCP_STAGE]
    return Enabling(lambda: _finish(holder, [*prefix, "--", *tail], agent))


def _finish(holder: HolderStart | None, prefix: list[str], agent: AgentUser | None) -> str | None:
    """The end of `begin`: join the holder's namespace once it holds it, then try the prefix."""
    global _prefix, _agent
    if holder is not None:
        joined = holder.ready()
        if isinstance(joined, str):
            return joined
        prefix = [*joined, *prefix]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if probe.returncode != 0:
        return probe.stderr.decode(errors="replace").strip() or f"exit {probe.returncode}"
    _prefix = prefix
    _agent = agent
    return None


def writable_source(path: str) -> str:
    """Where to bind `path` from for an agent process that must write it: itself, or, when the
    agent runs as its own uid, an idmapped clone of it (its owner shown as the agent, as for
    the workspace), so what is written there still belongs to the folder's owner."""
    if _agent is None:
        return path
    from sandbox import idmap

    owner = os.stat(path)
    place = tempfile.mkdtemp(prefix="wb-mcp-writable-")
    [(tree, _)] = idmap.idmap_clones([(path, owner.st_uid, owner.st_gid)], (_agent.uid, _agent.gid))
    idmap.attach(tree, place)
    return place


def run_agent_as(uid: int, gid: int) -> str | None:
    """From now on serve as effective uid:gid (real and saved uid root) and start agent
    processes as uid:gid; None when done, otherwise why not (must be called as root)."""
    global _prefix
    if sys.platform != "linux":
        return "a separate agent uid needs Linux"
    if uid <= 0 or gid < 0:
        return f"the agent's uid must not be root (got {uid}:{gid})"
    if os.getresuid() != (0, 0, 0):
        return "the server must start as root to run the agent under another uid"
    os.setgroups([])
    os.setresgid(0, gid, 0)
    os.setresuid(0, uid, 0)
    _prefix = [sys.executable, "-I", "-S", "-c", _DROP, str(uid), str(gid), "--"]
    return None


def enabled() -> bool:
    """Whether agent processes are being confined."""
    return bool(_prefix)


def wrap(argv: list[str]) -> list[str]:
    """`argv` as the command that starts it confined (unchanged when confinement is off)."""
    return [*_prefix, *argv]


def stage_name(path: str, writable: bool) -> str:
    """Where the local runtime stages host `path` for MCP servers (under `MCP_STAGE`)."""
    digest = hashlib.sha256(f"{int(writable)}:{path}".encode()).hexdigest()[:16]
    return f"{MCP_STAGE}/{digest}"


def mcp_prefix(binds: Sequence[tuple[str, str, bool]]) -> list[str] | None:
    """The prefix that starts one MCP server confined like the agent, plus `binds` (source as
    the server sees it, target, writable) that this server alone sees; None when the
    confinement cannot add binds (another uid on Docker, or none: then all is visible)."""
    if not any(Path(part).name == "bwrap" for part in _prefix[:4]):
        return None
    # The agent's own prefix, with this server's options added before its first `--` (what
    # follows that runs inside, as for the agent). It already hides MCP_STAGE when there is
    # one: the binds below take their sources from outside that (bwrap binds from the old
    # root), and no other server's files are seen.
    split = _prefix.index("--")
    args, tail = _prefix[:split], _prefix[split:]
    masked: list[str] = []
    for _source, target, _writable in binds:
        # The first missing folder above a target becomes a tmpfs of this server's alone, so
        # the folders bwrap creates for it do not appear in the agent's (shared) root.
        missing = _first_missing(Path(target))
        if missing is not None and not any(_inside(missing, m) for m in masked):
            masked.append(str(missing))
            args += ["--tmpfs", str(missing)]
    made: set[str] = set()
    for source, target, writable in binds:
        args += ["--bind" if writable else "--ro-bind", source, target]
        made |= {
            str(p)
            for p in Path(target).parents
            if any(_inside(p, m) for m in masked) or p.is_relative_to(MCP_STAGE)
        }
    # bwrap makes those folders 0700: a server running as the agent's own uid must pass.
    for folder in sorted(made, key=len):
        args += ["--chmod", "0755", folder]
    return [*args, *tail]


def _first_missing(path: Path) -> Path | None:
    """The outermost folder above `path` that does not exist here (None: they all do)."""
    for parent in reversed(path.parents):
        if not parent.exists():
            return parent
    return None


def _inside(path: Path, folder: str) -> bool:
    return path == Path(folder) or path.is_relative_to(folder)
