"""The eval driver: expand a dataset into trials, skip those already finished in `--out`, run
the rest on a pool, write each trial's folder as it ends, stop at the caps.

Resume: a trial whose folder holds `trial.json` is finished and skipped (`--retry-errors`
runs those with status "error" again). A folder is written under a temporary name and renamed
into `OUT/trials/<trial_id>` once complete, `trial.json` last, so a crash, SIGKILL or Ctrl-C
at any moment leaves finished trials whole and no half-written one that looks finished.

Caps: `--max-cost` for the whole run (trials kept in `--out` count), `--max-task-cost` for
each task's trials together. Caps are checked as trials end; each trial's session budget is
the smaller remainder when it starts (a pool without `prepare`: when the round's jobs were
made), so one trial stops itself at it, and several running at once can pass the global cap
by at most their number times that remainder. At the cap the run starts no
new trial; `--on-cap stop` also stops the running ones (status "cancelled", not kept).
Attempts go in rounds (all tasks' attempt 1, then 2 ...) so a task's remainder is known
when its next attempt starts.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.eval import eval_exit
from workbench.eval.progress import Progress
from workbench.eval.tasks import TaskEntry, load_dataset
from workbench.eval.types import TrialJob, TrialOutcome, TrialPool


@dataclass
class RunOptions:
    """What `workbench eval` was asked to do."""

    dataset: str
    out: Path
    tasks: list[str] | None = None
    attempts: int = 1
    concurrency: int = 1
    retry_errors: bool = False
    agent_timeout_s: float | None = None
    verifier_timeout_s: float | None = None
    max_cost: float = 0.0
    max_task_cost: float = 0.0
    on_cap: str = "finish"
    max_steps: int | None = None
    json_mode: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    """Passed to every trial (config path, config overrides, runtime, on_confirm ...)."""


@dataclass
class _State:
    entries: dict[str, TaskEntry]
    costs: dict[str, float]
    total_cost: float = 0.0
    capped: str = ""
    errors: int = 0
    finished: dict[str, dict[str, Any]] = field(default_factory=dict)


def trial_id(task: str, attempt: int) -> str:
    """The trial's id and folder name."""
    return f"{task}__{attempt}"


