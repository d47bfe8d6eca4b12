"""RayPool on a real three-node Ray cluster on this machine (issue 25, acceptance 3).

`ray.cluster_utils.Cluster` starts a real head (no sandbox slots: it only coordinates) and two
worker nodes with two `sandbox_slot`s each, every process on 127.0.0.1. Each trial is the
stand-in `shell_trial`: a fresh local sandbox whose real bash runs the trial's commands. The
first command appends the pid of the raylet that started it (RAY_RAYLET_PID, inherited by the
sandbox's shell) to a file of the trial, so the test sees where every attempt ran. The nodes
ignore SIGINT, as nodes started by a script in the background do: ray.cancel must stop trials
there too.
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray")  # scripts/test installs the ray extra: there this skip fails

from headless_harness import bash, cli_env, finish  # noqa: E402
from ray._private import ray_constants  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402
from waiting import wait_until  # noqa: E402

from workbench.eval.ray_pool import NODE_FILE, SLOT, RayPool  # noqa: E402
from workbench.eval.types import TrialJob, TrialOutcome  # noqa: E402
from workbench.testing.llm_server import ScriptedLLMServer  # noqa: E402
from workbench.testing.shell_trial import shell_trial  # noqa: E402

SLOTS_PER_WORKER = 2
NODE: dict[str, Any] = {
    "num_cpus": 0,  # no prestarted idle workers: trials ask for a slot, not a CPU
    "node_ip_address": "127.0.0.1",
    "object_store_memory": 80 * 1024 * 1024,
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head with no slots and two workers with two each, all on loopback; for the module
    (the test that removes a worker comes last)."""
    with pytest.MonkeyPatch.context() as patch:
        # Ray turns 127.0.0.1 into this machine's outside address unless told it is not a
        # cluster machine; the nodes read the variable, the driver its constant (read at import).
        patch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        patch.setattr(ray_constants, "ENABLE_RAY_CLUSTER", False)
        system = {"health_check_period_ms": 1000, "health_check_failure_threshold": 3}
        head = {**NODE, "resources": {SLOT: 0}, "_system_config": system}
        with sigint_ignored():
            cluster = Cluster(initialize_head=True, head_node_args=head)
        try:
            with sigint_ignored():
                for _ in range(2):
                    cluster.add_node(**NODE, resources={SLOT: SLOTS_PER_WORKER})
            cluster.wait_for_nodes()
            yield cluster
        finally:
            ray.shutdown()
            cluster.shutdown()


@contextlib.contextmanager
def sigint_ignored() -> Iterator[None]:
    """Processes started inside ignore SIGINT, as those of a script run in the background do
    (`nohup ray start ... &`): Ray workers inherit it, and ray.cancel is a SIGINT in them."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def raylet_pid(node: Any) -> int:
    """The pid of a cluster node's raylet (every worker process of the node is its child)."""
    return int(node.all_processes[ray_constants.PROCESS_TYPE_RAYLET][0].process.pid)


def job(trial_id: str, starts: Path, seconds: float, task: Path) -> TrialJob:
    """A stand-in trial that notes which node started it, works `seconds`, then shows where
    it found its task folder and its config, and what they hold. On a node whose raylet pid
    names a file `hold.<pid>` in `starts`, it stays after its work until that node is gone."""
    commands = [
        f'echo "$RAY_RAYLET_PID" >> {starts / trial_id}',
        f"sleep {seconds}",
        f'while [ -e {starts}/hold."$RAY_RAYLET_PID" ]; do sleep 0.1; done',
        "echo task at {task}; cat {task}/instruction.md",
        "echo config at {config_path}; cat {config_path}",
        f"echo finished {trial_id}",
    ]
    settings = {
        "commands": commands,
        "check": f"test -s {starts / trial_id}",
        "isolation": "none",
        "config_path": str(task.parent / "config.toml"),
    }
    return TrialJob(trial_id, str(task), 1, settings)


