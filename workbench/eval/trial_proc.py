"""One trial, in a process of its own: `python -m workbench.eval.trial_proc JOB.json FOLDER`.

Setup (the task's image if it has a Dockerfile, a fresh sandbox on `FOLDER/workspace`, the
task's instruction), then the agent headless through `headless.run_session` on that sandbox
(the real controller and LLM client, so a 429 is retried with backoff there and recorded as
`llm_retry` events), then the verifier in the same sandbox, then the sandbox closed. It writes
`FOLDER/outcome.json` (a `TrialOutcome` record plus `session_id`) and the trial folder's files
under `FOLDER/files/`; `trial.py` reads them back.

Standard input is a lifeline: when it closes (the eval driver died, even by SIGKILL) this
process stops the way SIGTERM stops a headless run, closing its sandbox. A run that ended for
an infrastructure reason (no sandbox, no image, the model unusable after its retries, a bug)
is status "error", never a score; stopped by a signal it is "cancelled"; otherwise the
verifier scores it, whatever the agent claimed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from workbench.eval.types import TrialJob, TrialOutcome, VerifierResult, set_trial_loop

ERROR_STATUSES = {
    "sandbox_error", "llm_error", "internal_error", "log_error", "config_error",
    "workspace_refused",
}  # fmt: skip
"""Headless statuses that are the harness's or the provider's failure, not the agent's."""


def trial_config(job: TrialJob, folder: Path, task: Any) -> Any:
    """The session's config: the person's, with the trial's workspace, limits and image."""
    from workbench.config.load import load_config

    settings = job.settings
    cfg = getattr(task, "config", None)
    overrides: dict[str, Any] = dict(settings.get("overrides") or {})
    overrides |= {
        "sandbox.workspace": str(folder / "workspace"),
        "session.dir": str(folder / "sessions"),
        "checkpoints.enabled": False,  # a throwaway workspace: nothing to rewind
        "security.headless_on_confirm": settings.get("on_confirm", "approve"),
        "budget.max_wall_s": agent_timeout(job, task),
    }
    if settings.get("max_steps"):
        overrides["agent.max_iterations"] = int(settings["max_steps"])
    if settings.get("max_cost_usd"):
        overrides["budget.max_cost_usd"] = float(settings["max_cost_usd"])
    if settings.get("runtime"):
        overrides["sandbox.runtime"] = settings["runtime"]
    if cfg is not None:
        if not cfg.allow_internet:
            overrides["sandbox.network"] = "off"
        if cfg.memory_bytes:
            overrides["sandbox.limits.memory"] = f"{cfg.memory_bytes // 2**20}m"
        if cfg.uses_docker:
            overrides["sandbox.runtime"] = "docker"
            if cfg.memory_bytes:
                overrides["sandbox.docker.memory"] = f"{cfg.memory_bytes // 2**20}m"
    overrides |= dict(getattr(task, "config_overrides", None) or {})  # what the task needs
    path = settings.get("config_path")
    return load_config(Path(path) if path else None, overrides=overrides)


def agent_timeout(job: TrialJob, task: Any) -> float:
    """The agent's time limit: the flag's, else task.toml's (BrowserGym tasks: their own)."""
    given = job.settings.get("agent_timeout_s")
    cfg = getattr(task, "config", None)
    return float(given or (cfg.agent_timeout_s if cfg is not None else 600.0))


def verifier_timeout(job: TrialJob, task: Any) -> float:
    """The verifier's time limit: the flag's, else task.toml's."""
    given = job.settings.get("verifier_timeout_s")
    cfg = getattr(task, "config", None)
    return float(given or (cfg.verifier_timeout_s if cfg is not None else 120.0))


