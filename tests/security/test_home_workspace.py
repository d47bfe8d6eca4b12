"""A workspace that is the person's home (or holds `.ssh`, `.aws`, a shell rc file at its root)
is refused unless named with `--workspace` and confirmed (`--yes` headless); even then its
dotfiles are protected. `--resume` of a log naming another folder refuses headless without
`--workspace` or `--yes`. Nothing runs in a refused session: the model is never asked.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from attack_support import (
    DOCUMENTED,
    Cli,
    Host,
    answers,
    bash,
    check_no_marker,
    check_survived,
    refused,
    session,
    snapshot,
)

from workbench.events import MessageEvent, StateChangedEvent
from workbench.session.log import SessionLog, make_header, new_session_id

CANARY = "-----BEGIN OPENSSH PRIVATE KEY----- canary-4f1e"


def furnish(folder: Path, *names: str) -> None:
    """Put a home's sensitive files at the root of `folder`."""
    for name in names:
        if name == ".ssh":
            (folder / ".ssh").mkdir(exist_ok=True)
            (folder / ".ssh/id_rsa").write_text(CANARY + "\n")
        elif name == ".aws":
            (folder / ".aws").mkdir(exist_ok=True)
            (folder / ".aws/credentials").write_text("[default]\naws_secret_access_key=canary\n")
        else:
            (folder / name).write_text("# the person's file\n")


def check_refused(host: Host, run: object, server: object, words: tuple[str, ...]) -> None:
    """The command ended at once with a documented error code and a message naming why."""
    code = getattr(run, "code", None)
    text = getattr(run, "text", "")
    assert code in DOCUMENTED and code != 0, f"not refused (exit {code}):\n{text[-2000:]}"
    assert not getattr(server, "requests", None), "the model was asked: the session ran"
    assert any(word in text for word in words), f"no clear reason given:\n{text[-2000:]}"


HOMES = {
    "the home folder itself": ("cwd=home", (".bashrc", ".ssh", ".gitconfig")),
    "a folder with .ssh": ("cwd=other", (".ssh",)),
    "a folder with .bashrc": ("cwd=other", (".bashrc",)),
    "a folder with .zshrc": ("cwd=other", (".zshrc",)),
    "a folder with .aws": ("cwd=other", (".aws",)),
    "--workspace HOME without --yes": ("flag", (".bashrc", ".ssh")),
}


@pytest.mark.parametrize("where", list(HOMES))
def test_a_home_like_workspace_is_refused(cli: Cli, host: Host, where: str) -> None:
    how, names = HOMES[where]
    folder = host.home if how != "cwd=other" else host.root / "other"
    folder.mkdir(exist_ok=True)
    furnish(folder, *names)
    before = snapshot(folder)
    args = ["--workspace", str(folder)] if how == "flag" else []
    cwd = host.ws if how == "flag" else folder
    run, server = session(cli, host, [bash("echo 'touch /tmp/x' >> .bashrc")], args, cwd=cwd)
    check_refused(host, run, server, ("home", ".ssh", ".bashrc", ".zshrc", ".aws", "--yes"))
    assert snapshot(folder) == before


def test_home_named_and_confirmed_still_protects_its_dotfiles(cli: Cli, host: Host) -> None:
    furnish(host.home, ".bashrc", ".profile", ".ssh")
    (host.home / ".git-credentials").write_text("https://person:canary@example.invalid\n")
    rc_before = {n: (host.home / n).read_bytes() for n in (".bashrc", ".profile")}
    steps = [
        bash(f"echo 'touch {host.mark()}' >> .bashrc"),
        bash(f"printf 'touch {host.mark()}\\n' >> .profile"),
        bash("tar cf - .ssh .git-credentials | base64 -w0 > loot.txt; wc -c loot.txt"),
        bash(f"sed -i '1i touch {host.mark()}' .bashrc"),
    ]
    args = ["--workspace", str(host.home), "--yes"]
    run, server = session(cli, host, steps, args, cwd=host.ws)
    check_survived(host, run)
    told = answers(server)
    for name, content in rc_before.items():
        assert (host.home / name).read_bytes() == content, f"{name} was changed"
    # the person's next interactive shell
    subprocess.run(
        ["bash", "-i", "-c", "true"],
        env=host.env() | {"HOME": str(host.home)},
        cwd=host.home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=20,
    )
    check_no_marker(host)
    for step, text in zip(steps[:2] + steps[3:], told[:2] + told[3:], strict=True):
        assert refused(text), f"a write to a dotfile was not refused: {step}\n{text[:300]}"


def craft_log(folder: Path, workspace: Path) -> Path:
    """A session log, as anyone could write one, naming `workspace` as its own."""
    folder.mkdir(parents=True, exist_ok=True)
    header = make_header(new_session_id(), workspace, "openai/test-model", {})
    log = SessionLog.create(folder, header, secrets=[])
    log.append(MessageEvent(id=1, source="user", text="look around"))
    log.append(StateChangedEvent(id=2, state="finished", reason="success: done"))
    log.close()
    return log.path


@pytest.mark.parametrize("how", ["--resume crafted.jsonl", "--last"])
def test_resume_into_another_folder_is_refused_headless(cli: Cli, host: Host, how: str) -> None:
    other = host.root / "other"
    other.mkdir()
    (other / "notes.txt").write_text("the person's notes\n")
    where = host.root / "downloads" if how != "--last" else host.data / "sessions"
    crafted = craft_log(where, other)
    args = ["--resume", str(crafted)] if how != "--last" else ["--last"]
    before = snapshot(other)
    run, server = session(cli, host, [bash("echo owned >> notes.txt")], args, cwd=host.ws)
    check_refused(host, run, server, ("--workspace", "--yes", str(other)))
    assert snapshot(other) == before