def started_on(starts: Path, trial_id: str) -> list[int]:
    """The raylet pids of the nodes that started each attempt of a trial, in order."""
    path = starts / trial_id
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_an_eval_runs_its_trials_on_both_workers(
    cluster: Cluster, tmp_path: Path, llm_server: Callable[..., ScriptedLLMServer]
) -> None:
    """`run_eval` (the driver of `workbench eval`) on RayPool: twelve Harbor tasks, the
    scripted agent solving them; every trial's folder is written on this machine once, scored
    1.0, and both workers ran some. The model's settings reach the trials through the pool's
    runtime_env."""
    from workbench.eval import run

    routes = []
    reward = "/logs/verifier/reward.txt"
    for i in range(12):
        name = f"sum-{i:02}"
        folder = tmp_path / "dataset" / name
        (folder / "tests").mkdir(parents=True)
        (folder / "instruction.md").write_text(f"Write 2 + {i} to sum.txt. (TASK {name})\n")
        (folder / "task.toml").write_text("[agent]\ntimeout_sec = 120\n")
        test = f'[ "$(cat sum.txt)" = {2 + i} ] && echo 1 > {reward} || echo 0 > {reward}'
        (folder / "tests" / "test.sh").write_text(f"#!/bin/bash\n{test}\n")
        steps = [bash(f"echo $((2 + {i})) > sum.txt"), finish()]
        routes.append({"match": f"(TASK {name})", "steps": steps})
    server = llm_server({"routes": routes})
    env = cli_env(tmp_path, server.base_url)
    out = tmp_path / "out"
    options = run.RunOptions(dataset=str(tmp_path / "dataset"), out=out, json_mode=True)
    pool = RayPool(cluster.address, runtime_env={"env_vars": env})
    assert run.run_eval(options, pool=pool) == 0
    folders = sorted((out / "trials").iterdir())
    assert [f.name for f in folders] == [f"sum-{i:02}__1" for i in range(12)]
    nodes = set()
    for folder in folders:
        record = json.loads((folder / "trial.json").read_text())
        assert (record["status"], record["reward"]) == ("done", 1.0), record
        nodes.add(json.loads((folder / NODE_FILE).read_text())["node_id"])
    assert nodes == {node.node_id for node in cluster.worker_nodes}


