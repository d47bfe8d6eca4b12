"""Benchmark of the eval harness: the local pool and a two-worker Ray cluster side by side.

Run: `python benchmarks/eval.py [--trials 32] [--concurrency 1,4,16] [--pools local,ray]
[--work eval|stand-in]` (the Ray pool needs the ray extra; figures: docs/scaling.md section 7).
Progress goes to stderr; the last line on stdout is ONE JSON object with the figures.
Everything is measured in this run, on this machine.

For each pool and each concurrency it runs `--trials` scripted trials and reports trials per
minute (wall clock, first start to last outcome), the peak memory of this process and all its
descendants (the pool, the trials' sandboxes and, for Ray, the cluster's own processes: GCS,
raylets, workers), and the harness's overhead per trial beyond the agent's own run: the time
from a trial's start (`prepare`) to its outcome in the driver, minus the agent phase
(`seconds["agent"]`), split into the sandbox set-up, the verifier, and the rest (the trial
process or Ray task, transport, the driver).

`--work stand-in`: `workbench.testing.shell_trial.shell_trial`, a fresh local sandbox
(bubblewrap where it works) whose bash runs three scripted commands, and a check.
`--work eval` (the default where it exists): the real thing, `workbench.eval.run.run_eval` on
a generated dataset of `--trials` Harbor tasks, each played by the scripted LLM server (a
command, then finish) and scored by its `tests/test.sh`; the trial folders are written as
`workbench eval` writes them.

The Ray cluster is `ray.cluster_utils.Cluster` on loopback: a head with no sandbox slots and two
worker nodes with `max(concurrency) / 2` slots each; `RayPool(max_in_flight=c)` caps each round.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil

from workbench.eval.types import TrialJob, TrialOutcome, TrialPool

STAND_IN_COMMANDS = [
    "python3 -c 'import json; print(json.dumps(sorted([3, 1, 2])))' > sorted.json",
    "cat sorted.json && ls -la | head -3",
    "echo done > result.txt",
]


def log(message: str) -> None:
    """Progress, on stderr."""
    print(message, file=sys.stderr, flush=True)


class MemoryPeak:
    """Samples the RSS of this process and its descendants every 0.1 s; keeps the peak."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> MemoryPeak:
        self.peak = tree_rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while not self._stop.wait(0.1):
            self.peak = max(self.peak, tree_rss())


