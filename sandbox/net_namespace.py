"""One network namespace for the whole sandbox session (local runtime, network "off" or
"allowlist"): every agent process joins it, so a server the agent starts in the shell answers
the kernel and the browser on 127.0.0.1, as on any machine.

At start-up the sandbox server starts a **holder**: `bwrap --unshare-net --unshare-pid` (the
namespace gets its loopback up) running `python -I -S -c HOLDER`. Under "allowlist" the holder
binds 127.0.0.1:3128 there once and keeps the listening socket for the whole session; a forked
child bridges each connection to the app's proxy on its unix socket (`net_bridge.PROXY_SOCKET`)
and is forked again if it ever ends. Under "off" the holder only holds the namespace.
Each agent process then starts as `nsenter --net=/proc/HOLDER/ns/net bwrap ...` (the nested
bwrap no longer unshares the network). The holder runs as the server's user in a pid namespace
no agent process sees: the agent can neither signal it nor take its port. When the app is not
root, the holder's bwrap makes a user namespace the server owns, so `nsenter` enters that first
(`--user --preserve-credentials`): the kernel wants CAP_SYS_ADMIN over the namespace's owner.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

HOLDER = """\
# sandbox-net-holder
import os, signal, socket, sys, time
if sys.argv[1] == "-":  # "off": loopback only, nothing to bridge
    os.write(1, b"ready\\n")
    while True:
        signal.pause()
path, port = sys.argv[1], int(sys.argv[2])
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", port))
listener.listen(128)
os.write(1, b"ready\\n")
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
def bridge():
    import threading
    def pump(a, b):
        try:
            while True:
                data = a.recv(262144)
                if not data:
                    break
                b.sendall(data)
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass
    def one(conn):
        up = socket.socket(socket.AF_UNIX)
        try:
            up.connect(path)
        except OSError:
            conn.close()
            return
        t = threading.Thread(target=pump, args=(up, conn), daemon=True)
        t.start()
        pump(conn, up)
        t.join()
        conn.close()
        up.close()
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=one, args=(conn,), daemon=True).start()
while True:  # the bridge is forked again if it ever ends; the port stays held here
    child = os.fork()
    if child == 0:
        try:
            bridge()
        finally:
            os._exit(1)
    os.waitpid(child, 0)
    time.sleep(0.2)  # no tight loop if it cannot run
"""
"""Run by `python -I -S -c HOLDER SOCKET PORT` ("-" for SOCKET: hold the namespace only)."""

_holder: subprocess.Popen[bytes] | None = None


def start_holder(bwrap: str, socket_path: str | None, port: int) -> list[str] | str:
    """Start the session's network namespace and its holder (bridging 127.0.0.1:`port` to
    `socket_path`, or nothing when None); the command that makes a program join it, or why not.
    Call from the thread that lives as long as the server (bwrap's --die-with-parent)."""
    starting = spawn_holder(bwrap, socket_path, port)
    return starting if isinstance(starting, str) else starting.ready()


def spawn_holder(bwrap: str, socket_path: str | None, port: int) -> HolderStart | str:
    """`start_holder` in two steps: this one starts the holder's process and returns at once
    (or says why it cannot); `ready()` on the result waits until it holds the namespace, from
    any thread, while the caller goes on. Call this one from the thread that lives as long as
    the server: bwrap's --die-with-parent fires when the thread that started it ends."""
    global _holder
    if _holder is not None:  # enabled again: the old namespace goes with its holder
        _holder.kill()
        _holder.wait()
        _holder = None
    nsenter = shutil.which("nsenter")
    if nsenter is None:
        return "nsenter is not installed (it comes with util-linux)"
    info_read, info_write = os.pipe()
    command = [
        bwrap,
        "--bind", "/", "/",
        "--dev-bind", "/dev", "/dev",
        "--proc", "/proc",
        "--unshare-pid",
        "--unshare-net",
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--info-fd", str(info_write),
        "--",
        sys.executable, "-I", "-S", "-c", HOLDER, socket_path or "-", str(port),
    ]  # fmt: skip
    try:
        holder = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(info_write,),
        )
    except OSError as exc:
        os.close(info_read)
        return f"cannot start the network namespace's holder: {exc}"
    finally:
        os.close(info_write)
    _holder = holder
    return HolderStart(holder, info_read, nsenter)


class HolderStart:
    """A holder whose process was started (`spawn_holder`): `ready()` waits for it."""

    def __init__(self, holder: subprocess.Popen[bytes], info_read: int, nsenter: str) -> None:
        self._holder = holder
        self._info_read = info_read
        self._nsenter = nsenter

    def ready(self) -> list[str] | str:
        """The command that makes a program join the namespace once the holder holds it, or
        why it did not start (the holder then stopped)."""
        holder = self._holder
        assert holder.stdout is not None and holder.stderr is not None
        with os.fdopen(self._info_read, "rb") as info_file:
            info = info_file.read()  # bwrap writes it and closes it before the program starts
        line = holder.stdout.readline()
        if line != b"ready\n":
            _forget(holder)
            why = holder.stderr.read().decode(errors="replace").strip()
            holder.wait()
            return f"the network namespace's holder did not start: {why or line!r}"
        holder.stdout.close()
        holder.stderr.close()
        try:
            pid = int(json.loads(info)["child-pid"])
        except (ValueError, KeyError, TypeError):
            _forget(holder)
            holder.wait()
            return f"bwrap gave no child pid for the network namespace's holder: {info!r}"
        join = [self._nsenter]
        if os.stat(f"/proc/{pid}/ns/user").st_ino != os.stat("/proc/self/ns/user").st_ino:
            join += [f"--user=/proc/{pid}/ns/user", "--preserve-credentials"]
        return [*join, f"--net=/proc/{pid}/ns/net"]


def _forget(holder: subprocess.Popen[bytes]) -> None:
    """Kill a holder that did not start; it is no longer the session's."""
    global _holder
    holder.kill()
    if _holder is holder:
        _holder = None


def holder_alive() -> bool:
    """Whether the namespace's holder still runs (it ends only with the server)."""
    return _holder is not None and _holder.poll() is None
