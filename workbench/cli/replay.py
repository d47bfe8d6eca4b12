"""`workbench replay SESSION|FILE`: the command line of watch, `--rerun` and `--continue-from`.

Watch opens the TUI's player and `--rerun` its side-by-side view unless `--headless` or
`--json` is given or the output is not a terminal; `--continue-from` runs headless. Exit
codes: 0 watched or everything matched, 11 a re-run result differs, 2 bad arguments or an
unknown session, 8 the sandbox could not start, 130 interrupted; `--continue-from` ends as a
live run does.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench import exit_codes

if TYPE_CHECKING:
    from workbench.config.schema import Config
    from workbench.headless.output import Printer
    from workbench.replay.recording import Recording
    from workbench.replay.report import RerunReport

DESCRIPTION = """\
Replay a recorded session: a saved session's id (or a unique prefix of it), the path of a
session .jsonl, or an OpenHands trajectory .json (save_trajectory_path).

  watch (default)      the recorded events again, no LLM and no sandbox: in the TUI's player
                       (space play/pause, left/right step, +/- speed, g jump to a step), or
                       printed with --headless; --json prints the JSON lines the live run did
  --rerun              the recorded actions again in a fresh sandbox (--workspace DIR, default
                       a new temporary folder); an empty workspace starts as the recorded one
                       did (its checkpoint 0; without one, from an empty folder, as the
                       report says). Each result is compared with the recorded one (times,
                       pids, temporary paths, durations and the workspace path masked; images
                       by content; an OpenHands edit by the file it left), a line says why:
                       exit 0 when all match, 11 when one differs; in the TUI side by side
                       (n: next difference), with --headless a diff per step
  --continue-from N    re-run steps 1..N, then the configured model goes on from there, in a
                       new session whose log header names this one as its parent

A step is one action of the agent: step N is the session's Nth, the [N] headless and this
command print and the N that `workbench checkpoints`, `diff --step N` and `rewind --to N` take
(docs/checkpoints.md, "Step numbers"). Paths under the recorded workspace (OpenHands:
/workspace) are moved to the re-run's workspace.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `workbench replay`."""
    parser = argparse.ArgumentParser(
        prog="workbench replay",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", metavar="SESSION|FILE", help="a session id or prefix, or a file")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--rerun", action="store_true", help="run the recorded actions again")
    mode.add_argument(
        "--continue-from", type=int, metavar="N", help="re-run steps 1..N, then a live model"
    )
    parser.add_argument("--headless", action="store_true", help="print instead of the TUI")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--from",
        dest="first",
        type=int,
        default=1,
        metavar="N",
        help="the first step shown or compared (default 1)",
    )
    parser.add_argument("--to", dest="last", type=int, metavar="N", help="the last step")
    parser.add_argument(
        "--speed",
        type=float,
        metavar="X",
        help="watch at X times the recorded pace (gaps capped at 2 s); headless default: at "
        "once; TUI default: 1",
    )
    parser.add_argument("--workspace", metavar="DIR", help="where a re-run works (default: new)")
    parser.add_argument("--runtime", choices=("local", "docker", "remote"), help="the sandbox")
    parser.add_argument(
        "--on-confirm",
        choices=("approve", "reject", "stop"),
        help="a re-run action that needs confirmation (default: reject, as headless)",
    )
    parser.add_argument("--model", help="--continue-from: the live model (default: configured)")
    parser.add_argument("--max-iterations", type=int, metavar="N", help="--continue-from: steps")
    parser.add_argument("--config", metavar="PATH", help="the config file to read")
    return parser


def _fail(message: str) -> int:
    from workbench.safe_text import terminal_safe

    print(terminal_safe(f"workbench replay: error: {message}"), file=sys.stderr)
    return exit_codes.USAGE


def _check(args: argparse.Namespace) -> str:
    """What is wrong with the arguments ("" when nothing)."""
    if args.first < 1:
        return "--from counts steps from 1"
    if args.last is not None and args.last < args.first:
        return f"--to {args.last} comes before --from {args.first}"
    if args.speed is not None and not args.speed > 0:
        return "--speed must be more than 0 (2 = twice the recorded pace)"
    if args.continue_from is not None and args.continue_from < 0:
        return "--continue-from takes a number of steps, 0 or more"
    if args.workspace and not Path(args.workspace).expanduser().is_dir():
        return f"--workspace {args.workspace}: no such directory"
    return ""


def replay_command(argv: Sequence[str]) -> int:
    """Run `workbench replay ARGS`; returns the exit code."""
    args = build_parser().parse_args(argv)
    problem = _check(args)
    if problem:
        return _fail(problem)
    from workbench.config.load import ConfigError, load_config, require_model
    from workbench.config.places import sessions_dir_of
    from workbench.replay.recording import ReplayError, load_recording, resolve

    overrides: dict[str, Any] = {
        "sandbox.runtime": args.runtime,
        "security.headless_on_confirm": args.on_confirm,
        "llm.model": args.model,
        "agent.max_iterations": args.max_iterations,
    }
    try:
        config_path = Path(args.config).expanduser() if args.config else None
        if config_path is not None and not config_path.is_file():
            return _fail(f"--config {args.config}: no such file")
        config = load_config(config_path, overrides=overrides)
        recording = load_recording(resolve(args.target, sessions_dir_of(config)))
        if args.continue_from is not None:
            require_model(config)
    except (ConfigError, ReplayError) as exc:
        return _fail(str(exc))
    steps = max(recording.steps, default=0)
    if args.continue_from is not None and args.continue_from > steps:
        return _fail(f"--continue-from {args.continue_from}: the recording has {steps} steps")
    if args.rerun or args.continue_from is not None:
        workspace = args.workspace or tempfile.mkdtemp(prefix="workbench-replay-")
        config = load_config(
            config_path, overrides=overrides | {"sandbox.workspace": str(Path(workspace))}
        )
        starts_from = ""
        if args.rerun:
            from workbench.replay.start_state import prepare_workspace

            sessions = sessions_dir_of(config)
            folder = Path(workspace)
            starts_from = prepare_workspace(recording, folder, config.checkpoints, sessions)
        if args.rerun and _wants_tui(args):
            shown = _open_tui("workbench.tui.rerun", "run_rerun_view", recording, config, args)
            if shown is not None:
                return shown
        if args.rerun:
            return _run(rerun(recording, config, args.json, args.first, args.last, starts_from))
        from workbench.replay.resume import continue_from

        return _run(continue_from(recording, config, args.continue_from, args.json))
    if _wants_tui(args):
        opened = _open_tui("workbench.tui.replay", "run_player", recording, config, args)
        if opened is not None:
            return opened
    return _watch(recording, config, args)