def tree_rss() -> int:
    """Bytes resident in this process and every descendant (one sample)."""
    me = psutil.Process()
    total = 0
    for proc in [me, *me.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def local_pool(concurrency: int) -> TrialPool:
    """The local pool `workbench eval` uses."""
    from workbench.eval.pool import LocalPool

    return LocalPool(concurrency)


@contextlib.contextmanager
def ray_cluster(slots_per_worker: int) -> Iterator[str]:
    """A head with no slots and two workers, all on loopback; yields its address."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # stay on 127.0.0.1 (see the test)
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    ray_constants.ENABLE_RAY_CLUSTER = False
    node: dict[str, Any] = {
        "num_cpus": 0,
        "node_ip_address": "127.0.0.1",
        "object_store_memory": 80 * 1024 * 1024,
    }
    began = time.monotonic()
    cluster = Cluster(
        initialize_head=True, head_node_args={**node, "resources": {"sandbox_slot": 0}}
    )
    try:
        for _ in range(2):
            cluster.add_node(**node, resources={"sandbox_slot": slots_per_worker})
        cluster.wait_for_nodes()
        log(f"  Ray cluster up in {time.monotonic() - began:.1f} s: {cluster.address}")
        yield str(cluster.address)
    finally:
        import ray

        ray.shutdown()
        cluster.shutdown()


class TimedPool:
    """Wraps a pool: times each trial from its start (`prepare`) to its outcome in the driver."""

    def __init__(self, inner: TrialPool) -> None:
        self.inner = inner
        self.rows: list[dict[str, float]] = []
        self._started: dict[str, float] = {}

    def run(
        self,
        jobs: Sequence[TrialJob],
        work: Callable[[TrialJob], TrialOutcome],
        on_done: Callable[[TrialOutcome], None],
        should_start: Callable[[], bool],
        prepare: Callable[[TrialJob], TrialJob] | None = None,
    ) -> None:
        """The inner pool's run, with the timing around `prepare` and `on_done`."""

        def timed_prepare(job: TrialJob) -> TrialJob:
            self._started[job.trial_id] = time.monotonic()
            return prepare(job) if prepare else job

        def timed_done(outcome: TrialOutcome) -> None:
            if outcome.status != "done" or outcome.reward != 1.0:
                raise RuntimeError(f"{outcome.trial_id}: {outcome.status}: {outcome.error}")
            latency = time.monotonic() - self._started[outcome.trial_id]
            self.rows.append({"latency": latency, **outcome.seconds})
            on_done(outcome)

        run: Any = self.inner.run
        if "prepare" in inspect.signature(run).parameters:
            run(jobs, work, timed_done, should_start, prepare=timed_prepare)
        else:  # a pool without `prepare`: every trial starts when the round does
            for job in jobs:
                timed_prepare(job)
            run(jobs, work, timed_done, should_start)

    def cancel_running(self) -> None:
        """The inner pool's."""
        self.inner.cancel_running()


def stand_in_round(pool: TimedPool, trials: int, tag: str) -> None:
    """`trials` stand-in trials on `pool`."""
    from workbench.testing.shell_trial import shell_trial

    settings = {"commands": STAND_IN_COMMANDS, "check": "test -s result.txt"}
    jobs = [TrialJob(f"{tag}-{i:03}__1", "stand-in", 1, settings) for i in range(trials)]
    pool.run(jobs, shell_trial, lambda outcome: None, lambda: True)


def eval_round(pool: TimedPool, tag: str, root: Path) -> None:
    """The generated dataset's trials through `run_eval` (scripted agent, verifier, folders)."""
    from workbench.eval.run import RunOptions, run_eval

    out = root / f"out-{tag}"
    options = RunOptions(dataset=str(root / "dataset"), out=out, json_mode=True)
    with contextlib.redirect_stdout(sys.stderr):
        code = run_eval(options, pool=pool)
    if code != 0:
        raise RuntimeError(f"run_eval exited {code}: see {out}")


def write_dataset(root: Path, trials: int) -> dict[str, Any]:
    """`trials` Harbor tasks under root/dataset, and the scripted server's routes for them."""
    routes = []
    for i in range(trials):
        name = f"bench-{i:03}"
        folder = root / "dataset" / name
        (folder / "tests").mkdir(parents=True)
        (folder / "instruction.md").write_text(
            f"Write the sum of 2 and 3 to sum.txt (TASK {name})\n"
        )
        (folder / "task.toml").write_text(
            "[agent]\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\n"
        )
        (folder / "tests" / "test.sh").write_text(
            '#!/bin/bash\n[ "$(cat sum.txt)" = 5 ] && echo 1 > /logs/verifier/reward.txt '
            "|| echo 0 > /logs/verifier/reward.txt\n"
        )
        call = {
            "name": "execute_bash",
            "arguments": {"command": "echo $((2 + 3)) > sum.txt", "security_risk": "LOW"},
        }
        done = {"name": "finish", "arguments": {"message": "done", "outcome": "success"}}
        routes.append(
            {"match": f"(TASK {name})", "steps": [{"tool_calls": [call]}, {"tool_calls": [done]}]}
        )
    return {"routes": routes}


def eval_environment(root: Path, base_url: str) -> None:
    """The scripted model and an isolated config for every trial (nodes inherit it)."""
    os.environ.update(
        {
            "LLM_MODEL": "openai/test-model",
            "LLM_BASE_URL": base_url,
            "LLM_API_KEY": "sk-bench",
            "WORKBENCH_DATA_DIR": str(root / "data"),
            "WORKBENCH_CONFIG_DIR": str(root / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
            "WORKBENCH_LLM_MAX_INPUT_TOKENS": "10000000",
        }
    )


def summarize(rows: list[dict[str, float]], wall_s: float, peak: int, base: int) -> dict[str, Any]:
    """The figures of one round."""

    def mean(key: str) -> float:
        return round(statistics.fmean(row.get(key, 0.0) for row in rows), 3)

    overhead = [row["latency"] - row.get("agent", 0.0) for row in rows]
    return {
        "trials": len(rows),
        "wall_s": round(wall_s, 2),
        "trials_per_min": round(len(rows) / wall_s * 60, 1),
        "peak_mb": round(peak / 2**20),
        "peak_over_idle_mb": round((peak - base) / 2**20),
        "agent_s": mean("agent"),
        "overhead_s": round(statistics.fmean(overhead), 3),
        "overhead_p90_s": round(sorted(overhead)[int(0.9 * (len(overhead) - 1))], 3),
        "setup_s": mean("setup"),
        "verifier_s": mean("verifier"),
        "rest_s": round(statistics.fmean(r["latency"] - r.get("total", 0.0) for r in rows), 3),
    }


def main() -> None:
    """Run the rounds and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=32)
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--pools", default="local,ray")
    parser.add_argument(
        "--work",
        choices=["stand-in", "eval"],
        default="eval",
        help="eval (the real driver and trials, scripted model; default) or stand-in "
        "(a shell trial without an LLM)",
    )
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    pools = args.pools.split(",")
    if "ray" in pools and importlib.util.find_spec("ray") is None:
        raise SystemExit("the ray pool needs the ray extra: pip install -e '.[ray]'")
    figures: dict[str, Any] = {"trials": args.trials, "work": args.work, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp, contextlib.ExitStack() as stack:
        root = Path(tmp)
        if args.work == "eval":
            from workbench.testing.llm_server import ScriptedLLMServer

            server = stack.enter_context(ScriptedLLMServer(write_dataset(root, args.trials)))
            eval_environment(root, server.base_url)

        def one_round(pool: TrialPool, name: str, c: int) -> dict[str, Any]:
            tag = f"{name}-c{c}"
            base = tree_rss()
            began = time.monotonic()
            timed = TimedPool(pool)
            with MemoryPeak() as memory:
                if args.work == "eval":
                    eval_round(timed, tag, root)
                else:
                    stand_in_round(timed, args.trials, tag)
            result = summarize(timed.rows, time.monotonic() - began, memory.peak, base)
            log(f"  {tag}: {json.dumps(result)}")
            return result

        if "local" in pools:
            log("local pool")
            figures["local"] = {c: one_round(local_pool(c), "local", c) for c in levels}
        if "ray" in pools:
            from workbench.eval.ray_pool import RayPool

            log("Ray: head (no slots) + two workers")
            figures["ray_idle_mb"] = 0
            with ray_cluster(max(1, max(levels) // 2)) as address:
                figures["ray_idle_mb"] = round(tree_rss() / 2**20)
                pool = RayPool(address)
                pool.connect()
                figures["ray"] = {}
                for c in levels:
                    pool.max_in_flight = c
                    figures["ray"][c] = one_round(pool, "ray", c)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
