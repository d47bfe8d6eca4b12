"""Defect 12 of issue 14: every command that prints a list or a report, its output piped into
a reader that has already gone (`workbench sessions | head`), ends quietly: exit 0, nothing on
stderr, no BrokenPipeError traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from headless_harness import MODEL, ROOT, cli_env

from workbench.events import MessageEvent, StateChangedEvent
from workbench.session.log import SessionLog, make_header

SID = "20260301-101500-abc123"
COMMANDS = [
    ["sessions"],
    ["sessions", "--json"],
    ["sessions", "show", SID[:8]],
    ["sessions", "export", SID[:8], "-o", "-"],
    ["checkpoints", SID[:8]],
    ["policy", "rules"],
    ["replay", SID[:8]],
    ["--help"],
    ["sessions", "--help"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_output_into_a_closed_pipe_is_no_traceback(tmp_path: Path, command: list[str]) -> None:
    sessions = tmp_path / "data" / "sessions"
    log = SessionLog.create(sessions, make_header(SID, str(tmp_path), MODEL))
    for event in (
        StateChangedEvent(id=1, state="running"),
        MessageEvent(id=2, source="user", text="list the files"),
        StateChangedEvent(id=3, state="finished", reason="success"),
    ):
        log.append(event)
    log.close()
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **cli_env(tmp_path, "http://x:9")}
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails
    try:
        done = subprocess.run(
            [sys.executable, "-m", "workbench", *command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=tmp_path,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == "", done.stderr
    assert done.returncode == 0
