"""`python -m sandbox serve --workspace DIR`: start the action server.

The token comes from `--token-fd N` (a pipe the parent wrote it to: read once, closed; the
local runtime's way, so it never enters a process environment), the `SANDBOX_TOKEN` environment
variable (for servers started by hand or by Kubernetes: `/proc/PID/environ` keeps it even after
it is popped) or `--token-file`, never from the command line (it would show in `ps`). Without
any, one is generated and written to a file only this user can read. Once listening, the server
prints exactly one line on stdout, `SANDBOX READY {"port": ..., "pid": ...}`; everything after
goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

    from sandbox.protect import Guard

TOKEN_ENV = "SANDBOX_TOKEN"


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m sandbox", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the action server in a workspace")
    serve.add_argument("--workspace", required=True, type=Path, help="the agent's working folder")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", default=0, type=int, help="port to bind (default: a free one)")
    serve.add_argument("--token-file", type=Path, help="read the token from this file")
    serve.add_argument(
        "--token-fd", type=int, help="read the token from this inherited file descriptor"
    )
    serve.add_argument(
        "--confine-agent",
        choices=("net", "nonet", "allowlist"),
        help="run shell, kernel and browser in nested bwrap pid namespaces (with network, "
        "without, or only through the app's proxy bound in at sandbox.net_bridge.PROXY_SOCKET)",
    )
    serve.add_argument(
        "--net-bridge",
        metavar="SOCKET",
        help="forward 127.0.0.1:3128 to the app's network proxy on this unix socket (Docker "
        'with network = "allowlist": the container has no other way out)',
    )
    serve.add_argument(
        "--agent-user",
        metavar="UID:GID",
        type=_uid_gid,
        help="(as root) serve with this effective uid and run shell, kernel and browser as it",
    )
    serve.add_argument(
        "--agent-uid",
        metavar="JSON",
        help="(as root, with --confine-agent) run shell, kernel and browser as this separate "
        "uid, the folders it writes idmapped to it (sandbox.confine.AgentUser as JSON)",
    )
    serve.add_argument(
        "--limit-events",
        metavar="KIND:LIMIT:PATH,...",
        help="the agent's limits (memory, pids) and their cgroup events files: reaching one is "
        "reported to the agent",
    )
    serve.add_argument("--artifacts", type=Path, help="folder for images the executors write")
    serve.add_argument("--checkpoints", type=Path, help="the workspace's checkpoint store")
    serve.add_argument(
        "--python-env",
        type=Path,
        help="a folder to make the agent's writable Python env (sandbox/agent_env.py)",
    )
    serve.add_argument(
        "--quarantine",
        type=Path,
        help="where what the agent left under protected paths goes (default: a temp folder)",
    )
    serve.add_argument(
        "--home-like",
        action="store_true",
        help="the workspace is a home folder: its dotfiles are protected paths too",
    )
    serve.add_argument(
        "--disable", action="append", default=[], metavar="EXECUTOR", help="turn an executor off"
    )
    serve.add_argument(
        "--watch-stdin", action="store_true", help="shut down when stdin closes (parent died)"
    )
    serve.add_argument("--no-warm-up", action="store_true", help="start the shell lazily")
    serve.add_argument(
        "--max-connections",
        type=_positive(int),
        default=128,
        help="client connections at once (default 128, lowered to fit the file limit)",
    )
    serve.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=10.0,
        metavar="S",
        help="seconds a request head may take to arrive (default 10)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=_positive(float),
        default=75.0,
        metavar="S",
        help="seconds a kept-alive connection may wait for its next request (default 75)",
    )
    serve.add_argument(
        "--body-timeout",
        type=_positive(float),
        default=30.0,
        metavar="S",
        help="seconds a request body may stop coming before a 408 (default 30)",
    )
    serve.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING or ERROR")
    return parser


def _uid_gid(text: str) -> tuple[int, int]:
    """ "UID:GID" (or "UID", the gid then the same number) as two ints."""
    uid, _, gid = text.partition(":")
    try:
        return int(uid), int(gid or uid)
    except ValueError:
        why = f"expected UID:GID (e.g. 1000:1000), not {text!r}"
        raise argparse.ArgumentTypeError(why) from None


def _positive(kind: type[float] | type[int]) -> Callable[[str], float]:
    """An argparse type: a finite number above 0."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"must be above 0 and finite: {text!r}")
        return value

    return parse


