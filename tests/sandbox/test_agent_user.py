"""`serve --agent-user`: the bad values are refused with a message, before anything listens.

The Docker tests (`test_docker_isolation.py`) show what the option does in a real container.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def serve(tmp_path: Path, agent_user: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "sandbox", "serve", "--workspace", str(tmp_path)]
    return subprocess.run(
        [*command, "--no-warm-up", "--agent-user", agent_user],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "SANDBOX_TOKEN": "t" * 32},
    )


def test_a_malformed_agent_user_is_a_usage_error(tmp_path: Path) -> None:
    done = serve(tmp_path, "me:1000")
    assert (
        done.returncode == 2 and "expected UID:GID (e.g. 1000:1000), not 'me:1000'" in done.stderr
    )


def test_the_agent_may_not_be_root(tmp_path: Path) -> None:
    done = serve(tmp_path, "0:0")
    assert done.returncode != 0 and "SANDBOX READY" not in done.stdout
    assert "cannot run the agent as 0:0: the agent's uid must not be root" in done.stderr


def test_a_server_that_is_not_root_cannot_switch() -> None:
    """Asked in a forked child that first gives up root (as root, the switch would work)."""
    from sandbox import confine

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            if os.getuid() == 0:
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            os.write(write_fd, str(confine.run_agent_as(1234, 1234)).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as answer:
        why = answer.read()
    os.waitpid(pid, 0)
    assert "must start as root" in why
