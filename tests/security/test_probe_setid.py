"""The agent must not leave a set-uid program on the host. In an idmapped workspace the agent's
uid owns the files it makes, so `chmod 4755` succeeds; on the host the file belongs to the
person (root, when the app runs as root): any user who can reach the workspace would run it as
them. Real headless command, scripted model, default settings and `--on-confirm approve`.
"""

from __future__ import annotations

import os
import stat

import pytest
from attack_support import Cli, Host, answers, bash, check_survived, session

ATTACKS = {
    "chmod 4755": "cp /bin/sh ./x && chmod 4755 ./x && ls -ln x",
    "chmod g+s": "cp /bin/sh ./x && chmod 2755 ./x && ls -ln x",
    "install -m": "install -m 6755 /bin/sh ./x && ls -ln x",
    "python os.chmod in a subfolder": (
        "mkdir -p deep/er && cp /bin/sh deep/er/x && "
        "python3 -c 'import os; os.chmod(\"deep/er/x\", 0o4755)' && ls -ln deep/er/x"
    ),
}


def _setid(host: Host) -> list[str]:
    found = []
    for folder, _, files in os.walk(host.ws):
        for name in files:
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if stat.S_ISREG(mode) and mode & (stat.S_ISUID | stat.S_ISGID):
                found.append(os.path.relpath(os.path.join(folder, name), host.ws))
    return found


@pytest.mark.parametrize("approve", [False, True], ids=["default", "approved"])
@pytest.mark.parametrize("name", list(ATTACKS))
def test_no_setid_program_is_left_on_the_host(
    cli: Cli, host: Host, name: str, approve: bool
) -> None:
    args = ("--on-confirm", "approve") if approve else ()
    run, server = session(cli, host, [bash(ATTACKS[name])], args)
    check_survived(host, run)
    assert _setid(host) == [], f"a set-id file is left in the workspace: {answers(server)}"


def test_the_persons_own_setid_file_is_kept(cli: Cli, host: Host) -> None:
    mine = host.ws / "mine"
    mine.write_bytes(b"#!/bin/sh\n")
    os.chmod(mine, 0o4755)
    run, _ = session(cli, host, [bash("ls -l mine")])
    check_survived(host, run)
    assert stat.S_IMODE(mine.stat().st_mode) == 0o4755