def test_twelve_trials_survive_a_lost_node_and_cancel_stops_trials(
    cluster: Cluster, tmp_path: Path
) -> None:
    """Both workers run trials; a worker killed midway loses none (its running trials are run
    again on the other, and each trial is reported exactly once, done); then cancel_running
    stops the trials in flight and they come back cancelled, with their files."""
    began = time.monotonic()
    victim, survivor = cluster.worker_nodes
    victim_pid = raylet_pid(victim)
    pids = {victim_pid: victim.node_id, raylet_pid(survivor): survivor.node_id}
    starts = tmp_path / "starts"
    starts.mkdir()
    # The victim's trials stay until it is killed: under load a 2 s trial picked as running
    # could end before the kill, and then none would be lost.
    (starts / f"hold.{victim_pid}").touch()
    task = tmp_path / "dataset" / "hello"  # shipped to the nodes: they read their own copy
    (task / "tests").mkdir(parents=True)
    (task / "instruction.md").write_text("Say hello. (TASK hello)\n")
    (task.parent / "config.toml").write_text('[llm]\nmodel = "openai/shipped"\n')
    jobs = [job(f"task-{i:02}__1", starts, 2.0, task) for i in range(12)]
    outcomes: list[TrialOutcome] = []
    lost_midway: list[str] = []

    def running_on_victim() -> list[str]:
        done = {o.trial_id for o in outcomes}
        return [
            j.trial_id
            for j in jobs
            if j.trial_id not in done and started_on(starts, j.trial_id)[-1:] == [victim_pid]
        ]

    def on_done(outcome: TrialOutcome) -> None:
        outcomes.append(outcome)
        folder = tmp_path / "out" / "trials" / outcome.trial_id  # as the driver writes them
        for name, data in outcome.files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(data)
        if len(outcomes) == 3 and not lost_midway:
            lost_midway.extend(wait_until(running_on_victim, 30, "a trial on the victim node"))
            cluster.remove_node(victim, allow_graceful=False)

    def prepare(job: TrialJob) -> TrialJob:  # the driver's last word before a start
        commands = [*job.settings["commands"], f"echo prepared {job.trial_id}"]
        return replace(job, settings={**job.settings, "commands": commands})

    pool = RayPool(cluster.address)
    pool.run(jobs, shell_trial, on_done, lambda: True, prepare=prepare)
    ran_s = time.monotonic() - began

    ids = [o.trial_id for o in outcomes]
    assert sorted(ids) == sorted(j.trial_id for j in jobs), "each trial reported exactly once"
    assert [o.status for o in outcomes] == ["done"] * 12, [o.error for o in outcomes]
    assert all(o.reward == 1.0 for o in outcomes)
    # Both workers ran trials (the start records say so); the victim finished none, its trials
    # held until it was killed.
    started = {pids[p] for j in jobs for p in started_on(starts, j.trial_id)}
    assert started == {victim.node_id, survivor.node_id}, "both workers ran trials"
    finished_on = {json.loads(o.files[NODE_FILE])["node_id"] for o in outcomes}
    assert finished_on == {survivor.node_id}
    # Those running on the worker when it was killed: each run again on the other one.
    tries = {t: [pids[p] for p in started_on(starts, t)] for t in lost_midway}
    lost = [t for t in lost_midway if tries[t] == [victim.node_id, survivor.node_id]]
    assert lost and lost == lost_midway, f"trials lost with the worker not run again: {tries}"
    for trial_id in lost:
        record = json.loads((tmp_path / "out/trials" / trial_id / NODE_FILE).read_text())
        assert record["node_id"] == survivor.node_id
        agent = (tmp_path / "out/trials" / trial_id / "agent.txt").read_text()
        assert f"finished {trial_id}" in agent
    for outcome in outcomes:
        agent = outcome.files["agent.txt"].decode()
        assert "Say hello. (TASK hello)" in agent and f"prepared {outcome.trial_id}" in agent
        shipped = re.findall(r"^task at (\S+)$", agent, re.MULTILINE)
        assert len(shipped) == 1 and shipped[0] != str(task), "a copy, not the driver's folder"
        assert shipped[0].endswith("/hello")
        config = re.findall(r"^config at (\S+)$", agent, re.MULTILINE)
        assert len(config) == 1 and config[0] != str(task.parent / "config.toml")
        assert 'model = "openai/shipped"' in agent
    assert json.loads((tmp_path / "out/trials/task-00__1/trial.json").read_text())["status"] == (
        "done"
    )

    # cancel_running: two long trials fill the surviving worker's slots, a third waits.
    long_jobs = [job(f"long-{i}__1", starts, 60.0, task) for i in range(3)]
    ended: list[TrialOutcome] = []

    cancelled_at: list[float] = []

    def cancel_once_both_run() -> None:
        both = long_jobs[:2]
        wait_until(lambda: all(started_on(starts, j.trial_id) for j in both), 60, "both to start")
        pool.cancel_running()
        cancelled_at.append(time.monotonic())

    pool = RayPool(cluster.address, max_in_flight=2)  # the dead node's slots may still count
    canceller = threading.Thread(target=cancel_once_both_run)
    canceller.start()
    pool.run(long_jobs, shell_trial, ended.append, lambda: True)
    canceller.join()
    assert cancelled_at, "the canceller gave up waiting for both trials to start"
    stopped_s = time.monotonic() - cancelled_at[0]
    assert sorted(o.trial_id for o in ended) == ["long-0__1", "long-1__1"], "the third never ran"
    assert [o.status for o in ended] == ["cancelled"] * 2, ([o.error for o in ended], stopped_s)
    assert stopped_s < 40, f"stopped {stopped_s:.0f} s after the cancel: their 60 s were waited for"
    for outcome in ended:  # stopped inside the trial, which reports its own files
        assert "trial.json" in outcome.files, (outcome.error, list(outcome.files))
        assert json.loads(outcome.files["trial.json"])["status"] == "cancelled"
    assert not started_on(starts, "long-2__1")
    print(f"12 trials with a lost node: {ran_s:.1f} s (after the cluster started)")
