"""Probe: the agent owns the idmapped workspace, so `chmod 777 . .git` (rated LOW) made the
person's project and its `.git` writable by every local user on the host (root's, no sticky
bit): any of them could then swap `.git` for one with hooks of theirs, which the person's next
`git commit` runs. Write access for everyone that the agent added is taken back when the session
ends; what the person had is kept."""

from __future__ import annotations

import os
import stat

import pytest
from attack_support import Cli, Host, answers, bash, check_survived, session


@pytest.mark.parametrize("approve", [False, True], ids=["default", "approved"])
def test_no_world_writable_path_is_left_on_the_host(cli: Cli, host: Host, approve: bool) -> None:
    host.git_repo()
    (host.ws / "src").mkdir()
    steps = [bash("chmod 777 . .git src && chmod o+w a.txt && touch x && chmod 666 x; ls -ld .")]
    args = ("--on-confirm", "approve") if approve else ()
    run, server = session(cli, host, steps, args)
    check_survived(host, run)
    assert "drwxrwxrwx" in answers(server)[0], answers(server)
    for path in (host.ws, host.ws / ".git", host.ws / "src", host.ws / "a.txt", host.ws / "x"):
        mode = os.lstat(path).st_mode
        assert not mode & stat.S_IWOTH, f"{path} is {oct(mode)} on the host"


def test_the_persons_own_shared_folder_is_kept(cli: Cli, host: Host) -> None:
    shared = host.ws / "drop"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    run, _ = session(cli, host, [bash("ls -ld drop")])
    check_survived(host, run)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o1777
