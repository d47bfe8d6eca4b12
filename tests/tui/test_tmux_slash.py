"""Slash commands in a real terminal (tmux, 80x24), issue 23 item 8: typing `/` lists the
commands above the input box (the status bar and the footer keep their rows), tab completes the
picked one, a mistyped command is refused and never reaches the model, `/quit` quits."""

from __future__ import annotations

import os
from pathlib import Path

from test_tmux import WORKBENCH, Tmux, tmux  # noqa: F401  (the fixture)

from workbench.testing.llm_server import ScriptedLLMServer


def test_the_slash_command_list_at_80x24(tmp_path: Path, tmux: Tmux) -> None:  # noqa: F811
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = ScriptedLLMServer({"steps": [], "default": {"text": "ok"}})
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
        tmux.wait_for(lambda rows: "f1 Help" in rows[-1], "the footer")
        keys("/")
        first = ["/help", "/new", "/resume", "/sessions", "/rewind", "/diff"]

        def names(rows: list[str]) -> list[str]:
            return [row.split()[0] for row in rows if row.lstrip().startswith("/")]

        # The input box's greyed completion can show a moment before the list: wait for both.
        tmux.wait_for(lambda rows: names(rows) == first, "the list")
        rows = tmux.screen()
        listed = [i for i, row in enumerate(rows) if row.lstrip().startswith("/")]
        assert "… 6 more" in rows[listed[-1] + 1] and "tab: complete" in rows[listed[-1] + 2]
        assert rows[listed[-1] + 3].startswith("╭─") and rows[-3].startswith("╰─"), rows
        assert rows[-4].startswith("│ /help "), rows  # the input box: the rest of /help, greyed
        assert "f1 Help" in rows[-1] and "sbx" in rows[-2], rows  # each still on its row
        assert not any(row.endswith("…") for row in rows[listed[0] : listed[-1] + 1]), rows
        keys("r", "e")
        tmux.wait_for(lambda rows: not any(" /help " in row for row in rows), "fewer")
        rows = tmux.screen()
        assert [row.split()[0] for row in rows if row.lstrip().startswith("/r")] == [
            "/resume", "/rewind"
        ], rows  # fmt: skip
        keys("Down", "Tab")
        tmux.wait_for(lambda rows: rows[-4].startswith("│ /rewind "), "tab")
        keys(*["BSpace"] * 10)  # empty the box
        tmux.wait_for(lambda rows: "Type a task" in rows[-4], "an empty box")
        keys("/hlep me", "Enter")
        tmux.wait_for(lambda rows: any("No command /hlep" in row for row in rows), "refused")
        assert tmux.screen()[-4].startswith("│ /hlep me "), tmux.screen()  # kept, to fix
        keys(*["BSpace"] * 10)
        tmux.wait_for(lambda rows: "Type a task" in rows[-4], "an empty box")
        keys("/quit", "Enter")
        tmux.wait_for(lambda rows: any("EXITED 0" in row for row in rows), "the exit", 20)
    finally:
        server.stop()
    assert server.requests == []  # nothing reached the model
