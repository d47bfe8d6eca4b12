"""What the checkpoint commands (`checkpoints`, `rewind`, `diff`) share: their exit codes,
their parser, finding the session, and printing changes.

Exit codes: 0 done, 1 the person said no, 2 bad input (unknown session, step out of range,
workspace moved), 8 the store failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.checkpoints import Changes
from workbench.checkpoints.points import (
    CheckpointCommandError,
    SessionCheckpoints,
    find_session,
    load_checkpoints,
)

if TYPE_CHECKING:
    pass

USAGE = 2
STEP_HELP = (
    "the step, numbered as headless output, `workbench replay` and `workbench checkpoints` "
    "show it ([N]: the Nth action of the session; 0: before the first)"
)
STEPS_EPILOG = (
    "A step is one action of the agent; step N is the Nth of the session (a resumed session "
    "goes on from its parent's numbers), the [N] that headless output, `workbench replay` and "
    "`workbench checkpoints` print. Steps that changed no files have no checkpoint of their "
    "own: they are the workspace of the checkpoint before them."
)

DECLINED = 1
STORE_FAILED = 8


def changes_text(changes: Changes, limit: int = 20) -> list[str]:
    """The changes as indented lines, at most `limit` of each kind."""
    return ["  " + line for line in changes.lines(limit)]


def changes_json(changes: Changes) -> dict[str, Any]:
    """The changes as a JSON object's fields."""
    return {
        "added": list(changes.added),
        "changed": list(changes.changed),
        "deleted": list(changes.deleted),
    }


def confirm(question: str) -> bool:
    """Ask yes/no at the terminal; with nobody there, a clear error naming --yes."""
    if not sys.stdin.isatty():
        raise CheckpointCommandError(
            "would ask before changing the workspace, but nobody is at a terminal. Fix: add "
            "--yes to go ahead without asking."
        )
    answer = input(f"{question} [y/N] ").strip().lower()
    return answer in ("y", "yes")


def command_parser(name: str, description: str) -> argparse.ArgumentParser:
    """The parser every checkpoint command starts from: SESSION and --config."""
    parser = argparse.ArgumentParser(
        prog=f"workbench {name}", description=description, epilog=STEPS_EPILOG
    )
    parser.add_argument("session", help="a session id (or a unique prefix), or a log's path")
    parser.add_argument("--config", metavar="PATH", help="the config file to read")
    return parser


def session_points(args: argparse.Namespace) -> SessionCheckpoints:
    """The checkpoints of the session the command names, found with its config."""
    from workbench.config.load import load_config
    from workbench.config.places import sessions_dir_of

    config = load_config(Path(args.config).expanduser() if args.config else None)
    return load_checkpoints(find_session(sessions_dir_of(config), args.session))
