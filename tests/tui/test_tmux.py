"""The real `workbench` command in a real terminal (tmux, 80x24), as a new user starts it:
type a task before start-up is done, watch it run against the scripted LLM server, read the
screen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from waiting import wait_until

from workbench.testing.llm_server import ScriptedLLMServer

WORKBENCH = Path(sys.executable).with_name("workbench")


class Tmux:
    """One detached tmux session on its own server socket."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        """A tmux command; its stdout."""
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        )
        return done.stdout

    def screen(self) -> list[str]:
        """The visible rows, as text."""
        return self.run("capture-pane", "-p", "-t", "wb").splitlines()

    def wait_for(self, check: Callable[[list[str]], bool], what: str, timeout: float = 60) -> None:
        """Poll the screen until `check` holds; on a timeout, say what the screen showed."""
        rows: list[str] = []

        def shown() -> bool:
            rows[:] = self.screen()
            return check(rows)

        try:
            wait_until(shown, timeout, what, poll_s=0.1)  # each look runs a tmux command
        except AssertionError as exc:
            raise AssertionError(f"{exc}; screen:\n" + "\n".join(rows)) from None


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    assert shutil.which("tmux"), "tmux is needed (scripts/test installs it)"
    session = Tmux(f"wb-test-{uuid.uuid4().hex[:8]}")
    yield session
    subprocess.run(["tmux", "-L", session.socket, "kill-server"], capture_output=True, check=False)


def test_a_first_task_in_tmux_at_80x24(tmp_path: Path, tmux: Tmux) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    command = "for i in 1 2 3; do echo line $i; sleep 0.3; done; bash hi.sh"
    script = [
        {
            "text": "I'll write the script, then run it.",
            "tool_calls": [
                {
                    "name": "str_replace_editor",
                    "arguments": {
                        "command": "create",
                        "path": str(workspace / "hi.sh"),
                        "file_text": "echo hi\n",
                        "security_risk": "LOW",
                    },
                }
            ],
        },
        {
            "tool_calls": [
                {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
            ]
        },
        {"tool_calls": [{"name": "finish", "arguments": {"message": "hi.sh prints hi."}}]},
    ]
    server = ScriptedLLMServer(script)
    server.start()
    env = {
        "HOME": str(tmp_path / "home"),
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "LLM_MODEL": "openai/scripted",
        "LLM_BASE_URL": server.base_url,
        "LLM_API_KEY": "sk-tmux-test",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
    }
    setenv = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
    try:
        tmux.run(
            "new-session", "-d", "-s", "wb", "-x", "80", "-y", "24", *setenv,
            f"cd {workspace} && {WORKBENCH} --workspace {workspace}; sleep 30",
        )  # fmt: skip
        tmux.wait_for(lambda rows: any("No task yet" in row for row in rows), "the first paint")
        tmux.run("send-keys", "-t", "wb", "write hi.sh that prints hi", "Enter")
        # litellm takes seconds to import: the task says it waits, where it will appear.
        tmux.wait_for(
            lambda rows: "Starting once the LLM client and the sandbox" in rows[1],
            "the waiting task",
        )
        tmux.wait_for(lambda rows: "finished" in rows[-2], "the session to finish")
        # At 80x24 the tool panes are one folded row until opened: F3 opens the shell.
        tmux.wait_for(lambda rows: any("shell ✓ exit 0" in r for r in rows), "the folded row", 2)
        tmux.run("send-keys", "-t", "wb", "F3")
        # The command's last line may trail its result by a flush (50 ms): a person sees it
        # at once, and so must this screen within a second.
        tmux.wait_for(
            lambda rows: any(row.strip("│ ▂▃▄▅▆▇█") == "hi" for row in rows), "the last line", 1
        )
        # A start-up notice (a toast) may still cover part of the conversation: it goes.
        tmux.wait_for(
            lambda rows: any("✔ hi.sh prints hi." in row for row in rows), "the toast gone", 20
        )
        rows = tmux.screen()
    finally:
        server.stop()
    assert len(rows) == 24
    assert rows[0].startswith("╭─ conversation ") and rows[0].endswith("╮")
    assert any("✔ hi.sh prints hi." in row for row in rows), "\n".join(rows)  # whole
    assert any("■ finished · success" in row for row in rows)
    # The status bar and the footer each have their own row, nothing drawn over them.
    status = rows[-2]
    assert status.split("│")[1:3] == [" finished ", " 3/100 "], status
    assert "llm ✓" in status and "sbx ✓" in status
    assert "^p palette" in rows[-1]
    # The shell pane shows the command's last line.
    shell_top = next(i for i, row in enumerate(rows) if row.startswith("╭─ shell "))
    assert "✓ exit 0" in rows[shell_top + 1]
    shell_rows = [row.strip("│ ▂▃▄▅▆▇█") for row in rows[shell_top + 2 : shell_top + 6]]
    assert shell_rows[-1] == "hi", rows
    assert (workspace / "hi.sh").read_text() == "echo hi\n"
    sessions = list((tmp_path / "data" / "sessions").glob("*.jsonl"))
    assert len(sessions) == 1
    assert "sk-tmux-test" not in sessions[0].read_text()
    assert json.loads(sessions[0].read_text().splitlines()[-1])["kind"]
