"""Benchmark of the security analyzer: how long reading one action takes.

Run: `python benchmarks/security.py`. Progress goes to stderr; the last line on stdout is ONE
JSON object (milliseconds). `analyze_ms_median`/`analyze_ms_p95` are over every dangerous and
everyday case of the acceptance tests (`tests/workbench/security_cases.py`), each timed as the
mean of several runs; beside them, in the same run, the regex analyzer this one replaced (read
from git history, when there is one) and a bare `shlex.split` of the same texts. Target:
analyze_ms_p95 <= 2. Then the local sandbox's cold start and echo with isolation on, each beside
the same figure with isolation off (`benchmarks/isolation.py`); target: cold start <= 350 ms.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "workbench")]

from security_cases import DANGEROUS, EVERYDAY, Case, placeholders  # noqa: E402

from sandbox.protocol import BrowseAction, CmdRunAction, FileEditAction, IPythonAction  # noqa: E402
from workbench.events import AnyAction  # noqa: E402
from workbench.security.policy import assess  # noqa: E402

REPEATS = 20
OLD_ANALYZER = "db3f54f:workbench/security/analyzer.py"
"""The regex analyzer as it was before the parse (a commit on main)."""
WS, DECOY, SHM = "/home/me/proj", "/home/me/decoy", "/dev/shm/wb-decoy"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def action_of(case: Case, where: dict[str, str]) -> AnyAction:
    """The action a tool call of `case` becomes."""
    args = case.arguments(where)
    if case.tool == "execute_bash":
        return CmdRunAction(command=args["command"])
    if case.tool == "execute_ipython_cell":
        return IPythonAction(code=args["code"])
    if case.tool == "browser":
        return BrowseAction(action=args["code"])
    return FileEditAction(**args)


def text_of(action: AnyAction) -> str:
    """The text an analyzer reads for `action`."""
    for field in ("command", "code", "action", "path"):
        value = getattr(action, field, None)
        if isinstance(value, str):
            return value
    return ""


def per_case_ms(run: Callable[[AnyAction], object], actions: list[AnyAction]) -> list[float]:
    """For each action, the mean time of `run` over REPEATS runs, in ms."""
    times = []
    for action in actions:
        run(action)  # warm: first-use caches (the parser, regexes)
        start = time.perf_counter()
        for _ in range(REPEATS):
            run(action)
        times.append((time.perf_counter() - start) * 1000 / REPEATS)
    return times


def summary(times: list[float]) -> tuple[float, float]:
    """(median, p95) of `times`, rounded."""
    p95 = statistics.quantiles(times, n=20, method="inclusive")[18]
    return round(statistics.median(times), 4), round(p95, 4)


def old_analyzer() -> types.ModuleType | None:
    """The regex analyzer from git history, or None where there is no history."""
    try:
        source = subprocess.run(
            ["git", "-C", str(ROOT), "show", OLD_ANALYZER],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    module = types.ModuleType("old_analyzer")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, OLD_ANALYZER, "exec"), module.__dict__)
    return module


def old_assess(module: types.ModuleType) -> Callable[[AnyAction], object]:
    """The old analyzer's reading of an action, as the tools called it."""

    def run(action: AnyAction) -> object:
        if isinstance(action, CmdRunAction):
            return module.analyze_command(action.command, WS)
        if isinstance(action, IPythonAction):
            return module.analyze_python(action.code, WS)
        if isinstance(action, FileEditAction):
            return module.analyze_path_edit(action.path, WS)
        return None

    return run


def isolation_figures() -> dict[str, Any]:
    """Cold start and echo with isolation on beside off (`benchmarks/isolation.py`)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import isolation

    log("isolation on and off: cold starts and echoes ...")
    return dict(asyncio.run(isolation.isolation_figures()))


def main() -> None:
    where = placeholders(WS, DECOY, SHM, sys.executable)
    actions = [action_of(case, where) for case in (*DANGEROUS, *EVERYDAY)]
    log(f"{len(actions)} actions ({len(DANGEROUS)} dangerous, {len(EVERYDAY)} everyday)")
    log("analyzer ...")
    median, p95 = summary(per_case_ms(lambda action: assess(action, WS), actions))
    log(f"  median {median} ms, p95 {p95} ms")
    texts = {id(action): text_of(action) for action in actions}

    def split(action: AnyAction) -> object:
        try:
            return shlex.split(texts[id(action)])
        except ValueError:
            return None

    log("shlex.split baseline ...")
    shlex_median, shlex_p95 = summary(per_case_ms(split, actions))
    figures: dict[str, Any] = {
        "cases": len(actions),
        "analyze_ms_median": median,
        "analyze_ms_p95": p95,
        "shlex_split_ms_median": shlex_median,
        "shlex_split_ms_p95": shlex_p95,
    }
    module = old_analyzer()
    if module is not None:
        log("old regex analyzer ...")
        old_median, old_p95 = summary(per_case_ms(old_assess(module), actions))
        figures |= {"regex_analyze_ms_median": old_median, "regex_analyze_ms_p95": old_p95}
    figures |= isolation_figures()
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
