"""The `workbench` command: the TUI by default, `--headless` for scripts, `sessions` to list,
show, delete and export saved sessions (`sessions.py`), `replay` to watch or re-run a
recording (`replay.py`), `policy` to ask the confirmation policy (`policy.py`);
`--resume ID`/`--last` continue a saved session in either front end.

Whatever prints survives a reader that stops early (`workbench sessions | head`): a closed
pipe ends a listing quietly with exit code 0; a headless run stops printing, goes on to its end
and keeps its own exit code (`headless/output.py`: `Printer.line`).

Only the standard library (and `workbench.exit_codes`, which needs nothing else) is imported
before the arguments are parsed, so `--help` and usage errors answer at once; configuration
(pydantic), the controller and litellm come after.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from sandbox import limits  # standard library only, like this module before parsing
from workbench import exit_codes  # standard library only, like this module before parsing

USAGE_EXIT = exit_codes.USAGE

_EPILOG = """\
commands:
  workbench sessions [--json]   list saved sessions, newest first
  workbench sessions show|delete|export ID      one session (ID: an id or a unique prefix)
  workbench --resume ID | --last [-t MESSAGE]   continue a saved session (new sandbox)
  workbench replay SESSION|FILE [--headless] [--json] [--rerun | --continue-from N]
                                watch a saved session or an OpenHands trajectory again, re-run
                                its actions in a fresh sandbox and compare (exit 11 if they
                                differ), or go on from step N with a live model; see
                                `workbench replay --help`
  workbench checkpoints SESSION  each step's checkpoint: what it added, changed, deleted
                                (step N: the session's Nth action, the [N] headless and
                                replay print; resumed sessions go on from the parent's)
  workbench rewind SESSION --to N [--yes] | --undo
                                the workspace as it was after step N (0: before the first)
  workbench diff SESSION --step N | --from A --to B
                                what steps changed, as a unified diff
  workbench policy check [--json] "CMD"   what the confirmation policy would do with a call
                                (--tool str_replace_editor --path P; --code CODE for IPython)
  workbench policy rules [--json]         the allow and deny rules in effect, and where from
  workbench policy trust|untrust [--workspace DIR]
                                trust the project's .workbench/config.toml as it is now (its
                                allow rules apply until it changes), or stop trusting it
  workbench eval DATASET [--tasks ...] [-n N] [--concurrency N] [--out DIR]
                                run a dataset of tasks (Harbor task folders, `demo`,
                                browsergym/...) as scored trials; see `workbench eval --help`

environment:
  LLM_MODEL, LLM_API_KEY, LLM_BASE_URL     the model, its key and endpoint
  RUNTIME, WORKSPACE_BASE, SANDBOX_VOLUMES, SANDBOX_USER_ID, SANDBOX_ENV_<NAME>
  LOG_ALL_EVENTS=true                      print every event (headless)
  WORKBENCH_<SECTION>_<KEY>                any configuration key
  WORKBENCH_CONFIG_DIR, WORKBENCH_DATA_DIR where the config file and sessions live

