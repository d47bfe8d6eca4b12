"""Slash commands as typed (issue 23, item 8), parsed without Textual: commands, their
arguments, text that only looks like one (refused, with the closest command), the literal
escapes `//` and a leading space, and completion."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.tui.slash import COMMANDS, Refused, Run, Send, completions, help_rows, parse

ROOT = Path(__file__).resolve().parents[2]
PEERS = ["help", "new", "resume", "sessions", "rewind", "diff", "model", "rules", "settings",
         "condense", "cost", "quit"]  # fmt: skip


def test_the_peers_commands_are_all_there() -> None:
    assert [command.name for command in COMMANDS] == PEERS


@pytest.mark.parametrize(
    ("typed", "name", "arg"),
    [
        ("/help", "help", ""),
        ("  /new  ", "new", ""),  # stripped: a leading space is the literal escape, see below
        ("/HELP", "help", ""),
        ("/clear", "new", ""),
        ("/exit", "quit", ""),
        ("/resume 2026-11-26", "resume", "2026-11-26"),
        ("/model   openai/gpt-4o ", "model", "openai/gpt-4o"),
    ],
)
def test_a_command(typed: str, name: str, arg: str) -> None:
    if typed[:1].isspace():
        assert parse(typed) == Send("/new")
        return
    parsed = parse(typed)
    assert isinstance(parsed, Run) and (parsed.command.name, parsed.arg) == (name, arg)


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        ("//etc/hosts is empty", "/etc/hosts is empty"),
        (" /help me", "/help me"),
        ("\n/help", "/help"),
        ("fix /usr/bin/x", "fix /usr/bin/x"),
        ("hello", "hello"),
    ],
)
def test_text_that_is_sent(typed: str, sent: str) -> None:
    assert parse(typed) == Send(sent)


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("/hlep", "No command /hlep: nothing was sent. Did you mean /help?"),
        ("/nwe", "Did you mean /new?"),
        ("/re", "Did you mean /resume?"),
        ("/etc/hosts is empty", "No command /etc/hosts: nothing was sent."),
        ("/new session please", "/new takes no argument."),
        ("/help\nand more", "/help takes a single line."),
    ],
)
def test_text_that_is_refused(typed: str, said: str) -> None:
    parsed = parse(typed)
    assert isinstance(parsed, Refused) and said in parsed.why, parsed
    assert "// or a space" in parsed.why  # how to send it as text after all


def test_completion() -> None:
    assert [c.name for c in completions("/")] == PEERS
    assert [c.name for c in completions("/re")] == ["resume", "rewind"]
    assert [c.name for c in completions("/cl")] == ["new"]  # by its alias
    assert completions("/resume ") == completions("//x") == completions("hi") == []


def test_help_lists_every_command_and_the_escape() -> None:
    usages = [usage for usage, _ in help_rows()]
    assert [u.split()[0] for u in usages[: len(PEERS)]] == [f"/{name}" for name in PEERS]
    assert "/resume [ID]" in usages and any("//" in usage for usage in usages)


def test_the_parser_imports_no_textual() -> None:
    script = (
        "import json, sys\nimport workbench.tui.slash\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'textual')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []
