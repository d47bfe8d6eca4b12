"""The checkpoint store is not the agent's: it cannot plant symlinks there that the host's
`workbench rewind` then follows (`refs/heads/.rewind.tmp` onto a host file, `rewinds` onto a
host folder), on the local runtime and on Docker; and the data dir and store are 0700.

The agent reaches the store with a `cd` of its own call (the analyzer judges each call in the
workspace), as a misjudged or approved action could.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from pathlib import Path

import pytest
from attack_support import Cli, Host, bash, check_survived, check_unchanged, session
from docker_support import BASE_IMAGE, sandbox_image

CHECKPOINTS = "/checkpoints"
"""Where the store was mounted in the container (now it stays on the host: the agent must not
find it there, nor anywhere else)."""

__all__ = ["sandbox_image"]  # a fixture, used by name


def store_of(host: Host) -> Path:
    """Where the app keeps the workspace's checkpoints (workbench.checkpoints.store's rule)."""
    ws = host.ws.resolve()
    digest = hashlib.sha256(str(ws).encode()).hexdigest()[:16]
    return host.data / "checkpoints" / f"{ws.name[:40]}-{digest}.git"


def plant(host: Host, store: str, workspace: str) -> list[dict[str, object]]:
    """The agent's steps: a change to rewind, then symlinks in the store onto host places."""
    return [
        bash("echo changed > a.txt"),
        bash(f"cd {store}"),
        bash(f"ln -s {host.decoy}/folder rewinds"),
        bash("cd refs/heads"),
        bash(f"ln -s {host.decoy}/victim.txt .rewind.tmp"),
        bash(f"cd {workspace}"),
    ]


def rewind_on_the_host(cli: Cli, host: Host, before: dict[str, str], **env: str) -> None:
    """The person rewinds the session on the host; nothing outside the workspace changes."""
    session_id = host.logs()[-1].stem
    run = cli.run(["rewind", session_id, "--to", "0", "--yes"], host.env(**env), host.root)
    assert not run.timed_out and run.code is not None, run.text
    assert (host.decoy / "victim.txt").read_text() == "decoy\n", "rewind wrote a host file"
    assert not any((host.decoy / "folder").iterdir()), "rewind wrote into a host folder"
    check_unchanged(before, host.snapshot())


def test_store_symlinks_local(cli: Cli, host: Host) -> None:
    (host.ws / "a.txt").write_text("one\n")
    (host.decoy / "folder").mkdir()
    before = host.snapshot()
    run, _ = session(cli, host, plant(host, str(store_of(host)), str(host.ws)))
    check_survived(host, run)
    rewind_on_the_host(cli, host, before)


def test_the_data_dir_and_store_are_private(cli: Cli, host: Host) -> None:
    (host.ws / "secret.env").write_text("TOKEN=canary\n")
    (host.ws / "secret.env").chmod(0o600)
    run, _ = session(cli, host, [bash("echo more >> secret.env")])
    check_survived(host, run)
    for folder in (host.data, store_of(host)):
        mode = stat.S_IMODE(folder.stat().st_mode)
        assert mode & 0o077 == 0, f"{folder} is {oct(mode)}: others can read the checkpoints"


@pytest.mark.docker
def test_store_symlinks_docker(cli: Cli, host: Host, sandbox_image: str) -> None:
    (host.ws / "a.txt").write_text("one\n")
    (host.decoy / "folder").mkdir()
    before = host.snapshot()
    env = {"RUNTIME": "docker", "WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE": BASE_IMAGE}
    run, _ = session(cli, host, plant(host, CHECKPOINTS, "/workspace"), timeout=300, **env)
    check_survived(host, run)
    rewind_on_the_host(cli, host, before, **env)


@pytest.mark.docker
def test_a_fifo_in_a_dead_apps_temp_folder_does_not_stall_a_docker_start(
    cli: Cli, host: Host, sandbox_image: str
) -> None:
    """The Docker runtime sweeps dead apps' `sandbox-local-*` folders as it starts: a FIFO the
    agent made of its `owner.json` must not stall that start."""
    env = {"RUNTIME": "docker", "WORKBENCH_SANDBOX_DOCKER_BASE_IMAGE": BASE_IMAGE}
    clean, planted = host.root / "tmp-clean", host.root / "tmp-planted"
    clean.mkdir()
    (planted / "sandbox-local-left").mkdir(parents=True)
    os.mkfifo(planted / "sandbox-local-left/owner.json")
    started = time.monotonic()
    run, _ = session(cli, host, [bash("echo hi")], timeout=300, TMPDIR=str(clean), **env)
    check_survived(host, run)
    baseline = time.monotonic() - started
    bound = max(3 * baseline, baseline + 30)
    started = time.monotonic()
    run, _ = session(cli, host, [bash("echo hi")], timeout=bound, TMPDIR=str(planted), **env)
    took = time.monotonic() - started
    clean_s = f"{baseline:.0f} s clean"
    assert not run.timed_out, f"the start stalled on the FIFO ({took:.0f} s, {clean_s})"
    check_survived(host, run)
