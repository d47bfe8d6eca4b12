"""`workbench rewind SESSION --to N | --undo`: the workspace made what it was after a step."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from sandbox.checkpoints import Changes
from workbench.checkpoints.points import (
    RewindPlan,
    open_store,
    plan_rewind,
    rewind,
    undo,
    undo_plan,
)
from workbench.cli.checkpoint_common import (
    DECLINED,
    STEP_HELP,
    changes_json,
    changes_text,
    command_parser,
    confirm,
    session_points,
)

if TYPE_CHECKING:
    pass


def rewind_command(argv: Sequence[str]) -> int:
    """`workbench rewind SESSION --to N | --undo [--yes] [--json]`."""
    parser = command_parser("rewind", "Make the workspace what it was after a step of a session.")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--to", type=int, metavar="N", help=STEP_HELP)
    which.add_argument(
        "--undo",
        action="store_true",
        help="undo this session's last rewind or undo (repeat it to walk back)",
    )
    parser.add_argument("--yes", action="store_true", help="do it without asking")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    found = session_points(args)
    store = open_store(found)
    if args.undo:
        plan = undo_plan(found, store)
    else:  # the asked step, at its checkpoint (the steps since changed no files)
        plan = plan_rewind(found, store, replace(found.at(args.to), step=args.to))
    what = f"rewind to step {args.to}"
    if plan.undoes is not None:
        what = f"undo {plan.undoes.describe()}"
    if plan.changes.empty:
        if args.undo:
            undo(found, store, plan)  # recorded: the next undo walks on from here
        _report(args.json, what, plan, plan.changes, done=True)
        return 0
    if not args.yes:
        print(f"{what} in {found.workspace} changes:")
        print("\n".join(changes_text(plan.changes)))
        if not confirm("Go ahead?"):
            print("nothing was changed")
            return DECLINED
    changes = undo(found, store, plan) if args.undo else rewind(found, store, plan)
    _report(args.json, what, plan, changes, done=True)
    if not args.json:
        print(f"(`workbench rewind {found.session_id} --undo` undoes this too)")
    return 0


def _report(as_json: bool, what: str, plan: RewindPlan, changes: Changes, done: bool) -> None:
    if as_json:
        row = {"done": done, "step": plan.step, "commit": plan.target, "before": plan.present}
        if plan.undoes is not None:
            row["undid"] = plan.undoes.describe()
        print(json.dumps(row | changes_json(changes), separators=(",", ":")))
        return
    if changes.empty:
        print(f"{what}: the workspace is already that way")
        return
    print(f"{what}: done")
    print("\n".join(changes_text(changes)))