def finished_trials(out: Path) -> dict[str, dict[str, Any]]:
    """trial id -> its trial.json, for every finished trial in `out`."""
    found: dict[str, dict[str, Any]] = {}
    for record in sorted((out / "trials").glob("*/trial.json")):
        if record.parent.name.startswith("."):
            continue  # a folder being written (or left by a crash mid-write)
        try:
            found[record.parent.name] = json.loads(record.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # unreadable: run it again
    return found


def write_trial(out: Path, outcome: TrialOutcome, task: TaskEntry, attempt: int) -> Path:
    """Write the trial's folder atomically (trial.json last, then one rename)."""
    trials = out / "trials"
    final = trials / outcome.trial_id
    partial = trials / f".{outcome.trial_id}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    files = dict(outcome.files)
    extra = json.loads(files.pop("extra.json", b"{}") or b"{}")
    for name, data in files.items():
        path = partial / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    note = _trajectory(partial)
    record = outcome.record() | {"task": task.name, "task_ref": task.ref, "attempt": attempt}
    record |= extra | ({"trajectory_note": note} if note else {})
    partial.mkdir(parents=True, exist_ok=True)
    (partial / "trial.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    _fsync_tree(partial)
    if final.exists():  # an errored trial run again: the new one replaces it
        old = trials / f".{outcome.trial_id}.old-{os.getpid()}"
        final.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    partial.rename(final)
    return final


def running_marker(out: Path, trial: str) -> Path:
    """The hidden file that says a trial is running (read by `results.scan` and the watch)."""
    return out / "trials" / f".{trial}.running"


def _trajectory(folder: Path) -> str | None:
    """Write trajectory.json (ATIF) from session.jsonl, if `workbench.eval.atif` is here."""
    log = folder / "session.jsonl"
    if not log.is_file():
        return None
    from workbench.eval.atif import write_trajectory

    try:
        write_trajectory(log, folder / "trajectory.json")
    except Exception as exc:  # the trial's result stands without it
        return f"trajectory.json could not be written: {exc}"
    return None


def _fsync_tree(folder: Path) -> None:
    for path in [*folder.rglob("*"), folder]:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def write_run_json(options: RunOptions, entries: list[TaskEntry]) -> None:
    """OUT/run.json: the settings of this run (each resumed run appends its start time)."""
    path = options.out / "run.json"
    previous: dict[str, Any] = {}
    if path.is_file():
        try:
            previous = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            previous = {}
    starts = [*previous.get("starts", []), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())]
    data = {
        "dataset": options.dataset,
        "tasks": [e.name for e in entries],
        "attempts": options.attempts,
        "concurrency": options.concurrency,
        "agent_timeout_s": options.agent_timeout_s,
        "verifier_timeout_s": options.verifier_timeout_s,
        "max_cost": options.max_cost,
        "max_task_cost": options.max_task_cost,
        "on_cap": options.on_cap,
        "max_steps": options.max_steps,
        "settings": {k: v for k, v in options.settings.items() if k != "overrides"},
        "starts": starts,
    }
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _job(options: RunOptions, entry: TaskEntry, attempt: int, state: _State) -> TrialJob:
    """The job for one attempt, with its cost budget (the smaller remainder of the caps)."""
    budgets = []
    if options.max_cost:
        budgets.append(options.max_cost - state.total_cost)
    if options.max_task_cost:
        budgets.append(options.max_task_cost - state.costs.get(entry.name, 0.0))
    settings = dict(options.settings)
    settings |= {
        "agent_timeout_s": options.agent_timeout_s,
        "verifier_timeout_s": options.verifier_timeout_s,
        "task_agent_s": entry.config.agent_timeout_s,
        "task_verifier_s": entry.config.verifier_timeout_s,
        "max_steps": options.max_steps,
        "max_cost_usd": max(min(budgets), 1e-9) if budgets else 0.0,
    }
    return TrialJob(trial_id(entry.name, attempt), entry.ref, attempt, settings)


def run_eval(
    options: RunOptions,
    pool: TrialPool | None = None,
    work: Callable[[TrialJob], TrialOutcome] | None = None,
) -> int:
    """Run the eval `options` describe; returns the exit code (`eval_exit.py`)."""
    from workbench.eval.pool import LocalPool
    from workbench.eval.trial import reset_cancel, run_trial, sweep_orphans

    entries = load_dataset(options.dataset, options.tasks)
    options.out.mkdir(parents=True, exist_ok=True)
    (options.out / "trials").mkdir(exist_ok=True)
    sweep_orphans()  # trial folders a killed driver left in the temp folder
    for stale in (options.out / "trials").glob(".*"):  # left by a run killed mid-write
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)
    write_run_json(options, entries)
    pool = pool or LocalPool(options.concurrency)
    work = work or run_trial
    reset_cancel()
    state = _State({e.name: e for e in entries}, {e.name: 0.0 for e in entries})
    done = finished_trials(options.out)
    for record in done.values():  # earlier runs' spending counts towards the caps
        cost = float(record.get("cost_usd") or 0.0)
        state.total_cost += cost
        task = str(record.get("task", ""))
        if task in state.costs:
            state.costs[task] += cost
    wanted = [(e, a) for a in range(1, options.attempts + 1) for e in entries]
    skip = {
        tid
        for tid, record in done.items()
        if not (options.retry_errors and record.get("status") == "error")
    }
    todo = [(e, a) for e, a in wanted if trial_id(e.name, a) not in skip]
    progress = Progress(len(todo), options.concurrency, options.json_mode)
    progress.begin(
        {"dataset": options.dataset, "out": str(options.out), "skipped": len(wanted) - len(todo)}
    )
    for warning in sorted({w for e in entries for w in e.config.warnings}):
        progress.notice(f"warning: {warning}")
    attempt_of = {trial_id(e.name, a): (e, a) for e, a in todo}

    def on_done(outcome: TrialOutcome) -> None:
        entry, attempt = attempt_of[outcome.trial_id]
        running = running_marker(options.out, outcome.trial_id)
        if outcome.status == "cancelled":
            running.unlink(missing_ok=True)
            progress.trial_done(outcome, entry.name)
            return  # not kept: it runs again next time
        write_trial(options.out, outcome, entry, attempt)
        running.unlink(missing_ok=True)
        state.total_cost += outcome.cost_usd
        state.costs[entry.name] += outcome.cost_usd
        state.errors += outcome.status == "error"
        progress.trial_done(outcome, entry.name)
        if options.max_cost and state.total_cost >= options.max_cost and not state.capped:
            state.capped = (
                f"the cost cap ${options.max_cost:g} was reached (${state.total_cost:.4f})"
            )
            progress.notice(
                f"{state.capped}: no new trials"
                + (", stopping the running ones" if options.on_cap == "stop" else "")
            )
            if options.on_cap == "stop":
                assert pool is not None
                pool.cancel_running()

    def rebudget(job: TrialJob) -> TrialJob:
        entry, attempt = attempt_of[job.trial_id]
        running_marker(options.out, job.trial_id).touch()  # for `workbench eval watch`
        return _job(options, entry, attempt, state)

    def should_start() -> bool:
        if state.capped:
            return False
        progress.trial_started()
        return True

    interrupted = False
    try:
        told: set[str] = set()
        for attempt in range(1, options.attempts + 1):
            jobs = []
            for e, a in todo:
                if a != attempt:
                    continue
                if options.max_task_cost and state.costs[e.name] >= options.max_task_cost:
                    if e.name not in told:
                        told.add(e.name)
                        progress.notice(
                            f"{e.name} reached its cost cap ${options.max_task_cost:g} "
                            f"(${state.costs[e.name]:.4f}): its other attempts are not run"
                        )
                    continue
                jobs.append(_job(options, e, a, state))
            if jobs and not state.capped:
                if "prepare" in inspect.signature(pool.run).parameters:
                    run_jobs: Any = pool.run
                    run_jobs(jobs, work, on_done, should_start, prepare=rebudget)
                else:
                    pool.run(jobs, work, on_done, should_start)
    except KeyboardInterrupt:
        interrupted = True
        pool.cancel_running()
        progress.notice(
            "interrupted: finished trials are kept; run again with the same --out to go on"
        )
    summary = _summary(options, wanted, state)
    progress.end(summary)
    if not options.json_mode:  # the results table, on standard output
        from workbench.eval.report import render_table
        from workbench.eval.results import summarize

        print(render_table(summarize(options.out)), flush=True)
    if interrupted:
        return eval_exit.INTERRUPTED
    if summary["unfinished"]:
        return eval_exit.CAPPED
    return eval_exit.TRIAL_ERRORS if summary["errors"] else eval_exit.DONE


def _summary(
    options: RunOptions, wanted: list[tuple[TaskEntry, int]], state: _State
) -> dict[str, Any]:
    """Totals over every finished trial in `--out`, and results.json if the module is here."""
    done = finished_trials(options.out)
    ids = [trial_id(e.name, a) for e, a in wanted]
    records = [done[i] for i in ids if i in done]
    scored = [r for r in records if r.get("status") == "done"]
    summary: dict[str, Any] = {
        "trials": len(ids),
        "finished": len(records),
        "unfinished": len(ids) - len(records),
        "errors": sum(r.get("status") == "error" for r in records),
        "mean_reward": round(sum(float(r.get("reward") or 0) for r in scored) / len(scored), 4)
        if scored
        else None,
        "cost_usd": round(sum(float(r.get("cost_usd") or 0) for r in records), 6),
        "capped": state.capped or None,
        "out": str(options.out),
    }
    from workbench.eval.results import write_results

    write_results(options.out)
    summary["results"] = str(options.out / "results.json")
    return summary
