"""Where the agent's own processes run: shell, kernel and browser, each in its own pid namespace.

The local runtime with isolation starts the server inside bubblewrap (system read-only, only
the workspace and a private /tmp writable). That alone leaves the agent's shell beside the
server: same uid, same pid namespace, so it could signal the server, and as root (bwrap keeps a
root caller's capabilities) read its memory. So the server runs each agent process through a
second, nested `bwrap`: a new pid namespace (the server, the app and every other process are
invisible, so nothing of theirs can be signalled or read), all capabilities dropped, the file
system view the server already has (`--bind / /`: a bind keeps the read-only mounts beneath),
and optionally no network. The server itself stays outside that namespace: it must see the
processes it kills, and its token never enters the agent's world.

Why nested and not "server outside bwrap, only the shell inside": the editor and the upload
endpoint write files from the server process, so the server's own file system view must be the
confined one too. A nested bwrap costs ~5 ms per process start.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

_prefix: list[str] = []


def enable(network: bool = True, protect: Sequence[Path] = ()) -> str | None:
    """Run agent processes in a nested bwrap from now on; None when it works, otherwise why not.

    `protect`: folders the server writes that the agent may only read (the checkpoint store:
    an agent that rewrote it could make a rewind bring back what it chose)."""
    global _prefix
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed"
    prefix = [
        bwrap,
        "--bind", "/", "/",
        "--dev-bind", "/dev", "/dev",
        "--proc", "/proc",
        "--unshare-pid",
        "--cap-drop", "ALL",
    ]  # fmt: skip
    # No --die-with-parent: its PR_SET_PDEATHSIG fires when the *thread* that forked exits, and
    # the shell is started in a warm-up thread. The server kills the session itself, and if the
    # server dies the outer bwrap's pid namespace ends, taking this nested one with it.
    for folder in protect:
        folder.mkdir(parents=True, exist_ok=True)
        prefix += ["--ro-bind", str(folder), str(folder)]
    if not network:
        prefix.append("--unshare-net")
    try:
        probe = subprocess.run(
            [*prefix, "--", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if probe.returncode != 0:
        return probe.stderr.decode(errors="replace").strip() or f"exit {probe.returncode}"
    _prefix = [*prefix, "--"]
    return None


def enabled() -> bool:
    """Whether agent processes are being confined."""
    return bool(_prefix)


def wrap(argv: list[str]) -> list[str]:
    """`argv` as the command that starts it confined (unchanged when confinement is off)."""
    return [*_prefix, *argv]
