"""`workbench checkpoints`, `workbench rewind` and `workbench diff`: a session's steps, undone.

Each `CheckpointEvent` in a session's log names a commit in the workspace's checkpoint store
(`sandbox/checkpoints.py`; where it lives: `checkpoint_store.checkpoint_store_of`). Rewinding to
step N makes the workspace what it was after step N; it first checkpoints the present state and
records it, so `rewind --undo` puts the present back; an undo is recorded the same way, and
repeated undos walk back through them (`rewind_undo.py`). Nothing outside the workspace is touched,
and what checkpoints do not cover (ignored folders, files over the size limit) is never
changed or deleted. Exit codes: 0 done, 1 the person said no, 2 bad input (unknown session,
step out of range, workspace moved), 8 the store failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.checkpoints import Changes, CheckpointError, CheckpointStore
from sandbox.store_files import check_store
from workbench.checkpoint_store import checkpoint_store_of, record_rewind, rewind_records
from workbench.config_schema import CheckpointsConfig
from workbench.events import ActionEvent, CheckpointEvent, ErrorEvent
from workbench.rewind_undo import RewindRecord, next_to_undo, parse_records
from workbench.safe_text import safe_streams
from workbench.steps import last_step, out_of_range, step_numbers

if TYPE_CHECKING:
    from workbench.session_log import LoadedSession

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


class CheckpointCommandError(Exception):
    """Bad input for a checkpoints command: the message says what and how to fix it."""


@dataclass(frozen=True)
class Step:
    """One checkpoint of a session: its step, the action behind it, what it changed."""

    step: int
    commit: str
    action: str
    event: CheckpointEvent


@dataclass(frozen=True)
class SessionCheckpoints:
    """A session's checkpoints, its workspace and the store that holds them."""

    session_id: str
    workspace: Path
    store: Path
    steps: list[Step]
    last: int = 0
    """The session's last step (`workbench/steps.py`): steps after the last checkpoint
    changed no files."""
    gaps: tuple[tuple[int, int, str], ...] = ()
    """Steps `first`..`last` taken while checkpoints were off (after a failed one: `why`)."""

    def at(self, step: int) -> Step:
        """The checkpoint of the workspace as it was after `step` (the latest at or before:
        the steps between changed no files)."""
        first = self.steps[0].step if self.steps else 0
        if not self.steps:
            raise CheckpointCommandError(
                f"session {self.session_id} has no checkpoints (checkpoints were off, or git "
                "is missing in the sandbox); nothing to rewind to or compare."
            )
        if step < first or step > self.last:
            raise CheckpointCommandError(
                out_of_range(step, first, self.last, self.session_id)
                + f" Fix: pick one (`workbench checkpoints {self.session_id}` lists those "
                "that changed files)."
            )
        for start, end, why in self.gaps:
            if start <= step <= end:
                raise CheckpointCommandError(
                    f"step {step} has no checkpoint: checkpoints stopped after step {start - 1} "
                    f"({why}), so the files of steps {start} to {end} are not known; nothing "
                    "was changed."
                )
        return [s for s in self.steps if s.step <= step][-1]


def load_checkpoints(log: Path) -> SessionCheckpoints:
    """The checkpoints recorded in the session log at `log`."""
    from workbench.session_log import read

    return checkpoints_of(read(log))


def checkpoints_of(loaded: LoadedSession) -> SessionCheckpoints:
    """The checkpoints recorded in a session log already read."""
    from workbench.tools.registry import REGISTRY

    workspace = Path(loaded.header.workspace)
    actions = {e.id: e for e in loaded.events if isinstance(e, ActionEvent)}
    numbers = step_numbers(loaded.events)
    steps: list[Step] = []
    gaps: list[tuple[int, int, str]] = []
    stopped: tuple[int, str] | None = None  # checkpoints failed: from which step, and why
    for event, number in zip(loaded.events, numbers, strict=True):
        if isinstance(event, ErrorEvent) and event.error_kind == "checkpoint" and not stopped:
            stopped = (steps[-1].step + 1 if steps else 0, event.message)
        if isinstance(event, CheckpointEvent) and stopped is not None:
            if number > stopped[0]:  # a later run took them again
                gaps.append((stopped[0], number - 1, stopped[1]))
            stopped = None
        if isinstance(event, CheckpointEvent):
            action = actions.get(event.cause) if event.cause is not None else None
            what = (
                REGISTRY.for_action(action.action).describe(action.action)
                if action is not None
                else "(before the first action)"
                if number == 0
                else "(the workspace when the session went on)"
            )
            steps.append(Step(number, event.commit, what, event))
    last = last_step(loaded.events)
    if stopped is not None and stopped[0] <= last:
        gaps.append((stopped[0], last, stopped[1]))
    return SessionCheckpoints(
        loaded.header.session_id,
        workspace,
        checkpoint_store_of(workspace),
        steps,
        last,
        tuple(gaps),
    )


