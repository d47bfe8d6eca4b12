"""Slash commands typed in the input box (`/help`, `/new`, ...): the table, the parsing of what
was typed, and completion. No Textual here: `slash_run.py` carries a parsed command out.

Text that starts with `/` is a command or an error (never sent to the model by mistake); `//`
or a leading space sends the text as it is, one `/` kept.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    """One command: its name (without `/`), what it does, its argument (if any) and aliases."""

    name: str
    help: str
    arg: str = ""
    """How its optional argument is shown in help (e.g. "[ID]"); empty: it takes none."""
    aliases: tuple[str, ...] = ()
    key: str = ""
    """The key binding that does the same, shown in help (e.g. "ctrl+n")."""


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Slash commands and every key binding", key="f1"),
    SlashCommand(
        "new",
        "End this session; the next message starts a new one",
        aliases=("clear",),
        key="ctrl+n",
    ),
    SlashCommand(
        "resume",
        "Pick a saved session to continue (with an ID: that session)",
        arg="[ID]",
        key="ctrl+o",
    ),
    SlashCommand("sessions", "Browse the saved sessions", key="ctrl+o"),
    SlashCommand(
        "rewind",
        "Files back to the selected cell's step, then branch from it",
        key="r on a cell",
    ),
    SlashCommand("diff", "What this session changed in the workspace, as a diff"),
    SlashCommand("model", "Change the model (in settings; a NAME is filled in)", arg="[NAME]"),
    SlashCommand("rules", "The confirmation rules in effect; remove one", key="ctrl+r"),
    SlashCommand("settings", "Model, confirmation, streaming, theme, step limit", key="ctrl+s"),
    SlashCommand("condense", "Condense the older history before the next LLM call"),
    SlashCommand("cost", "Steps, tokens and cost of this session"),
    SlashCommand(
        "quit", "Quit (asks first while the agent works)", aliases=("exit",), key="ctrl+q"
    ),
)
LITERAL_HINT = "To send text that starts with /, begin it with // or a space."


@dataclass(frozen=True)
class Send:
    """Not a command: send `text` to the agent."""

    text: str


@dataclass(frozen=True)
class Run:
    """Run `command` with `arg` (empty: none)."""

    command: SlashCommand
    arg: str = ""


@dataclass(frozen=True)
class Refused:
    """Text starting with `/` that is no command (or misuses one): `why`, and nothing is sent."""

    why: str


def find(name: str) -> SlashCommand | None:
    """The command called `name` (or aliased so), without its `/`."""
    for command in COMMANDS:
        if name == command.name or name in command.aliases:
            return command
    return None


def closest(word: str) -> SlashCommand | None:
    """The command `word` most likely meant: the first it begins, else the nearest spelling."""
    word = word.lower()
    starts = [
        c for c in COMMANDS if c.name.startswith(word) or any(a.startswith(word) for a in c.aliases)
    ]
    if word and starts:
        return starts[0]
    names = {name: c for c in COMMANDS for name in (c.name, *c.aliases)}
    near = difflib.get_close_matches(word, list(names), n=1, cutoff=0.5)
    return names[near[0]] if near else None


def parse(raw: str) -> Send | Run | Refused:
    """What the text `raw` of the input box (as typed, not stripped) asks for."""
    text = raw.strip()
    if raw[:1].isspace() or not text.startswith("/"):
        return Send(text)  # a leading space: literal, even before a /
    if text.startswith("//"):
        return Send(text[1:])
    first, _, after = text.partition("\n")
    name, _, arg = first[1:].partition(" ")
    name, arg = name.lower(), arg.strip()
    command = find(name)
    if command is None:
        guess = closest(name)
        hint = f" Did you mean /{guess.name}?" if guess is not None else ""
        shown = f"/{name}" if len(name) <= 30 else f"/{name[:29]}…"
        said = f"No command {shown}: nothing was sent.{hint} /help lists them."
        return Refused(f"{said} {LITERAL_HINT}")
    if after.strip():
        return Refused(f"/{command.name} takes a single line. {LITERAL_HINT}")
    if arg and not command.arg:
        return Refused(f"/{command.name} takes no argument. {LITERAL_HINT}")
    return Run(command, arg)


def completions(text: str) -> list[SlashCommand]:
    """The commands that complete `text` while it is being typed (`/` and part of a name, on
    one line, nothing after it yet)."""
    if not text.startswith("/") or text.startswith("//") or any(c.isspace() for c in text):
        return []
    word = text[1:].lower()
    return [
        command
        for command in COMMANDS
        if command.name.startswith(word) or any(a.startswith(word) for a in command.aliases)
    ]


def help_rows() -> tuple[tuple[str, str], ...]:
    """Every command as (its usage, what it does and its key), for the help screen."""
    rows = []
    for command in COMMANDS:
        usage = " ".join(part for part in (f"/{command.name}", command.arg) if part)
        also = [f"/{alias}" for alias in command.aliases]
        if command.key:
            also.append(command.key)
        rows.append((usage, command.help + (f" ({', '.join(also)})" if also else "")))
    rows.append(("//text or ' /text'", "Send text that starts with / to the agent as it is"))
    return tuple(rows)
