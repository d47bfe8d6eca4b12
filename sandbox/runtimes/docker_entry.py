"""The Docker sandbox's entry point: become the host user, then exec `python -m sandbox ...`.

The container starts as root so it can give `SANDBOX_USER_ID` (and `SANDBOX_GROUP_ID`) a
passwd entry and a writable HOME; then it drops to that uid for good, so every file the agent
creates in a mounted folder belongs to that host user. Works on any glibc base image with
Python, no `useradd`/`setpriv` needed. Usage (the image's entry point):
`python -m sandbox.runtimes.docker_entry serve --host 0.0.0.0 --port 8000 --workspace /workspace`
"""

from __future__ import annotations

import grp
import os
import pwd
import sys
from pathlib import Path

WORKSPACE = Path("/workspace")
TOKEN_FILE = Path("/.sandbox-token")


def _ensure_group(gid: int) -> None:
    try:
        grp.getgrgid(gid)
    except KeyError:
        with open("/etc/group", "a") as handle:
            handle.write(f"sandbox{gid}:x:{gid}:\n")


def _ensure_user(uid: int, gid: int) -> tuple[str, Path]:
    try:
        entry = pwd.getpwuid(uid)
    except KeyError:
        pass
    else:
        home = Path(entry.pw_dir)
        if home.is_dir() and home.stat().st_uid == uid:
            return entry.pw_name, home
        home = Path(f"/home/sandbox{uid}")
        home.mkdir(parents=True, exist_ok=True)
        os.chown(home, uid, gid)
        return entry.pw_name, home
    name = f"sandbox{uid}" if _name_taken("sandbox") else "sandbox"
    home = Path(f"/home/{name}")
    with open("/etc/passwd", "a") as handle:
        handle.write(f"{name}:x:{uid}:{gid}:workbench sandbox:{home}:/bin/bash\n")
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, uid, gid)
    return name, home


def _name_taken(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _give_workspace(uid: int, gid: int) -> None:
    """Docker creates a missing bind-mount source as root: hand such an empty folder over."""
    try:
        info = WORKSPACE.stat()
        if info.st_uid == 0 and not any(WORKSPACE.iterdir()):
            os.chown(WORKSPACE, uid, gid)
    except OSError:
        pass


def drop_privileges(uid: int, gid: int) -> None:
    """Become `uid:gid` with a passwd entry and an owned HOME (must start as root)."""
    _ensure_group(gid)
    name, home = _ensure_user(uid, gid)
    _give_workspace(uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    os.environ.update(HOME=str(home), USER=name, LOGNAME=name)


def token_argv(argv: list[str]) -> list[str]:
    """`argv` with `--token-fd N` for `serve`: the token from TOKEN_FILE (deleted) or
    SANDBOX_TOKEN (popped), moved into an inherited pipe so the server's exec-time environment,
    which /proc/PID/environ shows, never holds it."""
    token = os.environ.pop("SANDBOX_TOKEN", "")
    try:
        token = TOKEN_FILE.read_text(encoding="utf-8").strip() or token
        TOKEN_FILE.unlink()
    except OSError:
        pass
    if not token or not argv or argv[0] != "serve":
        return argv
    read_fd, write_fd = os.pipe()
    os.write(write_fd, token.encode())
    os.close(write_fd)
    os.set_inheritable(read_fd, True)
    return [argv[0], "--token-fd", str(read_fd), *argv[1:]]


def main(argv: list[str]) -> None:
    """Drop to SANDBOX_USER_ID when asked and running as root, then exec the sandbox CLI."""
    argv = token_argv(argv)  # while still root: the token file is root-only
    uid_text = os.environ.pop("SANDBOX_USER_ID", "")
    gid_text = os.environ.pop("SANDBOX_GROUP_ID", "")
    if uid_text and os.getuid() == 0 and int(uid_text) != 0:
        uid = int(uid_text)
        drop_privileges(uid, int(gid_text) if gid_text else uid)
    elif os.getuid() == 0:
        Path("/root").mkdir(exist_ok=True)
        os.environ.setdefault("HOME", "/root")
    elif not os.access(os.environ.get("HOME") or "/", os.W_OK):
        # Started as a non-root uid with no home (Kubernetes runAsUser): make one in /tmp.
        home = Path(f"/tmp/home-{os.getuid()}")
        home.mkdir(mode=0o700, exist_ok=True)
        os.environ["HOME"] = str(home)
    os.execv(sys.executable, [sys.executable, "-m", "sandbox", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
