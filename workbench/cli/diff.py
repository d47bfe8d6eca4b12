"""`workbench diff SESSION --step N | --from A --to B`: what a session's steps changed."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sandbox.checkpoints import CheckpointStore
from workbench.checkpoints.points import CheckpointCommandError
from workbench.cli.checkpoint_common import STEP_HELP, command_parser, session_points

if TYPE_CHECKING:
    pass


def diff_command(argv: Sequence[str]) -> int:
    """`workbench diff SESSION --step N | --from A --to B`: a unified diff."""
    parser = command_parser("diff", "Show what a session's steps changed, as a unified diff.")
    parser.add_argument("--step", type=int, metavar="N", help=f"what step N changed; {STEP_HELP}")
    parser.add_argument("--from", dest="start", type=int, metavar="A", help="from step A")
    parser.add_argument("--to", dest="end", type=int, metavar="B", help="to step B")
    args = parser.parse_args(argv)
    if (args.step is None) == (args.start is None and args.end is None):
        raise CheckpointCommandError("give --step N, or --from A and --to B")
    found = session_points(args)
    if not (found.store / "HEAD").is_file():
        raise CheckpointCommandError(f"session {found.session_id} has no checkpoint store")
    store = CheckpointStore(found.store, found.workspace, key="diff")
    if args.step is not None:
        end = found.at(args.step)
        before = [s for s in found.steps if s.step < end.step]
        if end.step != args.step:
            print(f"step {args.step} changed no files")
            return 0
        start_commit = before[-1].commit if before else None
    else:
        start_commit = found.at(args.start if args.start is not None else 0).commit
        end = found.at(args.end if args.end is not None else found.steps[-1].step)
    sys.stdout.write(store.diff(start_commit, end.commit))
    return 0
