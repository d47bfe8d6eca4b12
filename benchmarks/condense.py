"""Benchmark of condensation: eliding a 300-step history (no LLM), and counting tokens per step.

Run: `python benchmarks/condense.py`. Progress goes to stderr; the last line on stdout is ONE
JSON object with the figures, each beside a baseline measured in this run on the same history
(300 steps, each a shell command with ~5 kB of output, as the controller records them):

- `elide_300_steps_ms`: one condensation that elides the old outputs (no LLM call), from the
  request over the threshold to the condensed request counted again, with `tokens_before` and
  `tokens_after`; baseline: `count_whole_history_ms`, litellm's `token_counter` over the same
  300-step request in one call (what counting from scratch would cost at every step).
- `count_overhead_ms_per_step`: what condensation adds to each step of a growing session
  (building the request and counting its new messages, minus building alone), median over the
  300 steps; baseline: `build_ms_per_step`, the message builder alone (what a step did before).

Targets: eliding ≤ 500 ms; the per-step overhead ≤ 5 ms.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.agent.messages import MessageBuilder
from workbench.config.schema import CondenseConfig, Config, LLMConfig
from workbench.controller.condenser import Condenser
from workbench.events import (
    ActionEvent,
    CondensationEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
)
from workbench.llm import load_litellm
from workbench.tools.registry import REGISTRY, schemas

STEPS = 300
MODEL = "openai/gpt-4o"


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def step_events(step: int, next_id: int) -> list[Event]:
    """One recorded step: the LLM call, a shell command, its ~5 kB of output."""
    command = f"python3 report.py --part {step}"
    output = "\n".join(
        f"part {step} line {line}: checked {step * 7 + line} files, all fine" for line in range(110)
    )
    call_id = f"call_{step}"
    return [
        LLMCallEvent(
            id=next_id,
            model=MODEL,
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
            latency_ms=0.0,
        ),
        ActionEvent(
            id=next_id + 1,
            tool_name="execute_bash",
            tool_call_id=call_id,
            action=CmdRunAction(command=command),
            security_risk="LOW",
        ),
        ObservationEvent(
            id=next_id + 2,
            cause=next_id + 1,
            tool_call_id=call_id,
            observation=CmdOutputObservation(content=output, command=command, exit_code=0),
        ),
    ]


async def bench() -> dict[str, Any]:
    litellm = load_litellm()
    config = Config(
        llm=LLMConfig(model=MODEL, max_input_tokens=10_000_000),
        condense=CondenseConfig(summarize=False),
    )
    tools = schemas(REGISTRY.callable())
    builder = MessageBuilder("You are an engineer.", config.agent.max_observation_chars)
    events: list[Event] = [MessageEvent(id=1, source="user", text="Check every part.")]
    emitted: list[CondensationEvent] = []

    def emit(event: CondensationEvent) -> None:
        emitted.append(event)
        events.append(event)

    async def no_llm(messages: list[Any]) -> Any:
        raise AssertionError("no LLM call in this benchmark")

    condenser = Condenser(config, builder, tools, no_llm, lambda: len(events) + 1, emit)
    plain = MessageBuilder("You are an engineer.", config.agent.max_observation_chars)
    overheads: list[float] = []
    builds: list[float] = []
    log(f"growing a session to {STEPS} steps, counting each request ...")
    for step in range(1, STEPS + 1):
        events.extend(step_events(step, len(events) + 1))
        started = time.perf_counter()
        plain.build(events)
        build = time.perf_counter() - started
        started = time.perf_counter()
        messages = await condenser.messages(events)
        whole = time.perf_counter() - started
        builds.append(build * 1000)
        overheads.append((whole - build) * 1000)
    assert not emitted, "the window was meant to be large enough here"
    log("counting the whole 300-step request in one call (the baseline) ...")
    started = time.perf_counter()
    whole_count = litellm.token_counter(model=MODEL, messages=messages, tools=tools)
    count_whole_ms = (time.perf_counter() - started) * 1000
    log("eliding the old outputs ...")
    condenser.window = int(condenser.last_tokens / 2)  # the request is now twice the window
    started = time.perf_counter()
    condensed = await condenser.messages(events)
    elide_ms = (time.perf_counter() - started) * 1000
    event = emitted[0]
    return {
        "elide_300_steps_ms": round(elide_ms, 1),
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "elided_outputs": len(event.elided),
        "messages_after": len(condensed),
        "count_whole_history_ms": round(count_whole_ms, 1),
        "count_whole_history_tokens": whole_count,
        "count_overhead_ms_per_step": round(statistics.median(overheads), 3),
        "count_overhead_ms_per_step_p95": round(sorted(overheads)[int(STEPS * 0.95)], 3),
        "build_ms_per_step": round(statistics.median(builds), 3),
        "steps": STEPS,
    }


def main() -> None:
    results = asyncio.run(bench())
    targets = {"elide_300_steps_ms": 500.0, "count_overhead_ms_per_step": 5.0}
    results["targets"] = targets
    results["targets_met"] = {name: results[name] <= limit for name, limit in targets.items()}
    print(json.dumps(results))


if __name__ == "__main__":
    main()