def _run(work: Any) -> int:
    try:
        code: int = asyncio.run(work)
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED
    return code


def _printer(config: Config, json_mode: bool) -> Printer:
    from workbench.headless.output import HumanPrinter, JsonPrinter
    from workbench.session.opening import scrubber_of

    kind = JsonPrinter if json_mode else HumanPrinter
    return kind(all_events=config.log_all_events, scrub=scrubber_of(config))


def _watch(recording: Recording, config: Config, args: argparse.Namespace) -> int:
    from workbench.replay.watch import watch

    try:
        watch(recording, _printer(config, args.json), args.first, args.last, args.speed)
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        import os  # the Python docs' way: no flush error when the interpreter exits

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exit_codes.SUCCESS


def _wants_tui(args: argparse.Namespace) -> bool:
    """The TUI unless --headless or --json, or when the terminal is not one (a pipe)."""
    if args.headless or args.json:
        return False
    return sys.stdin is not None and sys.stdin.isatty() and sys.stdout.isatty()


def _open_tui(
    module: str, function: str, recording: Recording, config: Config, args: argparse.Namespace
) -> int | None:
    """The TUI's player or re-run view; None when this build has no TUI (then it prints)."""
    import importlib

    try:
        tui = importlib.import_module(module)
    except ImportError as exc:
        if exc.name not in (module, "workbench.tui", "textual"):
            raise
        return None
    if function == "run_player":
        code: int = tui.run_player(recording, config, args.first, args.last, args.speed or 1.0)
    else:
        code = getattr(tui, function)(recording, config, args.first, args.last)
    return code


def rerun_summary(
    recording: Recording, workspace: str, results: list[Any], started: float, stopped: str
) -> dict[str, Any]:
    """The summary of a re-run: counts, the first differing step, status and exit code."""
    reported = [r for r in results if r.reported]
    differing = [r for r in reported if r.differs]
    status: exit_codes.Status = "replay_differs" if differing or stopped else "success"
    return {
        "mode": "rerun",
        "status": status,
        "exit_code": exit_codes.exit_code(status),
        "reason": stopped and f"stopped by the policy: {stopped}",
        "actions": len(reported),
        "compared": sum(1 for r in reported if not r.skipped),
        "skipped": sum(1 for r in reported if r.skipped),
        "differences": len(differing),
        "first_difference_step": differing[0].step if differing else None,
        "first_difference_event": differing[0].action.id if differing else None,
        "session_id": recording.session_id,
        "log": str(recording.path.absolute()),
        "workspace": workspace,
        "sandbox_s": round(sum(r.sandbox_s for r in results), 3),
        "duration_s": round(time.monotonic() - started, 3),
    }


async def rerun(
    recording: Recording,
    config: Config,
    json_mode: bool,
    first: int = 1,
    last: int | None = None,
    starts_from: str = "",
) -> int:
    """Re-run `recording` in the configured sandbox and report; returns the exit code.
    `starts_from` says how the workspace starts (`start_state.prepare_workspace`)."""
    from sandbox.runtimes.base import SandboxError
    from workbench.replay.report import JsonRerunReport
    from workbench.replay.rerun import Rerunner
    from workbench.session.opening import make_runtime, runtime_warning, start_runtime
    from workbench.tools.base import ToolContext

    started = time.monotonic()
    printer = _printer(config, json_mode)
    report: RerunReport = JsonRerunReport(printer) if json_mode else _human_report(printer)
    try:
        runtime = await start_runtime(make_runtime(config))
    except SandboxError as exc:
        printer.notice(f"the sandbox could not start: {exc}")
        return exit_codes.SANDBOX_ERROR
    results = []
    try:
        if warning := runtime_warning(runtime):
            printer.notice(warning)
        info = await runtime.info()
        for note in recording.notes:
            printer.notice(note)
        report.start(
            {
                "mode": "rerun",
                "session_id": recording.session_id,
                "log": str(recording.path.absolute()),
                "workspace": info.workspace,
                "recorded_workspace": recording.workspace,
                "starts_from": starts_from,
            }
        )
        rerunner = Rerunner(recording, config, ToolContext(runtime, info.workspace))
        async for result in rerunner.run(first, last):
            results.append(result)
            report.step(result)
    except SandboxError as exc:
        printer.notice(f"the sandbox failed during the re-run: {exc}")
        return exit_codes.SANDBOX_ERROR
    finally:
        await asyncio.shield(runtime.close())
    summary = rerun_summary(recording, info.workspace, results, started, rerunner.stopped)
    report.summary(summary)
    code: int = summary["exit_code"]
    return code


def _human_report(printer: Printer) -> RerunReport:
    from workbench.replay.report import RerunReport

    return RerunReport(printer)