limits:
{limits}
exit codes (headless):
{exit_codes}See docs/headless.md for the exit codes' meanings and the JSON lines schema.
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the main command."""
    parser = argparse.ArgumentParser(
        prog="workbench",
        description="An LLM agent working in a sandbox (shell, editor, Jupyter, browser). "
        "Opens the terminal UI unless --headless is given.",
        epilog=_EPILOG.format(exit_codes=exit_codes.help_list(), limits=limits.help_text()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--headless", action="store_true", help="run one task without the UI")
    task = parser.add_mutually_exclusive_group()
    task.add_argument(
        "-t", "--task", metavar="TASK", help="the task text; '-' reads it from standard input"
    )
    task.add_argument("-f", "--file", metavar="FILE", help="read the task from FILE")
    parser.add_argument(
        "--json", action="store_true", help="headless: print one JSON object per line"
    )
    parser.add_argument("--model", help="the LLM as litellm names it, e.g. openai/gpt-4o")
    parser.add_argument("--config", metavar="PATH", help="the config file to read")
    parser.add_argument(
        "--workspace", metavar="DIR", help="the directory the agent works in (default: here)"
    )
    parser.add_argument(
        "--runtime", choices=("local", "docker", "remote"), help="where the sandbox runs"
    )
    parser.add_argument(
        "--max-iterations", type=int, metavar="N", help="the most steps (LLM calls) for the task"
    )
    parser.add_argument(
        "--max-budget", type=float, metavar="USD", help="the most the session may spend, in US$"
    )
    parser.add_argument(
        "--on-confirm",
        choices=("approve", "reject", "stop"),
        help="headless: what to do with an action that needs confirmation (default: reject)",
    )
    parser.add_argument(
        "--allow-escalation",
        action="store_true",
        default=None,
        help="headless: let --on-confirm approve a command the agent asks to run outside the "
        "sandbox, on this machine (escalation); without it every such request is refused "
        "(config: security.allow_escalation)",
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        metavar="ID",
        help="continue a saved session (an id or a unique prefix of one; see `workbench "
        "sessions`) in a new sandbox on its workspace; -t gives the next message",
    )
    again.add_argument("--last", action="store_true", help="continue the newest saved session")
    parser.add_argument(
        "--yes",
        action="store_true",
        help="confirm, without being asked, a home folder named with --workspace, or working "
        "in the folder a resumed session's log names when it is not this one",
    )
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="trust the project's .workbench/config.toml as it is now: its allow rules apply, "
        "in later runs too, until it changes (see `workbench policy trust`)",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    return parser


def _fail(message: str, json_mode: bool = False, status: exit_codes.Status = "config_error") -> int:
    from workbench.safe_text import terminal_safe

    print(terminal_safe(f"workbench: error: {message}"), file=sys.stderr)
    code = exit_codes.exit_code(status)
    if json_mode:
        import json

        summary = {"v": 1, "type": "summary", "status": status, "exit_code": code}
        summary |= {"reason": message, "steps": 0, "prompt_tokens": 0, "completion_tokens": 0}
        summary |= {"tokens": 0, "cost": 0.0, "session_id": None}
        print(json.dumps(summary, separators=(",", ":")))
    return code


def read_task(args: argparse.Namespace) -> str | None:
    """The task from -t, -f or stdin (`-t -`), or None when none was given."""
    if args.file is not None:
        try:
            with open(args.file, "rb") as stream:
                data = stream.read()
        except OSError as exc:
            raise ValueError(f"cannot read the task file {args.file}: {exc}") from None
        return _utf8(data, f"the task file {args.file}")
    if args.task == "-":
        if sys.stdin is None or sys.stdin.isatty():
            raise ValueError("-t - reads the task from standard input, but nothing was piped in")
        binary = getattr(sys.stdin, "buffer", None)
        return _utf8(binary.read(), "standard input") if binary else sys.stdin.read()
    task: str | None = args.task
    return task


def _utf8(data: bytes, where: str) -> str:
    """`data` as text; bytes that are not UTF-8 are a clear error, whatever the locale."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"cannot read the task from {where}: not UTF-8 text ({exc.reason} at byte "
            f"{exc.start}). Fix: convert it to UTF-8, e.g. with iconv -t UTF-8."
        ) from None


def overrides_from(args: argparse.Namespace) -> dict[str, Any]:
    """Dotted config keys set by command-line flags (None = not given)."""
    return {
        "llm.model": args.model,
        "sandbox.workspace": args.workspace,
        "sandbox.runtime": args.runtime,
        "agent.max_iterations": args.max_iterations,
        "budget.max_cost_usd": args.max_budget,
        "security.headless_on_confirm": args.on_confirm,
        "security.allow_escalation": args.allow_escalation,
    }


def _main_command(argv: Sequence[str], started: float) -> int:
    args = build_parser().parse_args(argv)
    if args.version:
        from workbench.session.log import workbench_version

        print(f"workbench {workbench_version()}")
        return 0
    try:
        task = read_task(args)
    except ValueError as exc:
        return _fail(str(exc), args.json)
    resuming = bool(args.resume or args.last)
    if args.headless and (task is None or not task.strip()) and not resuming:
        return _fail("--headless needs a task: -t TASK, -f FILE or -t - (stdin)", args.json)
    if args.workspace and not os.path.isdir(args.workspace):
        return _fail(f"--workspace {args.workspace}: no such directory", args.json)

    from pydantic import ValidationError

    from workbench.config.load import ConfigError, load_config, require_model, require_sandbox
    from workbench.session.start_checks import WorkspaceRefused

    try:
        config = load_config(args.config and _path(args.config), overrides=overrides_from(args))
        history: Any = None
        questions: list[Any] = []
        if resuming:
            config, history, questions = _history_to_resume(config, args)
        questions += _check_workspace(config, args)
        config = _project_trust(config, args)
        if args.headless:
            require_model(config)
            require_sandbox(config)
    except WorkspaceRefused as exc:
        return _fail(str(exc), args.json, "workspace_refused")
    except ConfigError as exc:
        return _fail(str(exc), args.json)
    except ValidationError as exc:  # a flag's value the schema refuses
        return _fail(str(exc), args.json)
    except ValueError as exc:  # no such session, or not a session log
        return _fail(str(exc), args.json)
    if not args.headless:
        args.task, args.file, args.history = task, None, history  # the TUI gets them read
        args.start_questions = questions  # asked before the sandbox starts
        return _open_tui(config, args)
    from workbench.headless.runner import run_headless

    if history is not None and (task is None or not task.strip()):
        from workbench.session.resume import CONTINUE_TEXT

        task = CONTINUE_TEXT
    return run_headless(config, str(task), json_mode=args.json, started=started, history=history)


