"""Every CLI command prints untrusted text (the model's words, file names, outputs, rules) with
terminal escapes and control characters removed: an OSC 52 clipboard write, `CSI 2J`, an
8-bit CSI (0x9b) never reach the person's terminal as such.

One session (per pytest worker) carries them everywhere: the model's text and finish message,
a file name and its contents written by the editor and by the shell, the shell's output; the
user config holds a rule with them. Then each command's raw stdout and stderr bytes are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from attack_support import DOCUMENTED, Cli, Host, Run, answers, bash, create, session

OSC52 = "\x1b]52;c;ZXZpbA==\x07"
CLEAR = "\x1b[2J"
CSI8 = "\x9b31m"
NASTY = f"{OSC52}{CLEAR}{CSI8}"
SHELL_NASTY = r"\033]52;c;ZXZpbA==\007\033[2J\233" + r"31m\302\23331m"
"""The same in printf's notation: OSC 52, CSI 2J, a raw 0x9b byte and U+009B in UTF-8."""

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\udc80-\udc9f]")
"""C0 (less tab and newline), DEL, C1, and bytes 0x80-0x9f that are not UTF-8 (decoded with
surrogateescape)."""


def controls(data: bytes) -> list[str]:
    """The control characters in `data`, as reprs (empty: clean)."""
    text = data.decode("utf-8", errors="surrogateescape").replace("\r\n", "\n")
    return sorted({repr(found) for found in CONTROL.findall(text)})


@pytest.fixture(scope="module")
def recorded(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> tuple[Host, str, Run]:
    """A session full of escapes: (its host, its session id, the headless run)."""
    host = Host(tmp_path_factory.mktemp("escapes"))
    (host.ws / "a.txt").write_text("one\n")
    name = f"n{NASTY}.txt"
    steps: list[dict[str, Any]] = [
        {"text": f"I will look {NASTY}", **create(host.ws / name, f"body {NASTY}\n")},
        bash(f"printf '{SHELL_NASTY}\\n'; printf 'x\\n' > \"$(printf 'f{SHELL_NASTY}.txt')\""),
        bash(f"printf 'changed {SHELL_NASTY}\\n' >> a.txt"),
    ]
    run, server = session(cli, host, steps)
    assert run.code == 0, run.text
    assert len(answers(server)) == 3
    session_id = host.logs()[-1].stem
    return host, session_id, run


def nasty_config(folder: Path) -> Path:
    """A user config folder whose allow rule carries the escapes (TOML \\u escapes)."""
    folder.mkdir(exist_ok=True)
    (folder / "config.toml").write_text(
        '[security]\nallow = ["run:echo \\u001b]52;c;ZXZpbA==\\u0007 \\u001b[2J \\u009b31m"]\n'
    )
    return folder


COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "checkpoints": lambda sid: ["checkpoints", sid],
    "diff --step": lambda sid: ["diff", sid, "--step", "1"],
    "diff --from --to": lambda sid: ["diff", sid, "--from", "0", "--to", "3"],
    "sessions": lambda sid: ["sessions"],
    "sessions --json": lambda sid: ["sessions", "--json"],
    "sessions show": lambda sid: ["sessions", "show", sid],
    "replay --headless": lambda sid: ["replay", sid, "--headless"],
    "policy rules": lambda sid: ["policy", "rules"],
    "policy check": lambda sid: ["policy", "check", f"echo {NASTY}"],
    "rewind --to 0 --yes": lambda sid: ["rewind", sid, "--to", "0", "--yes"],
}


def test_the_headless_run_prints_no_escapes(recorded: tuple[Host, str, Run]) -> None:
    _, _, run = recorded
    assert not controls(run.stdout + run.stderr), controls(run.stdout + run.stderr)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_cli_command_prints_no_escapes(
    cli: Cli, recorded: tuple[Host, str, Run], command: str
) -> None:
    host, session_id, _ = recorded
    argv = COMMANDS[command](session_id)
    env = host.env()
    if command.startswith("policy"):  # a user config whose rule holds them (only here)
        env["WORKBENCH_CONFIG_DIR"] = str(nasty_config(host.root / "nasty-config"))
    run = cli.run(argv, env, host.ws if command != "rewind --to 0 --yes" else host.root)
    assert not run.timed_out and run.code in DOCUMENTED, f"exit {run.code}:\n{run.text[-2000:]}"
    assert (run.stdout + run.stderr).strip(), f"{command} printed nothing:\n{run.text[-2000:]}"
    found = controls(run.stdout + run.stderr)
    assert not found, f"`workbench {' '.join(argv[:2])}` printed {found}:\n{run.text[-1500:]!r}"


def test_the_undo_of_a_rewind_prints_no_escapes(cli: Cli, recorded: tuple[Host, str, Run]) -> None:
    host, session_id, _ = recorded
    first = cli.run(["rewind", session_id, "--to", "0", "--yes"], host.env(), host.root)
    undo = cli.run(["rewind", session_id, "--undo", "--yes"], host.env(), host.root)
    for run in (first, undo):
        assert run.code == 0, run.text
        assert not controls(run.stdout + run.stderr), run.text[-1500:]
