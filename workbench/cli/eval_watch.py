"""`workbench eval watch DIR`: the CLI glue that opens the TUI screen watching an eval run
(`workbench/tui/screens/eval_run.py`, opened by name like the TUI itself, so the command line
never imports Textual until this command runs)."""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from typing import Any


def add_watch_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `watch DIR` to `workbench eval`'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "watch",
        help="watch an eval run in the TUI: its trials, their state and reward, each "
        "trial's conversation",
        description="List the trials of the eval run in DIR as they start and finish; enter "
        "opens a finished trial's conversation.",
    )
    parser.add_argument("dir", type=Path, metavar="DIR", help="the run's --out folder")
    parser.add_argument(
        "--poll", type=float, default=1.0, metavar="SECONDS", help="how often to read DIR"
    )
    parser.set_defaults(handler=main_watch)
    return parser


def watch_command(argv: list[str]) -> int:
    """`workbench eval watch ARGS...` from its own argument list (for `workbench/cli/eval.py`)."""
    parser = argparse.ArgumentParser(prog="workbench eval")
    add_watch_parser(parser.add_subparsers())
    return main_watch(parser.parse_args(["watch", *argv]))


def main_watch(args: argparse.Namespace) -> int:
    """Run `workbench eval watch`; the exit code (2 when DIR is not a folder)."""
    out_dir: Path = args.dir
    poll = float(getattr(args, "poll", 1.0))
    if not out_dir.is_dir():
        print(f"workbench eval watch: {out_dir} is not a folder", file=sys.stderr)
        print(
            "(pass the --out folder of a run; it may be watched while the run starts)",
            file=sys.stderr,
        )
        return 2
    if poll <= 0:
        print("workbench eval watch: --poll must be more than 0 seconds", file=sys.stderr)
        return 2
    screen = importlib.import_module("workbench.tui.screens.eval_run")
    screen.EvalWatchApp(out_dir, poll_s=poll).run()
    return 0
