"""An eval run's results: every finished trial read back from `OUT/trials/*/trial.json`,
summed up per task and for the run, written to `OUT/results.json`.

A trial folder without `trial.json` is unfinished (running, or cut off by a crash), and so
is a trial the driver marks in flight (`.<id>.running`, `.<id>.partial-<pid>`); one whose
`trial.json` cannot be read is listed under `unreadable` with why, never silently dropped.
Rewards count only for trials that ran to a score (`status` "done"): an infrastructure error
is an error, not a zero. A trial succeeds when its reward reaches `SUCCESS_REWARD`; pass@k is
the unbiased estimator 1 - C(n-c, k) / C(n, k) over a task's n scored trials, c of them
successful, for k = 1..n.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESULTS_VERSION = 1
SUCCESS_REWARD = 1.0
"""A trial whose reward is at least this succeeded (full marks; rewards are usually 0..1)."""
PHASES = ("setup", "agent", "verifier", "total")
STATES = ("queued", "running", "done", "error", "cancelled")


@dataclass
class Trial:
    """One trial as its folder shows it (finished or not)."""

    trial_id: str
    task: str
    attempt: int
    state: str
    """queued | running | done | error | cancelled (see `STATES`)."""
    folder: Path
    reward: float | None = None
    error: str | None = None
    timed_out: dict[str, bool] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    session_id: str = ""

    @property
    def finished(self) -> bool:
        """It has a trial.json (done, error or cancelled)."""
        return self.state in ("done", "error", "cancelled")

    @property
    def session_log(self) -> Path | None:
        """The trial's session log, if its folder holds one yet."""
        path = self.folder / "session.jsonl"
        return path if path.is_file() else None


