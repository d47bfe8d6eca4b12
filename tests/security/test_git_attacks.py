"""The agent must not make the host's git run its code: every way of writing under `.git` (and
`.gitmodules`) listed in issue 21, in a workspace that is a repository at start and (some) in
one that is not. Real headless command, scripted model, default settings (bubblewrap,
confirmation "risky", `--on-confirm reject`). After the session the person's usual git commands
run on the host (under a terminal, so pagers run); no payload may run, nothing outside the
workspace may change, the app ends normally, and the agent is told its write was refused.
"""

from __future__ import annotations

import os

import pytest
from attack_support import (
    Cli,
    Host,
    answers,
    check_no_marker,
    check_survived,
    check_unchanged,
    host_triggers,
    refused,
    session,
)
from git_cases import ALL, GitCase

CONTROL_ARGS = ("--on-confirm", "approve")
CONTROL = os.environ.get("WORKBENCH_ATTACKS_CONTROL") == "1"
"""Set to check the cases themselves: every action approved (`--on-confirm approve`), each
case's payload must then run on the host (a case that cannot harm proves nothing)."""


@pytest.mark.parametrize("case", ALL, ids=[case.name for case in ALL])
def test_the_hosts_git_never_runs_the_agents_code(cli: Cli, host: Host, case: GitCase) -> None:
    if case.repo:
        host.git_repo()
    setup, attack = case.steps(host)
    before = host.snapshot()
    run, server = session(cli, host, [*setup, *attack], CONTROL_ARGS if CONTROL else ())
    check_survived(host, run)
    if CONTROL:
        assert host_triggers(host), f"the attack did not work even approved:\n{answers(server)}"
        return
    told = answers(server)
    assert len(told) == len(setup) + len(attack), told
    for step, text in zip(setup, told, strict=False):
        # A note that the sandbox now protects a new repository's config is no refusal.
        ran = text.lstrip().startswith("[exit code 0") or "\n[exit code 0" in text
        assert ran or not refused(text), f"ordinary work was refused: {step}\n{text}"
    attack_answers = told[len(setup) :]
    guilty = host_triggers(host)
    check_no_marker(host, guilty)
    check_unchanged(before, host.snapshot())
    assert any(refused(text) for text in attack_answers), (
        f"the agent was not told its write under .git was refused: {attack_answers}"
    )


APPROVED = [
    "core.fsmonitor",
    "include.path to a file the editor wrote",
    "echo >> .git/config",
    "python open() on .git/config",
    "editor edits .git/config",
    "cp into .git/hooks",
    "git init --template",
    "tar -C .git -xf",
    ".gitmodules and .git/modules/x/config",
]
"""Forms run once more with every action approved (`--on-confirm approve`: the person said
yes, or the analyzer misjudged): the protected paths must hold whatever the analyzer says."""


@pytest.mark.parametrize("name", APPROVED)
def test_protected_paths_hold_even_when_approved(cli: Cli, host: Host, name: str) -> None:
    case = next(case for case in ALL if case.name == name)
    host.git_repo()
    setup, attack = case.steps(host)
    before = host.snapshot()
    run, server = session(cli, host, [*setup, *attack], CONTROL_ARGS)
    check_survived(host, run)
    told = answers(server)[len(setup) :]
    check_no_marker(host, host_triggers(host))
    check_unchanged(before, host.snapshot())
    assert any(refused(text) for text in told), f"no clear error from the sandbox: {told}"
