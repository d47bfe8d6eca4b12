"""The Docker sandbox's entry point: set up the agent's user, then exec `python -m sandbox ...`.

The container starts as root so it can give the agent's uid (`SANDBOX_USER_ID`, and
`SANDBOX_GROUP_ID`) a passwd entry and a writable HOME. `SANDBOX_USER_ID=workspace` means the
owner of /workspace (the runtime sends it when the app runs as root and no uid was configured).
For a non-root agent uid, the server is started as root with `--agent-user UID:GID`: it then
works with that uid as its effective one, keeping root as its real and saved uid, and runs the
shell, kernel and browser fully as that uid (`sandbox/confine.py`). So every file the agent or
the editor creates in a mounted folder belongs to that uid on the host, and the agent can
neither signal the server nor read its memory or environment. An agent uid of 0 runs everything
as root, which leaves the server open to the agent: a warning says so. Works on any glibc base
image with Python, no `useradd`/`setpriv` needed. Usage (the image's entry point):
`python -P -m sandbox.runtimes.docker_entry serve --host 0.0.0.0 --port 8000 --workspace /workspace`
"""

from __future__ import annotations

import grp
import os
import pwd
import sys
from pathlib import Path

WORKSPACE = Path("/workspace")
TOKEN_FILE = Path("/.sandbox-token")
ROOT_AGENT_WARNING = (
    "WARNING: the agent runs as root in this container and can signal the sandbox server; "
    "set SANDBOX_USER_ID to a non-root uid to keep it apart."
)
"""Printed on stderr when the agent is root; the runtime looks for it in the logs."""


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


def prepare_user(uid: int, gid: int) -> None:
    """Give `uid:gid` a passwd entry, an owned HOME (in HOME, USER, LOGNAME) and an empty
    workspace Docker made as root (must run as root)."""
    _ensure_group(gid)
    name, home = _ensure_user(uid, gid)
    _give_workspace(uid, gid)
    os.environ.update(HOME=str(home), USER=name, LOGNAME=name)


def drop_privileges(uid: int, gid: int) -> None:
    """Become `uid:gid` for good, set up by `prepare_user` (must start as root)."""
    prepare_user(uid, gid)
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)


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


def agent_ids(uid_text: str, gid_text: str) -> tuple[int, int] | None:
    """The agent's uid and gid from SANDBOX_USER_ID / SANDBOX_GROUP_ID; None when unset."""
    if not uid_text:
        return None
    if uid_text == "workspace":
        try:
            info = WORKSPACE.stat()
        except OSError:
            return 0, 0
        return info.st_uid, info.st_gid
    try:
        uid = int(uid_text)
        return uid, int(gid_text) if gid_text else uid
    except ValueError:
        raise SystemExit(
            f"sandbox: SANDBOX_USER_ID must be a number or 'workspace', not {uid_text!r}"
        ) from None


def give_store(store: Path, uid: int, gid: int) -> None:
    """Let the server, which writes as the agent's uid, add to a checkpoint store made by
    another uid: its folders change owner (objects are never rewritten, only added)."""
    if not store.is_dir():
        return
    for folder, _, _ in os.walk(store):
        try:
            os.chown(folder, uid, gid)
        except OSError as exc:
            print(f"sandbox: cannot hand {folder} to the agent's uid: {exc}", file=sys.stderr)


def give_env(env: Path, uid: int, gid: int) -> None:
    """Make the agent's Python env folder (a volume Docker made as root, or a new folder) the
    agent's: everything in it changes owner when its top does not belong to the agent yet
    (a new volume, or another agent uid than last time). Links are never followed."""
    try:
        env.mkdir(parents=True, exist_ok=True)
        if env.stat().st_uid == uid:
            return
        os.chown(env, uid, gid)
        for folder, dirs, files in os.walk(env):
            for name in dirs + files:
                os.chown(os.path.join(folder, name), uid, gid, follow_symlinks=False)
    except OSError as exc:
        print(f"sandbox: cannot hand {env} to the agent's uid: {exc}", file=sys.stderr)


def main(argv: list[str]) -> None:
    """Set up the agent's user when running as root, then exec the sandbox CLI."""
    argv = token_argv(argv)  # while still root: the token file is root-only
    ids = agent_ids(os.environ.pop("SANDBOX_USER_ID", ""), os.environ.pop("SANDBOX_GROUP_ID", ""))
    if os.getuid() == 0 and ids is not None and ids[0] != 0:
        uid, gid = ids
        if argv and argv[0] == "serve":
            prepare_user(uid, gid)
            if "--checkpoints" in argv:
                give_store(Path(argv[argv.index("--checkpoints") + 1]), uid, gid)
            if "--python-env" in argv:
                give_env(Path(argv[argv.index("--python-env") + 1]), uid, gid)
            argv = [argv[0], "--agent-user", f"{uid}:{gid}", *argv[1:]]
        else:
            drop_privileges(uid, gid)
    elif os.getuid() == 0:
        Path("/root").mkdir(exist_ok=True)
        os.environ.setdefault("HOME", "/root")
        print(f"sandbox: {ROOT_AGENT_WARNING}", file=sys.stderr)
    elif not os.access(os.environ.get("HOME") or "/", os.W_OK):
        # Started as a non-root uid with no home (Kubernetes runAsUser): make one in /tmp.
        home = Path(f"/tmp/home-{os.getuid()}")
        home.mkdir(mode=0o700, exist_ok=True)
        os.environ["HOME"] = str(home)
    # -P: the working directory is the agent's workspace, which must not shadow a module.
    os.execv(sys.executable, [sys.executable, "-P", "-m", "sandbox", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
