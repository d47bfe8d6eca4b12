"""`workbench eval DATASET [--tasks ...] [-n ATTEMPTS] [--concurrency N] [--out DIR] ...`

DATASET: a Harbor task folder, a folder of them, `demo` (the built-in suite) or a BrowserGym
id (`browsergym/miniwob.click-test`, `browsergym/miniwob`). The model and the rest of the
configuration come from the usual places (config file, LLM_* and WORKBENCH_* variables,
`--model`, `--config`); each trial runs headless on a copy of that configuration with its own
workspace, limits and image (`trial_proc.py`). `workbench eval report DIR` is the report
(`workbench/eval/report.py`) and `workbench eval watch DIR` the TUI's view of a run
(`eval_watch.py`).
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.eval import eval_exit


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number above 0")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of at least 1")
    return value


_OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (("dataset",), {"help": "a task folder, a folder of task folders, `demo`, or a "
                    "BrowserGym id (browsergym/miniwob.click-test, browsergym/miniwob)"}),
    (("--tasks",), {"nargs": "+", "metavar": "NAME",
                    "help": "only these tasks (names or glob patterns)"}),
    (("-n", "--attempts"), {"type": _positive_int, "default": 1,
                            "help": "attempts per task (default 1)"}),
    (("--concurrency",), {"type": _positive_int, "default": None,
                          "help": "trials at once (default 1; with --ray: every free "
                          "sandbox_slot of the cluster)"}),
    (("--ray",), {"metavar": "ADDRESS", "help": "run the trials as Ray tasks on a cluster "
                  "(its address, or `auto`); needs pip install 'workbench[ray]' "
                  "(docs/scaling.md)"}),
    (("--out",), {"metavar": "DIR", "help": "where results go; an earlier run's folder "
                  "resumes it (default: eval-runs/<time>)"}),
    (("--retry-errors",), {"action": "store_true",
                           "help": "run again the trials of --out that ended in an error"}),
    (("--agent-timeout",), {"type": _positive_float, "metavar": "S",
                            "help": "the agent's time limit per trial (default: task.toml's)"}),
    (("--verifier-timeout",), {"type": _positive_float, "metavar": "S",
                               "help": "the verifier's time limit (default: task.toml's)"}),
    (("--max-cost",), {"type": _positive_float, "metavar": "USD",
                       "help": "start no trial once the run has spent this much"}),
    (("--max-task-cost",), {"type": _positive_float, "metavar": "USD",
                            "help": "the most one task's trials may spend together"}),
    (("--on-cap",), {"choices": ("finish", "stop"), "default": "finish",
                     "help": "at a cap, let running trials finish (default) or stop them"}),
    (("--max-steps",), {"type": _positive_int, "metavar": "N",
                        "help": "the most steps (LLM calls) per trial"}),
    (("--json",), {"action": "store_true",
                   "help": "print JSON lines instead of the progress line"}),
    (("--model",), {"help": "the LLM as litellm names it, e.g. openai/gpt-4o"}),
    (("--config",), {"metavar": "PATH", "help": "the config file to read"}),
    (("--runtime",), {"choices": ("local", "docker"), "help": "the sandbox of tasks that "
                      "name no image (default: the config's)"}),
    (("--on-confirm",), {"choices": ("approve", "reject", "stop"), "default": "approve",
                         "help": "an action that needs confirmation, in a trial's throwaway "
                         "sandbox (default: approve)"}),
]  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """The parser of `workbench eval`."""
    parser = argparse.ArgumentParser(
        prog="workbench eval",
        description="Run a dataset of tasks as trials, each in a fresh sandbox with the agent "
        "headless, scored by the task's verifier.",
        epilog=f"exit codes: {eval_exit.help_list()}\n"
        "`workbench eval report DIR [--json] [--html FILE]` shows an earlier run's results;\n"
        "`workbench eval watch DIR` watches a run in the TUI (its trials, each one's "
        "conversation).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for names, options in _OPTIONS:
        parser.add_argument(*names, **options)
    return parser


def eval_command(argv: Sequence[str]) -> int:
    """`workbench eval ...`; returns the exit code."""
    args = list(argv)
    if args[:1] == ["report"]:
        return _report(args[1:])
    if args[:1] == ["watch"]:
        from workbench.cli.eval_watch import watch_command

        return watch_command(args[1:])
    parsed = build_parser().parse_args(args)
    from workbench.eval.run import RunOptions, run_eval
    from workbench.eval.task_config import TaskConfigError
    from workbench.eval.tasks import DatasetError

    error = _check_config(parsed)
    if error:
        print(f"workbench eval: error: {error}", file=sys.stderr)
        return eval_exit.USAGE
    out = Path(parsed.out or f"eval-runs/{time.strftime('%Y%m%d-%H%M%S')}").expanduser()
    overrides = {"llm.model": parsed.model} if parsed.model else {}
    options = RunOptions(
        dataset=parsed.dataset,
        out=out.resolve(),
        tasks=parsed.tasks,
        attempts=parsed.attempts,
        concurrency=parsed.concurrency or 1,
        retry_errors=parsed.retry_errors,
        agent_timeout_s=parsed.agent_timeout,
        verifier_timeout_s=parsed.verifier_timeout,
        max_cost=parsed.max_cost or 0.0,
        max_task_cost=parsed.max_task_cost or 0.0,
        on_cap=parsed.on_cap,
        max_steps=parsed.max_steps,
        json_mode=parsed.json,
        settings={
            "config_path": str(Path(parsed.config).resolve()) if parsed.config else None,
            "overrides": overrides,
            "runtime": parsed.runtime,
            "on_confirm": parsed.on_confirm,
        },
    )
    pool = None
    if parsed.ray:
        from workbench.eval.ray_pool import RayPool, RayUnavailable

        pool = RayPool(
            parsed.ray,
            max_in_flight=parsed.concurrency,
            runtime_env={"env_vars": _model_env()},
        )
        try:
            pool.connect()
        except RayUnavailable as exc:
            print(f"workbench eval: error: {exc}", file=sys.stderr)
            return eval_exit.USAGE
    # SIGTERM ends the run as Ctrl-C does: finished trials kept, running ones stopped.
    signal.signal(signal.SIGTERM, _as_interrupt)
    try:
        return run_eval(options, pool=pool)
    except (DatasetError, TaskConfigError) as exc:
        print(f"workbench eval: error: {exc}", file=sys.stderr)
        return eval_exit.USAGE
    finally:
        if pool is not None:
            pool.close()


def _model_env() -> dict[str, str]:
    """The model's settings from this environment (LLM_*, WORKBENCH_*), for the Ray nodes'
    trials: they read the configuration as a local trial does (docs/scaling.md says that the
    API key then travels in the job's runtime_env)."""
    return {k: v for k, v in os.environ.items() if k.startswith(("LLM_", "WORKBENCH_"))}


def _as_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _check_config(parsed: argparse.Namespace) -> str | None:
    """The configuration the trials will use, checked once here: None, or what is wrong."""
    from pydantic import ValidationError

    from workbench.config.load import ConfigError, load_config, require_model

    overrides = {"llm.model": parsed.model} if parsed.model else {}
    try:
        config = load_config(Path(parsed.config) if parsed.config else None, overrides=overrides)
        require_model(config)
    except (ConfigError, ValidationError, ValueError) as exc:
        return str(exc)
    return None


def _report(argv: list[str]) -> int:
    """`workbench eval report ...`."""
    from workbench.eval.report import report_command

    return report_command(argv)
