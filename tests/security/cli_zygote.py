"""Runs the real `workbench` command many times without paying its imports each time.

`python -m workbench --headless` spends ~5 s of CPU importing litellm before its first step;
an attack suite of 70 sessions would spend most of its time there. This process imports the
command once (workbench.cli.main, the headless runner, litellm), then, for each request read from
stdin (one JSON object a line: argv, env, cwd, stdout and stderr paths, timeout), forks a child
that takes that environment, folder and standard streams and calls `workbench.cli.main.main(argv)`:
the command's own entry point, in its own process, as `python -m workbench` would. The parent
answers one JSON line: the exit code (or -signal), or `timeout` once it had to kill the child.

Set WORKBENCH_ATTACKS_SUBPROCESS=1 to skip this and run `python -m workbench` for every call
(slower; the same results).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys


def _child(request: dict[str, object]) -> None:
    """In the forked child: become the requested command run and exit with its code."""
    os.setsid()  # its own session, like a command started from a shell
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in env.items()})
    import tempfile

    tempfile.tempdir = None  # cached by an import in the parent: read TMPDIR again
    os.chdir(str(request["cwd"]))
    stdin = os.open(str(request.get("stdin") or os.devnull), os.O_RDONLY)
    out = os.open(str(request["stdout"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    err = os.open(str(request["stderr"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    for fd, target in ((stdin, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    code = 10
    try:
        from workbench.cli.main import main

        code = main([str(arg) for arg in request["argv"]])  # type: ignore[union-attr]
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 99
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _ends_within(pidfd: int, seconds: float) -> bool:
    """Whether the process behind `pidfd` ends within `seconds` (the kernel says when)."""
    return bool(select.select([pidfd], [], [], seconds)[0])


def _wait(pid: int, timeout: float) -> dict[str, object]:
    """The child's end: its exit code, or `timeout` after killing its process group."""
    pidfd = os.pidfd_open(pid)
    try:
        if _ends_within(pidfd, timeout):
            _, status = os.waitpid(pid, 0)
            return {"pid": pid, "code": os.waitstatus_to_exitcode(status)}
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                break
            _ends_within(pidfd, 0.5)  # SIGTERM's grace; the group gets SIGKILL all the same
        os.waitpid(pid, 0)
        return {"pid": pid, "code": None, "timeout": True}
    finally:
        os.close(pidfd)


def main() -> None:
    """Import once, then serve requests from stdin until it closes."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # noqa: F401

    import workbench.cli.main
    import workbench.headless.runner
    import workbench.llm
    import workbench.session.opening  # noqa: F401

    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps(_wait(pid, float(request.get("timeout", 120)))), flush=True)
    os._exit(0)  # litellm's threads must not hold up the exit


if __name__ == "__main__":
    main()
