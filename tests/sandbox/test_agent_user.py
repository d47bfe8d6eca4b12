"""`serve --agent-user`: the bad values are refused with a message, before anything listens.

The Docker tests (`test_docker_isolation.py`) show what the option does in a real container.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.skipif(os.getuid() == 0, reason="as root, the switch works")
def test_a_server_that_is_not_root_cannot_switch(tmp_path: Path) -> None:
    done = serve(tmp_path, "1234:1234")
    assert done.returncode != 0 and "must start as root" in done.stderr