def read_token(token_file: Path | None, token_fd: int | None = None) -> tuple[str, Path | None]:
    """The token and, when one was generated, the file it was written to."""
    if token_fd is not None:
        return _read_fd(token_fd), None
    token = os.environ.pop(TOKEN_ENV, "").strip()  # popped: the agent's shell must not see it
    if token:
        return token, None
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SystemExit(f"sandbox: cannot read the token file {token_file}: {exc}") from exc
        if not token:
            raise SystemExit(f"sandbox: the token file {token_file} is empty")
        return token, None
    import secrets
    import tempfile

    token = secrets.token_urlsafe(32)
    fd, name = tempfile.mkstemp(prefix="sandbox-token-", suffix=".txt")  # mode 0600
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token, Path(name)


def _read_fd(fd: int) -> str:
    """The token written to pipe `fd`, which is closed after (no child inherits it)."""
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    except OSError as exc:
        raise SystemExit(f"sandbox: cannot read the token from fd {fd}: {exc}") from exc
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    token = b"".join(chunks).decode("utf-8", errors="replace").strip()
    if not token:
        raise SystemExit(f"sandbox: fd {fd} gave an empty token")
    return token


def serve(args: argparse.Namespace) -> int:
    """Run the server until SIGTERM/SIGINT (or stdin closing with --watch-stdin)."""
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="sandbox %(levelname)s %(message)s"
    )
    from sandbox.process_guard import make_undumpable

    make_undumpable()  # first: nothing of the token may be readable through /proc
    token, generated = read_token(args.token_file, args.token_fd)
    # Until it is ready, the server's other threads (the confinement's, the shell's warm-up)
    # wait on processes and need the GIL only for moments: give it them sooner than every 5 ms
    # the imports here would, so their processes start earlier.
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    confining = None
    if args.confine_agent:
        from sandbox import confine

        protect = [args.checkpoints] if args.checkpoints else []
        from sandbox.agent_uid import AgentUser

        agent = AgentUser.parse(args.agent_uid) if args.agent_uid else None
        network = {"net": "on", "nonet": "off"}.get(args.confine_agent, args.confine_agent)
        # Begun before the imports below, which it overlaps (its holder and probe are
        # processes); waited for before anything of the agent starts.
        confining = confine.begin(network=network, protect=protect, agent=agent)
    if args.agent_user:
        from sandbox import confine

        uid, gid = args.agent_user
        why = confine.run_agent_as(uid, gid)
        if why is not None:
            raise SystemExit(f"sandbox: cannot run the agent as {uid}:{gid}: {why}")
    import asyncio
    import signal

    if args.limit_events:
        from sandbox.limits import watch_spec

        watch_spec(args.limit_events)
    workspace: Path = args.workspace
    if workspace.exists() and not workspace.is_dir():
        raise SystemExit(f"sandbox: the workspace {workspace} is not a directory")
    workspace.mkdir(parents=True, exist_ok=True)

    # pydantic looks for plugins in every installed distribution's entry points (~10 ms);
    # the server has none (its models are all built when `protocol` is imported). Unset again
    # so the agent's processes do not inherit it.
    added = "PYDANTIC_DISABLE_PLUGINS" not in os.environ
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    from sandbox.core import Sandbox

    if added:
        del os.environ["PYDANTIC_DISABLE_PLUGINS"]
    if confining is not None and (why := confining.wait()) is not None:
        raise SystemExit(f"sandbox: cannot confine the agent's processes: {why}")
    sandbox = Sandbox(
        workspace,
        artifacts=args.artifacts,
        disabled=args.disable,
        checkpoints=args.checkpoints,
        guard=_guard(args, workspace),
        python_env=_python_env(args.python_env),
        warm_up=() if args.no_warm_up else ["bash"],  # the shell starts while the rest loads
    )
    from sandbox.http11 import Limits
    from sandbox.server import SandboxServer

    limits = Limits(
        header_timeout_s=args.header_timeout,
        idle_timeout_s=args.idle_timeout,
        body_timeout_s=args.body_timeout,
    )
    server = SandboxServer(sandbox, token, limits, args.max_connections)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        try:
            port = await server.start(args.host, args.port)
        except OSError as exc:
            raise SystemExit(f"sandbox: cannot listen on {args.host}:{args.port}: {exc}") from exc
        if args.net_bridge:
            from sandbox.net_bridge import serve_bridge

            bridge = await serve_bridge(args.net_bridge)
        ready: dict[str, object] = {"port": port, "pid": os.getpid()}
        if generated is not None:
            ready["token_file"] = str(generated)
            print(f"sandbox: token written to {generated}", file=sys.stderr)
        sys.stdout.write("SANDBOX READY " + json.dumps(ready) + "\n")
        sys.stdout.flush()
        os.dup2(2, 1)  # stray prints must not fill a pipe nobody reads any more
        sys.setswitchinterval(switch_interval)
        gc.freeze()  # start-up objects (modules, schemas) need no more collecting
        gc.enable()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, _stopper(stop, f"received {sig.name}"))
        if args.watch_stdin:
            _watch_stdin(loop, stop)
        await stop.wait()
        if args.net_bridge:
            bridge.close()
        await server.stop()

    asyncio.run(main())
    return 0


