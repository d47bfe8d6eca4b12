"""Every line workbench prints is safe: a session whose file names, file contents, command
output, task and model text hold terminal escapes (an OSC 52 clipboard write, CSI 2J, an
OSC 8 link, a carriage return, 8-bit CSI, raw and as UTF-8) prints none of them from any
command. The check is on the raw bytes of stdout and stderr, decoded exactly."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from headless_harness import bash, cli_env, finish, json_lines, run_cli

from workbench.testing.llm_server import ScriptedLLMServer

EVIL = (
    "\x1b]52;c;aGFja2Vk\x07 \x1b[2J \x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\ "
    "\r \u009b2J"
)
"""What the model says and the task holds (a JSON string carries no raw byte)."""
NAMES = (
    r"$'o\e]52;c;aGk=\a' $'c\e[2J' $'l\e]8;;http://x\e\\k\e]8;;\e\\' $'r\rr' "
    r"$'b\x9b2J' $'u\xc2\x9b2J'"
)
CONTENT = r"$'\e]52;c;aGk=\a \e[2J \e]8;;http://x\e\\k\e]8;;\e\\ \r \x9b2J \xc2\x9b2J\n'"
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""A control character, C1 included, or a byte that is not UTF-8 (decoded as a surrogate)."""


def raw(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """Run `workbench ARGS`: its exit code, and stdout + stderr decoded byte for byte."""
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
    done = subprocess.run(
        [sys.executable, "-m", "workbench", *args],
        env=full_env | env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
        check=False,
    )
    text = (done.stdout + b"\n" + done.stderr).decode("utf-8", "surrogateescape")
    return done.returncode, text


@pytest.mark.timeout(300)
def test_no_command_prints_an_escape_from_a_session(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    steps = [
        bash(f'for n in {NAMES}; do printf %s {CONTENT} > "$n"; done; printf %s {CONTENT}'),
        bash(f"printf %s {CONTENT} >> $'c\\e[2J'; rm $'r\\rr'"),
        {"text": EVIL},
        finish(EVIL),
    ]
    with ScriptedLLMServer(steps) as server:
        env = cli_env(tmp_path, server.base_url)
        argv = ["--headless", "--json", "--on-confirm", "approve", "-t", f"task {EVIL}"]
        run = run_cli(argv, env, workspace, 120)
    assert run.returncode == 0, run.stderr
    summary = json_lines(run.stdout)[-1]
    log, session_id = summary["log"], summary["session_id"]
    names = {p.name for p in workspace.iterdir()}  # reached the disk as written:
    assert {"o\x1b]52;c;aGk=\x07", "c\x1b[2J", "b\udc9b2J"} <= names, names
    commands = [
        ["checkpoints", log],
        ["diff", log, "--step", "1"],
        ["diff", log, "--step", "2"],
        ["diff", log, "--from", "0", "--to", "2"],
        ["rewind", log, "--to", "0", "--yes"],
        ["rewind", log, "--undo", "--yes"],
        ["rewind", log, "--to", "1"],  # asks: with nobody at a terminal, refuses (lists first)
        ["sessions"],
        ["sessions", "show", session_id],
        ["replay", log, "--headless"],
        ["replay", log, "--headless", "--rerun", "--on-confirm", "approve"],
        ["policy", "check", f"printf {EVIL}"],
        ["sessions", "show", f"no-such {EVIL}"],
        ["checkpoints", f"{EVIL}.jsonl"],
    ]
    printed = {}
    for argv in commands:
        code, text = raw(argv, env, workspace)
        printed[" ".join(argv[:2])] = text
        found = sorted({repr(c) for c in UNSAFE.findall(text)})
        assert not found, (argv, code, found, text[-2000:])
    # Named without their escapes; a name that is not UTF-8 still gets its step recorded.
    listed = printed["checkpoints " + log]
    assert "[1]" in listed and "+ o\n" in listed and "+ b\ufffd2J" in listed, listed
    assert "@@ -0,0 +1 @@\n+" in printed["diff " + log]
