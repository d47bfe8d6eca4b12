"""The "always allow" never proposes a rule broader than the command's program and subcommand, and
never one for a path outside the workspace (unit level: `workbench/security/allow_rules.py`)."""

from __future__ import annotations

import pytest

from workbench.config.schema import SecurityConfig
from workbench.events import CmdRunAction, FileEditAction
from workbench.security.allow_rules import allowed_by_text, propose

WS = "/home/me/proj"
ASK_ALL = SecurityConfig(confirmation="always")


@pytest.mark.parametrize(
    ("command", "elsewhere"),
    [
        ("git -C /etc status", "git -C / status"),
        ("git -C /etc status", "git push --force"),
        ("git --git-dir=/srv/x/.git log", "git --git-dir=/root/.git log"),
        ("npm --prefix /opt/app test", "npm --prefix / publish"),
        ("make -C /usr/src/linux", "make -C / install"),
    ],
)
def test_no_rule_reaches_past_the_program_and_subcommand(command: str, elsewhere: str) -> None:
    proposal = propose(CmdRunAction(command=command), ASK_ALL, WS)
    assert "run:git*" not in proposal.rules and "run:npm*" not in proposal.rules
    too_broad = [rule for rule in proposal.rules if allowed_by_text([rule], elsewhere)]
    assert not too_broad, f"{command!r} proposed {too_broad}, which also allows {elsewhere!r}"


def test_no_rule_for_an_edit_outside_the_workspace() -> None:
    action = FileEditAction(command="create", path="/etc/cron.d/job", file_text="x")
    proposal = propose(action, ASK_ALL, WS)
    assert not any(rule.startswith("edit:/etc") for rule in proposal.rules), proposal
