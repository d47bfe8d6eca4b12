"""Sessions benchmark: listing 1000 saved sessions, showing one, reading one back for resume.

Writes 1000 session logs with the real `SessionLog` (a header carrying the default config, as a
real session's does; a task, 20 steps of an LLM call, a command and a 1.5 KB result each, a
final state: ~46 KB a log) into a temporary folder, then prints one line per figure (stderr) and
ONE JSON object on stdout. The listing's target (issue 24) is a ratio to its floor, both
measured in this run, interleaved (one of each in turn, the median of each):
- `listing_warm_s`: what `workbench sessions` does once its imports are done
  (`cli.sessions.list_sessions`, the lines written to /dev/null) with the summary index
  (`session/index.py`) in place and the logs unchanged since it was written.
- `floor_first_line_s`: the floor: the folder listed and every log opened and its first line
  read, not parsed. The least a listing that names each session from its own file can do; the
  index lets the listing open no log at all, so the honest floor is the rawest read of each.
  `first_line_json_s` (the same, each line parsed with `json`) is printed beside it.
- target: `listing_warm_s / floor_first_line_s <= 4`.
- `listing_cold_s`: the same listing with no index (it reads every log's first lines and last
  64 KB and writes the index; median of 3); `scan_no_index_s`: `summaries.scan_summaries`, the
  logs read with no index at all (what the listing cost before the index).
- `baseline_whole_files_json_s`: every line of every log parsed with `json`.
- `sessions_command_s`: the whole `workbench sessions` process (median of 3; most of it is
  importing the config models).
- `show_one_s`: `cli.sessions.session_facts` of one log; `load_history_s`:
  `resume.load_history` of one log (median of 5 each).
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
from workbench.cli.sessions import list_sessions, session_facts
from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.session.index import INDEX_NAME, RACY_NS, list_summaries
from workbench.session.log import SessionLog, make_header
from workbench.session.resume import load_history
from workbench.session.summaries import scan_summaries

SESSIONS = 1000
STEPS = 20
TARGET_RATIO = 4.0
ROUNDS = 15


def write_sessions(directory: Path) -> None:
    """SESSIONS logs of STEPS steps each."""
    config = Config().redacted_dict()
    for n in range(SESSIONS):
        header = make_header(f"20260301-{n:06d}-abcdef", "/w", "m", config)
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


def first_lines(directory: Path) -> None:
    """The floor: the folder listed, each log opened and its first line read (not parsed)."""
    for name in sorted((n for n in os.listdir(directory) if n.endswith(".jsonl")), reverse=True):
        with open(directory / name, "rb") as stream:
            stream.readline()


def first_lines_json(directory: Path) -> None:
    """The floor with each first line parsed with `json`."""
    for name in sorted((n for n in os.listdir(directory) if n.endswith(".jsonl")), reverse=True):
        with open(directory / name, "rb") as stream:
            json.loads(stream.readline())


def listing(directory: Path) -> None:
    """What `workbench sessions` does after its imports: list and print (to /dev/null)."""
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            list_sessions(directory, as_json=False)
        finally:
            sys.stdout = stdout


def listing_cold(directory: Path) -> None:
    """The listing with no index (it reads every log and writes the index)."""
    (directory / INDEX_NAME).unlink(missing_ok=True)
    listing(directory)


def interleaved(works: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """The median wall time of each of `works`, run one after the other `rounds` times."""
    times: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(rounds):
        for name, work in works.items():
            started = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def wait_out_racy_window(directory: Path) -> None:
    """Wait until the newest log is older than the index's racy window (else the index would
    rightly trust none of them), then list once to write the index."""
    newest = max(os.stat(directory / n).st_ctime_ns for n in os.listdir(directory))
    deadline = time.monotonic() + 30
    while time.time_ns() <= newest + RACY_NS + 50_000_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    list_summaries(directory)


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
        print(f"writing {SESSIONS} sessions ...", file=sys.stderr, flush=True)
        write_sessions(directory)
        size = sum(path.stat().st_size for path in directory.iterdir())
        print(f"{size / 1e6:.1f} MB of logs", file=sys.stderr, flush=True)
        assert len(list_summaries(directory)) == SESSIONS
        assert list_summaries(directory) == scan_summaries(directory)
        wait_out_racy_window(directory)
        results: dict[str, object] = {"sessions": SESSIONS, "logs_mb": round(size / 1e6, 1)}
        warm = interleaved(
            {
                "listing_warm_s": lambda: listing(directory),
                "floor_first_line_s": lambda: first_lines(directory),
                "first_line_json_s": lambda: first_lines_json(directory),
            },
            ROUNDS,
        )
        results |= {name: round(value, 4) for name, value in warm.items()}
        ratio = warm["listing_warm_s"] / warm["floor_first_line_s"]
        results["listing_ratio"] = round(ratio, 2)
        print(
            f"workbench sessions listing ({SESSIONS} logs, index warm): "
            f"{warm['listing_warm_s']:.4f} s vs first line of each log "
            f"{warm['floor_first_line_s']:.4f} s = {ratio:.1f} x (target <= {TARGET_RATIO:g}x); "
            f"first lines parsed with json: {warm['first_line_json_s']:.4f} s",
            file=sys.stderr,
            flush=True,
        )
        cold = interleaved(
            {
                "listing_cold_s": lambda: listing_cold(directory),
                "scan_no_index_s": lambda: scan_summaries(directory),
            },
            3,
        )
        results |= {name: round(value, 4) for name, value in cold.items()}
        print(
            f"workbench sessions listing ({SESSIONS} logs, no index: reads every log, writes the "
            f"index): {cold['listing_cold_s']:.4f} s; every log read without an index: "
            f"{cold['scan_no_index_s']:.4f} s",
            file=sys.stderr,
            flush=True,
        )
        wait_out_racy_window(directory)
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
        print(f"{name}: {value}", file=sys.stderr, flush=True)
    results["targets"] = {"listing_ratio": TARGET_RATIO}
    results["targets_met"] = {"listing_ratio": ratio <= TARGET_RATIO}
    print(json.dumps(results, separators=(",", ":")))


if __name__ == "__main__":
    main()