def _history_to_resume(config: Any, args: argparse.Namespace) -> tuple[Any, Any, list[Any]]:
    """The session `--resume ID` or `--last` names, read back; the config for its workspace
    (unless --workspace was given; one the log names that is not the current folder needs
    --yes, or the TUI's question, also returned) and its model (unless one is configured).

    Raises ValueError (SessionNotFound, SessionLogError's message) with a clear message, and
    WorkspaceRefused headless for a log naming another folder without --yes."""
    from pathlib import Path

    from workbench.config.load import load_config
    from workbench.config.places import sessions_dir_of, workspace_of
    from workbench.session.find import find_session, last_session
    from workbench.session.log import SessionLogError
    from workbench.session.resume import load_history
    from workbench.session.start_checks import resumed_workspace

    directory = sessions_dir_of(config)
    path = last_session(directory) if args.last else find_session(directory, args.resume)
    try:
        history = load_history(path)
    except SessionLogError as exc:
        raise ValueError(f"cannot resume: {exc}") from None
    questions = []
    if not args.workspace:
        if not os.path.isdir(history.workspace):
            raise ValueError(
                f"cannot resume session {history.parent_id}: its workspace "
                f"{history.workspace} no longer exists. Fix: give --workspace DIR."
            )
        target, question = resumed_workspace(
            workspace_of(config),
            Path(history.workspace),
            history.parent_id,
            confirmed=args.yes,
            headless=args.headless,
        )
        questions = [question] if question is not None else []
        if target != workspace_of(config):  # the project's rules are that folder's
            overrides = overrides_from(args) | {"sandbox.workspace": str(target)}
            config = load_config(args.config and _path(args.config), overrides=overrides)
    if not config.llm.model:
        config.llm.model = history.model
    return config, history, questions


def _check_workspace(config: Any, args: argparse.Namespace) -> list[Any]:
    """A home-like workspace: refused unless --workspace named it and --yes (or, in the TUI,
    the question returned) confirms it."""
    from pathlib import Path

    from workbench.config.places import workspace_of
    from workbench.session.start_checks import home_check

    workspace = workspace_of(config)
    named = bool(args.workspace) and Path(args.workspace).expanduser().resolve() == workspace
    question = home_check(workspace, named=named, confirmed=args.yes, headless=args.headless)
    return [question] if question is not None else []


def _project_trust(config: Any, args: argparse.Namespace) -> Any:
    """The config with the project file trusted when --trust-project says so; headless, an
    untrusted file's withheld allow rules are named on standard error (the TUI asks)."""
    from workbench.config.load import load_config
    from workbench.config.places import workspace_of
    from workbench.config.project_trust import record, untrusted_notice

    state = config.project_trust
    if state is None or state.trusted:
        return config
    if args.trust_project:
        record(state.path, state.digest, state.store)  # the content read is what applies
        overrides = overrides_from(args) | {"sandbox.workspace": str(workspace_of(config))}
        model = config.llm.model
        config = load_config(args.config and _path(args.config), overrides=overrides)
        config.llm.model = config.llm.model or model
        state = config.project_trust
    if args.headless and state is not None and state.withheld:
        print(f"workbench: {untrusted_notice(state, workspace_of(config))}", file=sys.stderr)
    return config


def _path(text: str) -> Any:
    from pathlib import Path

    path = Path(text).expanduser()
    if not path.is_file():
        raise _config_error(f"--config {text}: no such file. Fix: give the path of a TOML file.")
    return path


def _config_error(message: str) -> Exception:
    from workbench.config.load import ConfigError

    return ConfigError(message, source="command line", key="--config")


def _open_tui(config: Any, args: argparse.Namespace) -> int:
    import importlib

    try:
        app = importlib.import_module("workbench.tui.app")
    except ImportError as exc:
        if exc.name not in ("workbench.tui.app", "workbench.tui"):
            raise
        return _fail(
            "the terminal UI is not available in this build; run a task with "
            "`workbench --headless -t TASK`"
        )
    code: int = app.run_tui(config, args)
    return code


def _flushed(code: int) -> int:
    """`code`, once what was printed has left (a closed pipe raises here, not at exit)."""
    sys.stdout.flush()
    return code


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (a test's StringIO): nothing to silence
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `workbench` command; returns the exit code."""
    started = time.monotonic()
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["sessions"]:
            from workbench.cli.sessions import sessions_command

            return _flushed(sessions_command(args[1:]))
        if args[:1] == ["replay"]:
            from workbench.cli.replay import replay_command

            return _flushed(replay_command(args[1:]))
        if args[:1] in (["checkpoints"], ["rewind"], ["diff"]):
            from workbench.cli.checkpoints import run

            return _flushed(run(args[0], args[1:]))
        if args[:1] == ["policy"]:
            from workbench.cli.policy import policy_command

            return _flushed(policy_command(args[1:]))
        if args[:1] == ["eval"]:
            from workbench.cli.eval import eval_command

            return _flushed(eval_command(args[1:]))
        return _flushed(_main_command(args, started))
    except BrokenPipeError:  # `workbench sessions | head`: the reader left, which is fine
        _silence_stdout()
        return 0
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
        code = exc.code if isinstance(exc.code, int) else USAGE_EXIT
        try:
            return _flushed(code)  # `workbench --help | head`: the help may meet a closed pipe
        except BrokenPipeError:
            _silence_stdout()
            return code
    except KeyboardInterrupt:
        return exit_codes.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