def _python_env(folder: Path | None) -> Path | None:
    """`folder` made the agent's Python env (`sandbox/agent_env.py`); None (and a line on
    stderr) when it cannot be: the agent then has the server's interpreter, read-only."""
    if folder is None:
        return None
    from sandbox import agent_env

    try:
        folder.mkdir(parents=True, exist_ok=True)
        took = agent_env.prepare(folder)
    except OSError as exc:
        print(f"sandbox: cannot prepare the agent's Python env in {folder}: {exc}", file=sys.stderr)
        return None
    logging.getLogger("sandbox").info("agent's Python env ready in %.1f ms", took * 1000)
    return folder


def _guard(args: argparse.Namespace, workspace: Path) -> Guard:
    """The after-action guard of the workspace's protected paths. With the agent in nested
    bwraps, paths that appear are also locked: the workspace's mount is made shared first, so
    a read-only bind the server adds later reaches every agent process (`ro_mounts.py`)."""
    import tempfile

    from sandbox.protect import Guard, Lock

    lock: Lock | None = None
    unlock = None
    if args.confine_agent:
        from sandbox import ro_mounts

        why = ro_mounts.share(workspace.resolve())
        if why is None:
            lock, unlock = ro_mounts.bind_read_only, ro_mounts.unbind
        else:
            logging.getLogger("sandbox.server").warning(
                "protected paths that appear during the session will be neutralised but not "
                "locked: %s",
                why,
            )
    # Made only when something goes there.
    quarantine = (
        args.quarantine or Path(tempfile.gettempdir()) / f"sandbox-quarantine-{os.getpid()}"
    )
    return Guard(
        workspace.resolve(), quarantine, home_like=args.home_like, lock=lock, unlock=unlock
    )


def _watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    os.set_blocking(0, False)

    def readable() -> None:
        try:
            data = os.read(0, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(0)
            _stopper(stop, "stdin closed (the parent went away)")()

    loop.add_reader(0, readable)


def _stopper(stop: asyncio.Event, why: str) -> Callable[[], None]:
    def set_stop() -> None:
        logging.getLogger("sandbox.server").warning("shutting down: %s", why)
        stop.set()

    return set_stop


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m sandbox`."""
    gc.disable()  # ~5% of the start-up goes to collections that find nothing to free
    args = build_parser().parse_args(argv)
    code = serve(args)
    sys.stdout.flush()
    sys.stderr.flush()
    # Executor threads may still sit in a blocking call: do not wait for them at exit.
    os._exit(code)


if __name__ == "__main__":
    main()
