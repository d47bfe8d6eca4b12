"""`workbench checkpoints SESSION`: a session's checkpoints step by step; and the dispatch of
the three checkpoint commands (this one, `rewind.py`, `diff.py`) with their exit codes.

What a checkpoint is and how rewinding works: `workbench/checkpoints/points.py`.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sandbox.checkpoints import Changes, CheckpointError
from sandbox.store_files import check_store
from workbench.checkpoints.points import CheckpointCommandError
from workbench.cli.checkpoint_common import (
    STORE_FAILED,
    USAGE,
    changes_json,
    changes_text,
    command_parser,
    session_points,
)
from workbench.cli.diff import diff_command
from workbench.cli.rewind import rewind_command
from workbench.safe_text import safe_streams

if TYPE_CHECKING:
    pass


def checkpoints_command(argv: Sequence[str]) -> int:
    """`workbench checkpoints SESSION [--json]`: each step's checkpoint and its changes."""
    parser = command_parser("checkpoints", "List a session's checkpoints, step by step.")
    parser.add_argument("--json", action="store_true", help="one JSON object per step")
    args = parser.parse_args(argv)
    found = session_points(args)
    check_store(found.store)  # a tampered store is said before its steps are offered
    for step in found.steps:
        event = step.event
        changes = Changes(tuple(event.added), tuple(event.changed), tuple(event.deleted))
        if args.json:
            row = {"step": step.step, "commit": step.commit, "action": step.action}
            row |= changes_json(changes) | {"skipped": event.skipped, "time": event.timestamp}
            print(json.dumps(row, separators=(",", ":")))
            continue
        when = time.strftime("%H:%M:%S", time.localtime(event.timestamp))
        counts = f"+{len(event.added)} ~{len(event.changed)} -{len(event.deleted)}"
        print(f"[{step.step}] {when}  {counts:<12} {step.action}")
        for line in changes_text(changes, limit=8):
            print("    " + line.strip())
        if event.skipped:
            print(f"    not covered (over the size limit): {', '.join(event.skipped)}")
    if not found.steps and not args.json:
        print(f"session {found.session_id} has no checkpoints")
    return 0


COMMANDS = {"checkpoints": checkpoints_command, "rewind": rewind_command, "diff": diff_command}


def run(name: str, argv: Sequence[str]) -> int:
    """Run checkpoint command `name`; bad input and store failures become clear exit codes.
    File names and diffs come from the workspace: what is printed goes through `terminal_safe`."""
    from workbench.config.load import ConfigError

    with safe_streams():
        return _run(name, argv, ConfigError)


def _run(name: str, argv: Sequence[str], config_error: type[Exception]) -> int:
    try:
        return COMMANDS[name](argv)
    except (CheckpointCommandError, config_error) as exc:
        print(f"workbench {name}: {exc}", file=sys.stderr)
        return USAGE
    except CheckpointError as exc:
        print(f"workbench {name}: the checkpoint store failed: {exc}", file=sys.stderr)
        return STORE_FAILED