def find_session(sessions: Path, wanted: str) -> Path:
    """The log of session `wanted` (an id, a unique prefix of one, or a log's path)."""
    as_path = Path(wanted).expanduser()
    if as_path.suffix == ".jsonl" and as_path.is_file():
        return as_path
    logs = sorted(sessions.glob("*.jsonl")) if sessions.is_dir() else []
    exact = [log for log in logs if log.stem == wanted]
    found = exact or [log for log in logs if log.stem.startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise CheckpointCommandError(
            f"no session {wanted!r} in {sessions}. Fix: `workbench sessions` lists them."
        )
    names = ", ".join(log.stem for log in found[:5])
    raise CheckpointCommandError(f"{wanted!r} matches several sessions ({names}): give more of it.")


def open_store(
    found: SessionCheckpoints, config: CheckpointsConfig | None = None, key: str = "rewind"
) -> CheckpointStore:
    """The workspace's store, checked: the workspace must be where the session left it.
    `config` gives the exclusions (default: the person's config file's)."""
    if not found.workspace.is_dir():
        raise CheckpointCommandError(
            f"the workspace {found.workspace} of session {found.session_id} does not exist "
            "(moved or deleted); nothing was changed. Fix: put it back where it was."
        )
    if not (found.store / "HEAD").is_file():
        raise CheckpointCommandError(
            f"session {found.session_id} has no checkpoint store at {found.store}; nothing "
            "was changed (checkpoints were off, or the data folder was cleared)."
        )
    if config is None:
        from workbench.config import load_config

        config = load_config().checkpoints
    return CheckpointStore(
        found.store,
        found.workspace,
        ignore=tuple(config.ignore),
        max_file_bytes=int(config.max_file_mb * 1024 * 1024),
        key=key,
        reread=True,  # on the host: what git read is read again without following symlinks
    )


# --------------------------------------------------------------------------- rewinding


@dataclass(frozen=True)
class RewindPlan:
    """What a rewind will do: the commit to reach, the present's checkpoint, the changes."""

    target: str
    step: int | None
    present: str
    changes: Changes
    undoes: RewindRecord | None = None
    """For an undo: the recorded rewind or undo it undoes."""


def plan_rewind(found: SessionCheckpoints, store: CheckpointStore, target: Step) -> RewindPlan:
    """Checkpoint the present, and say what rewinding to `target` changes."""
    present = store.checkpoint(f"before rewinding {found.session_id} to step {target.step}")
    return RewindPlan(
        target.commit, target.step, present.commit, store.changes(present.commit, target.commit)
    )


def rewind(found: SessionCheckpoints, store: CheckpointStore, plan: RewindPlan) -> Changes:
    """Carry out `plan` and record it, so `--undo` can put the present back."""
    changes = store.restore(plan.target)
    record_rewind(found.store, found.session_id, plan.step, plan.target, plan.present)
    return changes


def undo_plan(found: SessionCheckpoints, store: CheckpointStore) -> RewindPlan:
    """The plan that undoes the next recorded rewind or undo of this session (`rewind_undo.py`:
    repeated undos walk back through them), after checkpointing the present."""
    store.head()  # checks the store before its records are read
    records = parse_records(rewind_records(found.store, found.session_id))
    if not records:
        raise CheckpointCommandError(
            f"session {found.session_id} has no rewind to undo; nothing was changed."
        )
    present = store.checkpoint(f"before undoing a rewind of {found.session_id}")
    record = next_to_undo(records, lambda r: store.changes(present.commit, r.target).empty)
    if record is None:  # not reached: there are records
        raise CheckpointCommandError(f"session {found.session_id} has no rewind to undo")
    changes = store.changes(present.commit, record.before)
    return RewindPlan(record.before, None, present.commit, changes, record)


def undo(found: SessionCheckpoints, store: CheckpointStore, plan: RewindPlan) -> Changes:
    """Carry out an undo plan and record it: the present it replaces is one undo away."""
    changes = store.restore(plan.target) if not plan.changes.empty else plan.changes
    undone = plan.undoes.index if plan.undoes is not None else None
    record_rewind(found.store, found.session_id, None, plan.target, plan.present, "undo", undone)
    return changes


# --------------------------------------------------------------------------- the commands


def _changes_text(changes: Changes, limit: int = 20) -> list[str]:
    return ["  " + line for line in changes.lines(limit)]


def _changes_json(changes: Changes) -> dict[str, Any]:
    return {
        "added": list(changes.added),
        "changed": list(changes.changed),
        "deleted": list(changes.deleted),
    }


def _confirm(question: str) -> bool:
    if not sys.stdin.isatty():
        raise CheckpointCommandError(
            "would ask before changing the workspace, but nobody is at a terminal. Fix: add "
            "--yes to go ahead without asking."
        )
    answer = input(f"{question} [y/N] ").strip().lower()
    return answer in ("y", "yes")


def _parser(name: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=f"workbench {name}", description=description, epilog=STEPS_EPILOG
    )
    parser.add_argument("session", help="a session id (or a unique prefix), or a log's path")
    parser.add_argument("--config", metavar="PATH", help="the config file to read")
    return parser


def _session(args: argparse.Namespace) -> SessionCheckpoints:
    from workbench.config import load_config
    from workbench.session import sessions_dir_of

    config = load_config(Path(args.config).expanduser() if args.config else None)
    return load_checkpoints(find_session(sessions_dir_of(config), args.session))


def checkpoints_command(argv: Sequence[str]) -> int:
    """`workbench checkpoints SESSION [--json]`: each step's checkpoint and its changes."""
    parser = _parser("checkpoints", "List a session's checkpoints, step by step.")
    parser.add_argument("--json", action="store_true", help="one JSON object per step")
    args = parser.parse_args(argv)
    found = _session(args)
    check_store(found.store)  # a tampered store is said before its steps are offered
    for step in found.steps:
        event = step.event
        changes = Changes(tuple(event.added), tuple(event.changed), tuple(event.deleted))
        if args.json:
            row = {"step": step.step, "commit": step.commit, "action": step.action}
            row |= _changes_json(changes) | {"skipped": event.skipped, "time": event.timestamp}
            print(json.dumps(row, separators=(",", ":")))
            continue
        when = time.strftime("%H:%M:%S", time.localtime(event.timestamp))
        counts = f"+{len(event.added)} ~{len(event.changed)} -{len(event.deleted)}"
        print(f"[{step.step}] {when}  {counts:<12} {step.action}")
        for line in _changes_text(changes, limit=8):
            print("    " + line.strip())
        if event.skipped:
            print(f"    not covered (over the size limit): {', '.join(event.skipped)}")
    if not found.steps and not args.json:
        print(f"session {found.session_id} has no checkpoints")
    return 0


def rewind_command(argv: Sequence[str]) -> int:
    """`workbench rewind SESSION --to N | --undo [--yes] [--json]`."""
    parser = _parser("rewind", "Make the workspace what it was after a step of a session.")
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
    found = _session(args)
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
        print("\n".join(_changes_text(plan.changes)))
        if not _confirm("Go ahead?"):
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
        print(json.dumps(row | _changes_json(changes), separators=(",", ":")))
        return
    if changes.empty:
        print(f"{what}: the workspace is already that way")
        return
    print(f"{what}: done")
    print("\n".join(_changes_text(changes)))


def diff_command(argv: Sequence[str]) -> int:
    """`workbench diff SESSION --step N | --from A --to B`: a unified diff."""
    parser = _parser("diff", "Show what a session's steps changed, as a unified diff.")
    parser.add_argument("--step", type=int, metavar="N", help=f"what step N changed; {STEP_HELP}")
    parser.add_argument("--from", dest="start", type=int, metavar="A", help="from step A")
    parser.add_argument("--to", dest="end", type=int, metavar="B", help="to step B")
    args = parser.parse_args(argv)
    if (args.step is None) == (args.start is None and args.end is None):
        raise CheckpointCommandError("give --step N, or --from A and --to B")
    found = _session(args)
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


COMMANDS = {"checkpoints": checkpoints_command, "rewind": rewind_command, "diff": diff_command}


def run(name: str, argv: Sequence[str]) -> int:
    """Run checkpoint command `name`; bad input and store failures become clear exit codes.
    File names and diffs come from the workspace: what is printed goes through `terminal_safe`."""
    from workbench.config import ConfigError

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
