"""Benchmark of `workbench replay` and the session list it starts from.

Run: `python benchmarks/replay.py`. Progress goes to stderr; the last line on stdout is ONE
JSON object with the figures, each beside a baseline measured in this run on the same files:

- `list_1000_sessions_s`: `session.index.list_summaries` (what `workbench sessions` runs) over
  1000 logs of 60 events each; baseline: the same files' first lines read with `json` alone.
- `watch_10k_events_s`: a 10 000-event session read and printed headless as JSON lines
  (`replay.watch` into memory); baseline: the same lines read and written with `json` alone.
- `rerun_overhead_ms_per_step`: a 100-step session re-run in the local sandbox, the time a step
  takes beyond the sandbox's own (its tool's `execute`); baseline: the same actions sent to a
  runtime directly, per step.

Targets: list ≤ 0.5 s, watch ≤ 1.0 s, re-run overhead ≤ 5 ms a step.
"""

from __future__ import annotations

import asyncio
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.local import LocalRuntime
from workbench.config.load import load_config
from workbench.events import (
    ActionEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
    event_to_json,
)
from workbench.headless.output import JsonPrinter
from workbench.replay.recording import load_recording
from workbench.replay.rerun import Rerunner
from workbench.replay.watch import watch
from workbench.session.index import list_summaries
from workbench.session.log import make_header
from workbench.tools.base import ToolContext

