"""Sessions benchmark: listing 1000 saved sessions, showing one, reading one back for resume.

Writes 1000 session logs with the real `SessionLog` (a task, 20 steps of an LLM call, a
command and a 1.5 KB result each, a final state: ~44 KB a log) into a temporary folder, then
prints progress lines and ONE JSON object on its last line:
- `list_1000_sessions_s`: `session.log.list_summaries` over them (median of 5; target <= 0.5).
- `baseline_headers_json_s` (same run): the first line of every log parsed with `json` alone,
  the least any listing that names each session's header must do.
- `baseline_whole_files_json_s` (same run): every line of every log parsed with `json`: what a
  listing that read whole logs would cost at least.
- `sessions_command_s`: the whole `workbench sessions` process over them (median of 3; most of
  it is importing the config models).
- `show_one_s`: `cli.sessions.session_facts` of one log (median of 5).
- `load_history_s`: `resume.load_history` of one log (median of 5).
Run: `.venv/bin/python benchmarks/sessions.py`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.cli.sessions import session_facts
from workbench.events import (
    ActionEvent,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.session.log import SessionLog, list_summaries, make_header
from workbench.session.resume import load_history

SESSIONS = 1000
STEPS = 20
TARGET_LIST_S = 0.5


def write_sessions(directory: Path) -> None:
    """SESSIONS logs of STEPS steps each."""
    for n in range(SESSIONS):
        header = make_header(
            f"20260301-{n:06d}-abcdef", "/w", "m", {"sandbox": {"runtime": "local"}}
        )
        with SessionLog.create(directory, header) as log:
            log.append(MessageEvent(id=1, source="user", text=f"task {n}"))
            next_id = 2
            for step in range(STEPS):
                call = f"c{step}"
                log.append(
                    LLMCallEvent(
                        id=next_id,
                        model="m",
                        prompt_tokens=900,
                        completion_tokens=40,
                        cost=0.001,
                        latency_ms=700,
                    )
                )
                log.append(
                    ActionEvent(
                        id=next_id + 1,
                        tool_name="execute_bash",
                        tool_call_id=call,
                        action=CmdRunAction(command="ls -la"),
                    )
                )
                output = CmdOutputObservation(content="x" * 1500, command="ls -la", exit_code=0)
                log.append(
                    ObservationEvent(
                        id=next_id + 2, cause=next_id + 1, tool_call_id=call, observation=output
                    )
                )
                next_id += 3
            log.append(StateChangedEvent(id=next_id, state="finished", reason="success"))


def median_s(work: Callable[[], object], runs: int) -> float:
    """The median wall time of `work` over `runs` calls."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def headers_only(directory: Path) -> None:
    """The baseline: each log's first line, with json alone."""
    for path in sorted(directory.glob("*.jsonl"), reverse=True):
        with path.open("rb") as stream:
            json.loads(stream.readline())


def whole_files(directory: Path) -> None:
    """Every line of every log, with json alone."""
    for path in sorted(directory.glob("*.jsonl"), reverse=True):
        with path.open("rb") as stream:
            for line in stream:
                json.loads(line)


def main() -> None:
    """Measure and print."""
    with tempfile.TemporaryDirectory() as temp:
        data = Path(temp)
        directory = data / "sessions"
        print(f"writing {SESSIONS} sessions ...", flush=True)
        write_sessions(directory)
        size = sum(path.stat().st_size for path in directory.iterdir())
        print(f"{size / 1e6:.1f} MB of logs", flush=True)
        assert len(list_summaries(directory)) == SESSIONS
        results: dict[str, object] = {"sessions": SESSIONS, "logs_mb": round(size / 1e6, 1)}
        results["list_1000_sessions_s"] = round(median_s(lambda: list_summaries(directory), 5), 4)
        results["baseline_headers_json_s"] = round(median_s(lambda: headers_only(directory), 5), 4)
        results["baseline_whole_files_json_s"] = round(
            median_s(lambda: whole_files(directory), 3), 4
        )
        env = {**os.environ, "WORKBENCH_DATA_DIR": str(data)}
        command = [sys.executable, "-m", "workbench", "sessions"]
        results["sessions_command_s"] = round(
            median_s(
                lambda: subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True),
                3,
            ),
            4,
        )
        one = directory / "20260301-000500-abcdef.jsonl"
        results["show_one_s"] = round(median_s(lambda: session_facts(one), 5), 4)
        results["load_history_s"] = round(median_s(lambda: load_history(one), 5), 4)
    for name, value in results.items():
        print(f"{name}: {value}", flush=True)
    results["targets"] = {"list_1000_sessions_s": TARGET_LIST_S}
    listed = results["list_1000_sessions_s"]
    results["targets_met"] = {
        "list_1000_sessions_s": isinstance(listed, float) and listed <= TARGET_LIST_S
    }
    print(json.dumps(results, separators=(",", ":")))


if __name__ == "__main__":
    main()
