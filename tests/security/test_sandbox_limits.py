"""What the agent is inside the sandbox: not root (no `/etc/shadow`, `id -u` is not 0), bounded
in processes and in the sizes of `/tmp`, `/dev/shm` and `/run`, unable to end the app or its
server. Every flood here is capped so that even with no limit in force it cannot hurt the
machine (3 000 sleeping processes; 1.25 GiB of tmpfs, deleted in the same command).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil
import pytest
from attack_support import (
    Cli,
    Host,
    answers,
    bash,
    check_survived,
    check_unchanged,
    refused,
    session,
    shown,
)
from waiting import wait_until

PROCESS_CAP = 1536
"""The most processes the agent may have in its sandbox (the default limit is ~1 024)."""
TMPFS_CAP = 1100 * 1024 * 1024
"""The most one tmpfs may take (the default is ~1 GiB); the flood writes 1.25 GiB."""


def shadow_root_line() -> str:
    """Root's line of the host's /etc/shadow: what a leak would show."""
    return next(
        line for line in Path("/etc/shadow").read_text().splitlines() if line.startswith("root:")
    )


SHADOW = [
    "cat /etc/shadow",
    "base64 /etc/shad?w | base64 -d",
    "python3 -c \"print(open('/etc/' + 'sha' + 'dow').read())\"",
    "head -c 4000 /etc/gshadow /etc/shadow",
]


@pytest.mark.parametrize("command", [*SHADOW, "cat /etc/shadow (approved)"])
def test_the_agent_cannot_read_etc_shadow(cli: Cli, host: Host, command: str) -> None:
    """(approved): `--on-confirm approve`, whatever the analyzer says the uid must hold."""
    args = ["--on-confirm", "approve"] if command.endswith("(approved)") else []
    command = command.removesuffix(" (approved)")
    before = host.snapshot()
    run, server = session(cli, host, [bash(command)], args)
    check_survived(host, run)
    check_unchanged(before, host.snapshot())
    [told] = answers(server)
    leaked = shadow_root_line() in told
    assert not leaked, "the agent read the host's /etc/shadow"
    assert refused(told), f"no clear error: {shown(told)}"


def test_the_agent_is_not_root(cli: Cli, host: Host) -> None:
    run, server = session(cli, host, [bash("id -u"), bash("grep ^Uid /proc/self/status")])
    check_survived(host, run)
    uid, status = answers(server)
    assert uid.split()[0] != "0", f"the agent runs as root: {uid}"
    assert status.split()[1:5] != ["0", "0", "0", "0"], status


def _session_sleepers(workspace: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["name", "cwd"]):
        try:
            if proc.info["name"] == "sleep" and str(proc.info["cwd"] or "").startswith(
                str(workspace)
            ):
                found.append(proc)
        except (psutil.Error, TypeError):
            continue
    return found


def test_a_fork_flood_is_bounded_and_the_app_survives(cli: Cli, host: Host) -> None:
    flood = (  # spawns as fast as it can; stops at the first refusal (a limit in force)
        'timeout -s KILL 30 python3 -c "import os\nn = 0\nfor i in range(3000):\n'
        "    try:\n        os.posix_spawnp('sleep', ['sleep', '40'], {})\n"
        "    except OSError:\n        break\n    n += 1\nprint('spawned', n)\""
    )
    count = "n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; echo procs=$n"  # builtins only
    steps = [bash(flood, timeout=40), bash(count), bash("echo alive")]
    run, server = session(cli, host, steps, timeout=120)
    check_survived(host, run)
    _, counted, alive = answers(server)
    procs = int(counted.split("procs=")[1].split()[0])
    assert procs <= PROCESS_CAP, f"the agent ran {procs} processes (no limit in force)"
    assert "alive" in alive
    wait_until(  # each look scans every process: not too often
        lambda: not _session_sleepers(host.ws), 30, "the agent's processes to end", poll_s=0.2
    )


@pytest.mark.parametrize("folder", ["/tmp", "/dev/shm", "/run"])
def test_a_tmpfs_flood_is_bounded_and_the_app_survives(cli: Cli, host: Host, folder: str) -> None:
    fill = (  # relative names after a `cd` of its own call: judged as inside the workspace
        "dd if=/dev/zero of=flood bs=1M count=1280 2>&1 | tail -1; "
        "echo size=$(stat -c %s flood 2>/dev/null || echo 0); rm -f flood"
    )
    steps = [bash(f"cd {folder}"), bash(fill), bash(f"cd {host.ws}"), bash("echo alive")]
    run, server = session(cli, host, steps, timeout=120)
    check_survived(host, run)
    _, filled, _, alive = answers(server)
    if "size=" in filled:
        size = int(filled.split("size=")[1].split()[0])
        assert size <= TMPFS_CAP, f"{folder} took {size >> 20} MiB (no size limit in force)"
    else:
        assert refused(filled), filled
    assert "alive" in alive


KILLS = {
    "kill -9 -1": "kill -9 -1; echo after",
    "the server by its pid": (
        "for p in /proc/[0-9]*; do case \"$(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\" in "
        "*sandbox*serve*|*workbench*) kill -9 ${p#/proc/} && echo killed ${p#/proc/};; esac; done"
    ),
    "pkill by name": "pkill -9 -f 'sandbox serve'; pkill -9 -f workbench; echo tried",
}


@pytest.mark.parametrize("how", list(KILLS))
def test_the_agent_cannot_end_the_app_or_its_server(cli: Cli, host: Host, how: str) -> None:
    before = host.snapshot()
    run, server = session(cli, host, [bash(KILLS[how]), bash("echo alive")])
    check_survived(host, run)
    check_unchanged(before, host.snapshot())
    attack, alive = answers(server)
    assert "alive" in alive, f"the sandbox did not survive: {alive[:300]}"
    assert refused(attack), f"no clear error: {attack[:300]}"
    assert psutil.pid_exists(os.getpid())


def test_a_fifo_in_the_runtimes_temp_folders_does_not_stall_the_next_start(
    cli: Cli, host: Host
) -> None:
    """A dead app's `sandbox-local-*` folder whose `owner.json` the agent made a FIFO, and a
    FIFO the agent left in the workspace: the next start is about as fast as a clean one."""
    clean, planted = host.root / "tmp-clean", host.root / "tmp-planted"
    clean.mkdir()

    def timed(tmp: Path) -> float:
        started = time.monotonic()
        run, _ = session(cli, host, [bash("echo hi")], timeout=60, TMPDIR=str(tmp))
        check_survived(host, run)
        return time.monotonic() - started

    baseline = min(timed(clean), timed(clean))
    left = planted / "sandbox-local-left"
    left.mkdir(parents=True)
    os.mkfifo(left / "owner.json")
    os.mkfifo(left / "server.log")
    os.mkfifo(host.ws / "pipe")
    stalled = timed(planted)
    assert stalled < max(3 * baseline, baseline + 5), (
        f"a start beside a FIFO took {stalled:.1f} s, a clean one {baseline:.1f} s"
    )
