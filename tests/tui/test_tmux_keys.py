"""Keys in a real terminal (tmux), against the scripted LLM server (issue 14, friction 4, 5, 9):
the welcome names the workspace; F1 opens the help and esc closes it; ctrl+q asks while the
agent works and n stays; esc esc, as a terminal sends it, interrupts the agent; r on a
confirmation takes a reason that reaches the session log; ctrl+q when idle quits at once."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from test_tmux import WORKBENCH, Tmux, tmux  # noqa: F401  (the fixture)

from workbench.testing.llm_server import ScriptedLLMServer

TICKS = "for i in $(seq 60); do echo tick $i; sleep 1; done"


def _bash(command: str) -> dict[str, object]:
    call = {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
    return {"tool_calls": [call]}


SCRIPT = {
    "steps": [
        _bash(TICKS),
        _bash("rm -rf ./junk"),
        {"tool_calls": [{"name": "finish", "arguments": {"message": "left it"}}]},
    ],
    "default": {"text": "ok"},
}


def test_help_quit_escape_and_a_reason_in_tmux(tmp_path: Path, tmux: Tmux) -> None:  # noqa: F811
    workspace = tmp_path / "ws"
    (workspace / "junk").mkdir(parents=True)
    server = ScriptedLLMServer(SCRIPT)
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
    keys = lambda *names: tmux.run("send-keys", "-t", "wb", *names)  # noqa: E731
    try:
        tmux.run(
            "new-session", "-d", "-s", "wb", "-x", "80", "-y", "24", *setenv,
            f"cd {workspace} && {WORKBENCH} --workspace {workspace}; echo EXITED $?; sleep 30",
        )  # fmt: skip
        tmux.wait_for(lambda rows: any("No task yet" in row for row in rows), "the welcome")
        rows = tmux.screen()
        assert rows[0].startswith("╭─ conversation · …") and "/ws ─" in rows[0]  # its end
        shown = [row.split("│")[1].removeprefix("workspace  ").rstrip() for row in rows
                 if row.startswith("│workspace  ")]  # fmt: skip
        # The whole path, or its end when it is longer than the row (a deep temp folder).
        assert shown and str(workspace).endswith(shown[0].removeprefix("…")), shown
        assert any("esc esc" in row for row in rows)
        tmux.wait_for(lambda rows: "f1 Help" in rows[-1], "the footer")
        keys("F1")
        tmux.wait_for(lambda rows: any("Keys  ·  esc, F1 or ? closes" in r for r in rows), "help")
        keys("Escape")
        tmux.wait_for(lambda rows: any("No task yet" in row for row in rows), "help closed")
        tmux.wait_for(lambda rows: "sbx ✓" in rows[-2], "the sandbox", 60)
        keys("count", "Enter")
        tmux.wait_for(lambda rows: any("tick 2" in row for row in rows), "the command")
        keys("C-q")
        tmux.wait_for(lambda rows: any("Quit while the agent is" in r for r in rows), "the ask")
        keys("n")
        tmux.wait_for(lambda rows: not any("Quit while" in r for r in rows), "staying")
        assert "running" in tmux.screen()[-2]
        keys("Escape", "Escape")  # one burst, as a person pressing it twice quickly
        tmux.wait_for(lambda rows: "stopped" in rows[-2], "the interrupt")
        keys("go on", "Enter")
        tmux.wait_for(lambda rows: any("r reject, say why" in r for r in rows), "the panel")
        time.sleep(0.7)  # scripted delay: a person reads first (letters sooner are typing)
        keys("r")
        tmux.wait_for(lambda rows: any("Reject, and tell the" in r for r in rows), "the reason")
        keys("keep junk, it holds test data", "Enter")
        tmux.wait_for(lambda rows: "finished" in rows[-2], "the finish")
        keys("C-q")  # idle: no question
        tmux.wait_for(lambda rows: any("EXITED 0" in row for row in rows), "the exit", 20)
    finally:
        server.stop()
    assert (workspace / "junk").is_dir()
    (log,) = (tmp_path / "data" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    decisions = [e for e in events if e["kind"] == "confirmation_decision"]
    assert decisions[-1]["reason"].endswith("the person said: keep junk, it holds test data")
    states = [e["state"] for e in events if e["kind"] == "state"]
    assert "stopped" in states and states[-1] == "finished"