def atomic_write_text(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def split_trial_id(trial_id: str) -> tuple[str, int]:
    """`"<task>__<attempt>"` -> (task, attempt); attempt 0 when there is no number."""
    task, sep, attempt = trial_id.rpartition("__")
    if sep and attempt.isdigit():
        return task, int(attempt)
    return trial_id, 0


def _number(value: Any, default: float = 0.0) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return default


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def read_trial(folder: Path) -> Trial:
    """The trial in `folder`: from its trial.json, or "running" when there is none yet.

    Raises ValueError (with why) when trial.json exists but is not a readable outcome."""
    task, attempt = split_trial_id(folder.name)
    path = folder / "trial.json"
    if not path.exists():
        return Trial(folder.name, task, attempt, "running", folder)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    status = data.get("status")
    if status not in ("done", "error", "cancelled"):
        raise ValueError(f"{path}: status must be done, error or cancelled, got {status!r}")
    tokens, seconds, timed_out = (
        _mapping(data.get(key)) for key in ("tokens", "seconds", "timed_out")
    )
    reward = data.get("reward")
    return Trial(
        trial_id=str(data.get("trial_id") or folder.name),
        task=str(data.get("task") or task),
        attempt=int(_number(data.get("attempt"), attempt)),
        state=status,
        folder=folder,
        reward=_number(reward) if status == "done" and reward is not None else None,
        error=str(data["error"]) if data.get("error") else None,
        timed_out={str(k): bool(v) for k, v in timed_out.items()},
        prompt_tokens=int(_number(tokens.get("prompt"))),
        completion_tokens=int(_number(tokens.get("completion"))),
        cost_usd=_number(data.get("cost_usd")),
        seconds={str(k): _number(v) for k, v in seconds.items()},
        session_id=str(data.get("session_id") or ""),
    )


def planned_trials(out_dir: Path) -> list[str]:
    """The trial ids `OUT/run.json` says the run will make: its `"trials"` (ids, or objects
    with a `trial_id`), else each of its `"tasks"` times its `"attempts"`; [] when it says
    neither."""
    try:
        run = json.loads((out_dir / "run.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    if not isinstance(run, dict):
        return []
    listed, tasks, attempts = run.get("trials"), run.get("tasks"), run.get("attempts")
    ids = []
    if isinstance(listed, list):
        for item in listed:
            trial_id = item.get("trial_id") if isinstance(item, dict) else item
            if isinstance(trial_id, str) and trial_id:
                ids.append(trial_id)
    elif isinstance(tasks, list) and isinstance(attempts, int) and not isinstance(attempts, bool):
        names = [task for task in tasks if isinstance(task, str) and task]
        ids = [f"{task}__{attempt}" for task in names for attempt in range(1, attempts + 1)]
    return ids


def _in_flight(root: Path) -> set[str]:
    """Trials the driver is running or writing, from the hidden entries of `OUT/trials/`:
    `.<id>.running` (a trial started) and `.<id>.partial-<pid>` (its folder being written)."""
    names: set[str] = set()
    for entry in root.glob(".*") if root.is_dir() else []:
        name = entry.name[1:]
        if name.endswith(".running"):
            names.add(name.removesuffix(".running"))
        elif ".partial-" in name:
            names.add(name.rpartition(".partial-")[0])
    return names


TrialCache = dict[Path, tuple[tuple[int, int], Trial]]
"""Finished trials already read, by folder, with their trial.json's (mtime, size)."""


def _read_cached(folder: Path, cache: TrialCache | None) -> Trial:
    if cache is None:
        return read_trial(folder)
    try:
        info = (folder / "trial.json").stat()
    except OSError:
        return read_trial(folder)  # not finished (or gone): nothing to cache
    stamp = (info.st_mtime_ns, info.st_size)
    known = cache.get(folder)
    if known is not None and known[0] == stamp:
        return known[1]
    trial = read_trial(folder)
    cache[folder] = (stamp, trial)
    return trial


def scan(
    out_dir: Path, cache: TrialCache | None = None
) -> tuple[list[Trial], list[dict[str, str]]]:
    """Every trial of the run (planned ones without a folder yet as "queued"), sorted by task
    and attempt, and the trial.json files that could not be read. With a `cache` (kept by a
    caller that scans again and again), an unchanged trial.json is not read twice."""
    trials: dict[str, Trial] = {}
    unreadable: list[dict[str, str]] = []
    root = Path(out_dir) / "trials"
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for folder in folders:
        if folder.name.startswith("."):
            continue  # being written, or left by a run killed mid-write
        try:
            trial = _read_cached(folder, cache)
        except ValueError as exc:
            unreadable.append({"trial_id": folder.name, "why": str(exc)})
            continue
        trials[folder.name] = trial
    running = _in_flight(root)
    for trial_id in [*planned_trials(Path(out_dir)), *sorted(running)]:
        if trial_id in trials or any(u["trial_id"] == trial_id for u in unreadable):
            continue
        task, attempt = split_trial_id(trial_id)
        state = "running" if trial_id in running else "queued"
        trials[trial_id] = Trial(trial_id, task, attempt, state, root / trial_id)
    ordered = sorted(trials.values(), key=lambda t: (t.task, t.attempt, t.trial_id))
    return ordered, unreadable


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from n samples with c successes (Chen et al., 2021)."""
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}, got {k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _task_entry(trials: list[Trial]) -> dict[str, Any]:
    finished = [t for t in trials if t.finished]
    scored = [t for t in finished if t.state == "done" and t.reward is not None]
    rewards = [t.reward for t in scored if t.reward is not None]
    successes = sum(r >= SUCCESS_REWARD for r in rewards)
    n = len(scored)
    return {
        "reward": _mean(rewards),
        "attempts": len(finished),
        "scored": n,
        "successes": successes,
        "pass_at_k": {str(k): round(pass_at_k(n, successes, k), 6) for k in range(1, n + 1)},
        "errors": sum(t.state == "error" for t in finished),
        "error_messages": {t.trial_id: t.error for t in finished if t.error},
        "cancelled": sum(t.state == "cancelled" for t in finished),
        "timeouts": {
            phase: sum(bool(t.timed_out.get(phase)) for t in finished)
            for phase in ("agent", "verifier")
        },
        "unfinished": len(trials) - len(finished),
        "tokens": {
            "prompt": sum(t.prompt_tokens for t in finished),
            "completion": sum(t.completion_tokens for t in finished),
        },
        "cost_usd": round(sum(t.cost_usd for t in finished), 10),
        "seconds_mean": {
            phase: _mean([t.seconds[phase] for t in finished if phase in t.seconds])
            for phase in PHASES
        },
    }


def summarize(out_dir: Path) -> dict[str, Any]:
    """The results of the run in `out_dir` (what `write_results` writes), read fresh."""
    trials, unreadable = scan(Path(out_dir))
    by_task: dict[str, list[Trial]] = {}
    for trial in trials:
        by_task.setdefault(trial.task, []).append(trial)
    tasks = {name: _task_entry(group) for name, group in sorted(by_task.items())}
    finished = [t for t in trials if t.finished]
    scored = [t.reward for t in finished if t.state == "done" and t.reward is not None]
    task_rewards = [e["reward"] for e in tasks.values() if e["reward"] is not None]
    pass1 = [e["pass_at_k"]["1"] for e in tasks.values() if "1" in e["pass_at_k"]]
    totals = {
        "tasks": len(tasks),
        "trials": len(trials),
        "finished": len(finished),
        "unfinished": len(trials) - len(finished),
        "scored": len(scored),
        "successes": sum(r >= SUCCESS_REWARD for r in scored),
        "success_rate": _mean([float(r >= SUCCESS_REWARD) for r in scored]),
        "reward": _mean(task_rewards),
        "pass_at_1": _mean(pass1),
        "errors": sum(t.state == "error" for t in finished),
        "cancelled": sum(t.state == "cancelled" for t in finished),
        "timeouts": {
            phase: sum(e["timeouts"][phase] for e in tasks.values())
            for phase in ("agent", "verifier")
        },
        "tokens": {
            "prompt": sum(t.prompt_tokens for t in finished),
            "completion": sum(t.completion_tokens for t in finished),
        },
        "cost_usd": round(sum(t.cost_usd for t in finished), 10),
        "seconds": {
            phase: round(sum(t.seconds.get(phase, 0.0) for t in finished), 3) for phase in PHASES
        },
    }
    return {
        "version": RESULTS_VERSION,
        "success_reward": SUCCESS_REWARD,
        "tasks": tasks,
        "totals": totals,
        "unreadable": unreadable,
    }


def write_results(out_dir: Path) -> dict[str, Any]:
    """Read every trial of the run in `out_dir`, write `OUT/results.json` (atomically: a
    reader never sees half a file) and return what was written."""
    results = summarize(Path(out_dir))
    text = json.dumps(results, indent=1, ensure_ascii=False) + "\n"
    atomic_write_text(Path(out_dir) / "results.json", text)
    return results