async def run_job(job: TrialJob, folder: Path) -> tuple[TrialOutcome, dict[str, Any]]:
    """Run the trial; returns its outcome (files written under `folder/files`) and extras."""
    from workbench.eval.tasks import load_task
    from workbench.headless.output import HumanPrinter
    from workbench.headless.runner import run_session
    from workbench.session.opening import make_runtime, scrubber_of, start_runtime

    set_trial_loop(asyncio.get_running_loop())
    _cancel_on_signals()
    started = time.monotonic()
    seconds: dict[str, float] = {"setup": 0.0, "agent": 0.0, "verifier": 0.0}
    outcome = TrialOutcome(job.trial_id, "error", None, seconds=seconds)
    extra: dict[str, Any] = {"session_id": None}
    files = folder / "files"
    (folder / "workspace").mkdir(parents=True, exist_ok=True)
    runtime = None
    try:
        task = await asyncio.to_thread(load_task, job.task_ref)
        config = trial_config(job, folder, task)
        cfg = getattr(task, "config", None)
        if cfg is not None and cfg.dockerfile is not None:
            from workbench.eval.task_image import ensure_task_image

            image = await asyncio.to_thread(ensure_task_image, task.name, cfg.dockerfile)
            config.sandbox.docker.base_image = image
        elif cfg is not None and cfg.docker_image:
            config.sandbox.docker.base_image = cfg.docker_image
        runtime = await start_runtime(make_runtime(config))
        instruction = await asyncio.to_thread(task.instruction, runtime)
        seconds["setup"] = time.monotonic() - started
        with (files / "agent.txt").open("w", encoding="utf-8") as out:
            printer = HumanPrinter(out, out, scrub=scrubber_of(config))
            summary = await run_session(config, instruction, printer, runtime=runtime)
        _cancel_on_signals()  # run_session had its own handlers, and removed them
        seconds["agent"] = time.monotonic() - started - seconds["setup"]
        extra["session_id"] = summary.get("session_id")
        extra["agent_status"] = summary["status"]
        outcome.tokens = {
            "prompt": int(summary["prompt_tokens"]),
            "completion": int(summary["completion_tokens"]),
        }
        outcome.cost_usd = float(summary["cost"])
        if summary.get("log"):
            _copy_session(Path(summary["log"]), files)
        reason = str(summary.get("reason") or "")
        outcome.timed_out["agent"] = summary["status"] == "budget" and "wall-time" in reason
        if summary["status"] == "interrupted":
            outcome.status, outcome.error = "cancelled", reason or "stopped"
        elif summary["status"] in ERROR_STATUSES:
            outcome.error = f"{summary['status']}: {reason}"
        else:
            verified_at = time.monotonic()
            result: VerifierResult = await asyncio.to_thread(
                task.verify, runtime, verifier_timeout(job, task)
            )
            seconds["verifier"] = time.monotonic() - verified_at
            for name, data in result.files.items():
                _write(files / name, data)
            if result.error and "verifier/stdout.txt" not in result.files:
                _write(files / "verifier" / "stdout.txt", result.error.encode())
            outcome.status = "done"
            outcome.reward = result.reward if result.reward is not None else 0.0
            outcome.rewards = result.rewards
            outcome.timed_out["verifier"] = result.timed_out
            extra["verifier_note"] = result.error
    except asyncio.CancelledError:
        outcome.status, outcome.error = "cancelled", "stopped before the agent ran"
    except Exception as exc:  # no sandbox, no image, a task that cannot load: infrastructure
        outcome.status, outcome.error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        if runtime is not None:
            try:
                await asyncio.shield(runtime.close())
            except Exception as exc:
                extra["close_error"] = str(exc)
    seconds["total"] = time.monotonic() - started
    return outcome, extra


def _cancel_on_signals() -> None:
    """Outside the agent's run, SIGTERM or SIGINT cancels the trial (the sandbox is closed)."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    if task is not None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)


def _copy_session(log: Path, files: Path) -> None:
    """The session log as session.jsonl, its kept images under session.files/."""
    if log.is_file():
        _write(files / "session.jsonl", log.read_bytes())
    payloads = log.with_suffix(".files")
    if payloads.is_dir():
        for path in payloads.rglob("*"):
            if path.is_file():
                _write(files / "session.files" / path.relative_to(payloads), path.read_bytes())


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _import_litellm() -> None:
    from workbench.llm import load_litellm

    with contextlib.suppress(Exception):  # run_session imports it again and reports failures
        load_litellm()


_orphaned = threading.Event()


def _lifeline() -> None:
    """SIGTERM ourselves when standard input closes (the driver is gone)."""
    try:  # the raw fd: a buffered reader's lock would stall the interpreter's shutdown
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    _orphaned.set()
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> int:
    """Run the job in `argv[0]` in folder `argv[1]`; the outcome goes to outcome.json."""
    job_file, folder = Path(argv[0]), Path(argv[1])
    job = TrialJob(**json.loads(job_file.read_text(encoding="utf-8")))
    (folder / "files").mkdir(parents=True, exist_ok=True)
    threading.Thread(target=_lifeline, name="lifeline", daemon=True).start()
    # litellm's import (seconds of CPU) beside the image build and the sandbox's start, which
    # here come before `run_session` (it would overlap only the sandbox it starts itself).
    threading.Thread(target=_import_litellm, name="import-litellm", daemon=True).start()
    outcome, extra = asyncio.run(run_job(job, folder))
    record = outcome.record() | extra
    tmp = folder / "outcome.json.tmp"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    tmp.replace(folder / "outcome.json")
    shutil.rmtree(folder / "workspace", ignore_errors=True)
    if _orphaned.is_set():  # nobody will collect the outcome: leave nothing behind
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
