"""Defects of issue 14 that only a real terminal shows: the real `workbench` command in tmux.

A terminal's reply to a query must never reach the input box (tmux answers a device-attributes
query by typing `ESC [?1;2c`); keys sent in one burst keep their order, ctrl+j included; a
terminal closed under the app (SIGHUP) leaves no sandbox folder or log behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_tmux import WORKBENCH, Tmux, tmux  # noqa: F401  (the fixture)
from waiting import wait_until

from workbench.testing.llm_server import ScriptedLLMServer

CHART = (
    "import io\n"
    "from PIL import Image as P\n"
    "from IPython.display import Image, display\n"
    "b = io.BytesIO()\n"
    "P.new('RGB', (320, 200), (200, 60, 40)).save(b, 'PNG')\n"
    "display(Image(data=b.getvalue()))\n"
)


def _env(tmp_path: Path, base_url: str) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "LLM_MODEL": "openai/scripted",
        "LLM_BASE_URL": base_url,
        "LLM_API_KEY": "sk-tmux-test",
        "TERM": "xterm-256color",
        "TMPDIR": str(tmp_path / "tmp"),
        "PATH": os.environ.get("PATH", ""),
    }


@pytest.fixture
def started(tmp_path: Path, tmux: Tmux) -> Iterator[Any]:  # noqa: F811
    """Start `workbench` in tmux at a size, against a scripted server; yields a starter."""
    servers: list[ScriptedLLMServer] = []

    def start(script: Any, size: tuple[int, int] = (80, 24)) -> Tmux:
        server = ScriptedLLMServer(script)
        server.start()
        servers.append(server)
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        (tmp_path / "tmp").mkdir(exist_ok=True)
        env = _env(tmp_path, server.base_url)
        # The tmux server inherits this process's environment; a COLUMNS/LINES there wins
        # over the pane's size in Textual.
        env.update(COLUMNS=str(size[0]), LINES=str(size[1]))
        setenv = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
        tmux.run(
            "new-session", "-d", "-s", "wb", "-x", str(size[0]), "-y", str(size[1]), *setenv,
            f"cd {workspace} && exec {WORKBENCH} --workspace {workspace}",
        )  # fmt: skip
        tmux.wait_for(lambda rows: any("No task yet" in row for row in rows), "the first paint")
        return tmux

    yield start
    for server in servers:
        server.stop()


def _input_rows(rows: list[str]) -> list[str]:
    """The input box's rows: inside the last box above the status bar."""
    status = len(rows) - 2
    top = max(i for i, row in enumerate(rows[:status]) if row.startswith("╭"))
    return [row.strip("│ ") for row in rows[top + 1 : status - 1]]


@pytest.mark.timeout(120)
def test_no_terminal_reply_reaches_the_input_box_when_an_image_is_drawn(
    started: Any,
) -> None:
    """Defect 3: the first image drawn asked the terminal what it can draw; tmux typed its
    answer, `[?1;2c`, into the input box."""
    script = {
        "steps": [
            {
                "tool_calls": [
                    {
                        "name": "execute_ipython_cell",
                        "arguments": {"code": CHART, "security_risk": "LOW"},
                    }
                ]
            },
            {"tool_calls": [{"name": "finish", "arguments": {"message": "chart drawn"}}]},
        ]
    }
    term = started(script)
    term.run("send-keys", "-t", "wb", "draw a chart", "Enter")
    # At 80x24 the tool panes are folded to one row: F4 opens Jupyter's, with the chart.
    term.wait_for(lambda rows: any("jupyter img " in row for row in rows), "the image", 90)
    term.run("send-keys", "-t", "wb", "F4")
    term.wait_for(lambda rows: sum("▀" in row for row in rows) >= 4, "the chart", 90)
    term.run("send-keys", "-t", "wb", "-l", "typed after")
    term.wait_for(lambda rows: "finished" in rows[-2], "the finish", 60)
    # A barrier: keys sent now reach the input box after anything the terminal answered
    # earlier, so once " end" shows, a reply to the image's question would have shown too.
    term.run("send-keys", "-t", "wb", "-l", " end")
    term.wait_for(lambda rows: "typed after end" in "".join(rows), "the barrier keys")
    rows = term.screen()
    assert not any("?1;2c" in row or "[?" in row for row in rows), "\n".join(rows)
    assert _input_rows(rows) == ["typed after end"], "\n".join(rows)


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
def test_keys_sent_in_one_burst_keep_their_order(started: Any, size: tuple[int, int]) -> None:
    """Defect 10: `first` ^J `second` ^J `third` in one burst gave `firstsecondthird` and two
    empty lines."""
    term = started({"steps": [], "default": {"text": "ok"}}, size)
    term.run("send-keys", "-t", "wb", "first", "C-j", "second", "C-j", "third")
    term.run("send-keys", "-t", "wb", "-l", " end")  # a barrier: the burst is all in before it
    term.wait_for(lambda rows: "third end" in "".join(rows), "the keys")
    rows = term.screen()
    assert _input_rows(rows) == ["first", "second", "third end"], "\n".join(rows)


@pytest.mark.timeout(120)
def test_a_terminal_closed_under_the_app_leaves_no_sandbox_folder(
    started: Any, tmp_path: Path
) -> None:
    """Defect 14: closing the terminal (SIGHUP) killed the app before it closed the sandbox:
    its temp folder and log stayed behind."""
    term = started({"steps": [], "default": {"text": "ok"}})
    term.wait_for(lambda rows: "sbx ✓" in rows[-2], "the sandbox", 60)
    temp = tmp_path / "tmp"
    assert list(temp.glob("sandbox-local-*")), "the sandbox's folder is where it is looked for"
    pid = int(term.run("display-message", "-p", "-t", "wb", "#{pane_pid}").strip())
    term.run("kill-server")  # the terminal goes away: the app gets SIGHUP
    wait_until(lambda: not Path(f"/proc/{pid}").exists(), 30, "the app to end")
    # The sandbox server follows its parent's end, a moment later.
    wait_until(lambda: not list(temp.iterdir()), within_s=20, what="the sandbox's folder gone")


def test_no_to_a_start_question_says_why_nothing_started(tmp_path: Path, tmux: Tmux) -> None:  # noqa: F811
    """A user trial: "No, quit" on "Work in a home folder?" left the shell with no word (exit
    13, nothing printed)."""
    home_like = tmp_path / "someone"
    (home_like / ".ssh").mkdir(parents=True)
    (home_like / ".bashrc").write_text("")
    (tmp_path / "tmp").mkdir()
    env = _env(tmp_path, "http://127.0.0.1:9/v1")  # never asked: nothing starts
    setenv = [arg for name, value in env.items() for arg in ("-e", f"{name}={value}")]
    tmux.run(
        "new-session", "-d", "-s", "wb", "-x", "80", "-y", "24", *setenv,
        f"cd {home_like} && {WORKBENCH} --workspace {home_like}; echo EXIT $?; sleep 60",
    )  # fmt: skip
    tmux.wait_for(lambda rows: any("Work in a home folder?" in r for r in rows), "the question")
    tmux.run("send-keys", "-t", "wb", "n")
    tmux.wait_for(lambda rows: any("EXIT 13" in row for row in rows), "the exit")
    text = "\n".join(tmux.screen())
    assert "not started: you answered no" in text, text