SESSIONS = 1000
EVENTS_PER_SESSION = 60
WATCH_EVENTS = 10_000
RERUN_STEPS = 100
ROUNDS = 3
FILES = sorted(f"file_{i}.txt" for i in range(12))
"""What the recorded `ls` printed (the re-run's workspace holds them)."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def session_events(count: int, workspace: str) -> list[Event]:
    """A plausible session: task, then steps of llm_call, a command, its output, a state."""
    t0 = 1_790_000_000.0
    events: list[Event] = [
        StateChangedEvent(id=1, timestamp=t0, state="running"),
        MessageEvent(id=2, timestamp=t0, source="user", text="list the files and count them"),
    ]
    step = 0
    while len(events) < count - 1:
        step += 1
        n = len(events)
        events.append(
            LLMCallEvent(
                id=n + 1,
                timestamp=t0 + n,
                model="openai/test",
                prompt_tokens=900 + n,
                completion_tokens=40,
                cost=0.001,
                latency_ms=800.0,
            )
        )
        action = CmdRunAction(command=f"echo step {step} && ls -1 {workspace}")
        events.append(
            ActionEvent(
                id=n + 2,
                timestamp=t0 + n + 1,
                tool_name="execute_bash",
                tool_call_id=f"call_{step}",
                action=action,
                thought="Looking around." if step % 3 == 0 else "",
            )
        )
        output = f"step {step}\n" + "\n".join(FILES) + "\n"
        events.append(
            ObservationEvent(
                id=n + 3,
                timestamp=t0 + n + 2,
                cause=n + 2,
                tool_call_id=f"call_{step}",
                observation=CmdOutputObservation(
                    command=action.command, content=output, exit_code=0, cwd=workspace
                ),
            )
        )
    events = events[: count - 1]
    events.append(
        StateChangedEvent(
            id=len(events) + 1, timestamp=t0 + count, state="finished", reason="success"
        )
    )
    return events


def write_log(path: Path, session_id: str, events: list[Event]) -> None:
    header = make_header(session_id, "/tmp/ws", "openai/test", {})
    lines = [header.model_dump_json(), *(event_to_json(event) for event in events)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def best(run: object, rounds: int = ROUNDS) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return min(times)


def bench_list(folder: Path) -> dict[str, float]:
    events = session_events(EVENTS_PER_SESSION, "/tmp/ws")
    for number in range(SESSIONS):
        write_log(
            folder / f"20261123-{number:06d}-abcdef.jsonl", f"20261123-{number:06d}-abcdef", events
        )
    found = list_summaries(folder)
    assert len(found) == SESSIONS and found[0].task

    def baseline() -> None:
        for path in sorted(folder.glob("*.jsonl"), reverse=True):
            with path.open("rb") as stream:
                json.loads(stream.readline())

    return {
        "list_1000_sessions_s": round(best(lambda: list_summaries(folder)), 4),
        "list_baseline_json_first_lines_s": round(best(baseline), 4),
    }


def bench_watch(folder: Path) -> dict[str, float]:
    path = folder / "20261123-000000-watch.jsonl"
    write_log(path, "20261123-000000-watch", session_events(WATCH_EVENTS, "/tmp/ws"))

    def replayed() -> None:
        recording = load_recording(path)
        out = io.StringIO()
        watch(recording, JsonPrinter(out, io.StringIO(), all_events=True))
        assert out.getvalue().count("\n") == WATCH_EVENTS + 2

    def baseline() -> None:
        out = io.StringIO()
        with path.open("rb") as stream:
            stream.readline()
            for line in stream:
                out.write(json.dumps({"v": 1, "type": "event", "event": json.loads(line)}) + "\n")

    return {
        "watch_10k_events_s": round(best(replayed), 4),
        "watch_baseline_json_only_s": round(best(baseline), 4),
    }


async def bench_rerun(folder: Path) -> dict[str, float]:
    workspace = folder / "ws"
    workspace.mkdir()
    for name in FILES:
        (workspace / name).write_text("x")
    session = folder / "20261123-000000-rerun.jsonl"
    events = session_events(3 + RERUN_STEPS * 3, str(workspace))
    write_log(session, "20261123-000000-rerun", events)
    recording = load_recording(session)
    recording.workspace = str(workspace)
    config = load_config(env={"WORKBENCH_AGENT_ENABLE_BROWSER": "false"})
    runtime = LocalRuntime(workspace, disable=("browser", "jupyter"), warm_up=False)
    await runtime.start()
    try:
        info = await runtime.info()
        actions = [e.action for e in events if isinstance(e, ActionEvent)]
        for action in actions[:5]:  # warm the shell up
            await runtime.execute(action)
        overheads, bases = [], []
        for _ in range(ROUNDS):
            rerunner = Rerunner(recording, config, ToolContext(runtime, info.workspace))
            started = time.perf_counter()
            results = [result async for result in rerunner.run()]
            total = time.perf_counter() - started
            sandbox = sum(result.sandbox_s for result in results)
            assert len(results) == len(actions), (len(results), len(actions))
            differing = [r for r in results if r.differs]
            assert not differing, (differing[0].recorded_text, differing[0].new_text)
            overheads.append((total - sandbox) / len(results) * 1000)
            started = time.perf_counter()
            for action in actions:
                await runtime.execute(action)
            bases.append((time.perf_counter() - started) / len(actions) * 1000)
    finally:
        await runtime.close()
    return {
        "rerun_overhead_ms_per_step": round(statistics.median(overheads), 3),
        "rerun_baseline_sandbox_ms_per_step": round(statistics.median(bases), 3),
        "rerun_steps": len(actions),
    }


def main() -> None:
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        folder = Path(tmp)
        (folder / "list").mkdir()
        log(f"listing {SESSIONS} sessions ...")
        results |= bench_list(folder / "list")
        log(f"watching {WATCH_EVENTS} events ...")
        results |= bench_watch(folder)
        log(f"re-running {RERUN_STEPS} steps ...")
        results |= asyncio.run(bench_rerun(folder))
    targets = {
        "list_1000_sessions_s": 0.5,
        "watch_10k_events_s": 1.0,
        "rerun_overhead_ms_per_step": 5.0,
    }
    results["targets"] = targets
    results["targets_met"] = {name: results[name] <= limit for name, limit in targets.items()}  # type: ignore[operator]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
