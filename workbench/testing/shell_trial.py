"""`shell_trial(job)`: a stand-in trial with real work, for the trial pools' tests and benchmarks.

It does what `workbench.eval.trial.run_trial` does minus the LLM: a fresh local sandbox
(`LocalRuntime` in a temporary workspace, bubblewrap where it works) runs the shell commands
`job.settings["commands"]` one after another (the "agent" phase: a scripted agent), then
`job.settings["check"]` (the "verifier": reward 1.0 when it exits 0, else 0.0), and closes the
sandbox. The outcome carries the trial folder's files like `run_trial`'s: `trial.json` and
`agent.txt` (what each command printed). Module-level, so a pool pickles it by reference, and with
`cancel_all()` / `reset_cancel()` beside it as `run_trial`'s module has them.

Settings: `commands` (list of str), `check` (str, optional), `isolation` ("auto", "none",
"bwrap"; default "auto"), `command_timeout_s` (default 60). `{task}` in a command or the check
is replaced by `job.task_ref`, `{config_path}` by `settings["config_path"]` (a pool may point
them at its own copies).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Literal, cast

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from sandbox.runtimes.local import LocalRuntime
from workbench.eval.types import TrialJob, TrialOutcome

_running: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Task[TrialOutcome]]] = {}
_lock = threading.Lock()
_cancelled = threading.Event()


def cancel_all() -> None:
    """Stop every running stand-in trial of this process; refuse new ones until `reset_cancel`."""
    _cancelled.set()
    with _lock:
        running = list(_running.values())
    for loop, task in running:
        loop.call_soon_threadsafe(task.cancel)


def reset_cancel() -> None:
    """Let trials start again after `cancel_all`."""
    _cancelled.clear()


def shell_trial(job: TrialJob) -> TrialOutcome:
    """Run one stand-in trial in a fresh local sandbox and return its outcome and files."""
    if _cancelled.is_set():
        return TrialOutcome(job.trial_id, "cancelled", None, error="the run was cancelled")
    return asyncio.run(_registered(job))


async def _registered(job: TrialJob) -> TrialOutcome:
    task = asyncio.ensure_future(_trial(job))
    key = id(task)
    with _lock:
        _running[key] = (asyncio.get_running_loop(), task)
    try:
        return await task
    finally:
        with _lock:
            _running.pop(key, None)


async def _trial(job: TrialJob) -> TrialOutcome:
    settings = job.settings
    commands = [_fill(str(c), job) for c in settings.get("commands", [])]
    check = _fill(str(settings["check"]), job) if settings.get("check") else ""
    isolation = cast(Literal["auto", "none", "bwrap"], settings.get("isolation", "auto"))
    timeout = float(settings.get("command_timeout_s", 60))
    started = time.monotonic()
    seconds = {"setup": 0.0, "agent": 0.0, "verifier": 0.0, "total": 0.0}
    outcome = TrialOutcome(job.trial_id, "error", None)
    transcript: list[str] = []
    workspace = Path(tempfile.mkdtemp(prefix="shell-trial-"))
    runtime = LocalRuntime(workspace, isolation=isolation, disable=["browser", "jupyter"])
    try:
        await runtime.start()
        seconds["setup"] = time.monotonic() - started
        mark = time.monotonic()
        for command in commands:
            observation = await runtime.execute(CmdRunAction(command=command, timeout=timeout))
            transcript.append(f"$ {command}\n{_text(observation)}")
        seconds["agent"] = time.monotonic() - mark
        mark = time.monotonic()
        reward = 1.0
        if check:
            observation = await runtime.execute(CmdRunAction(command=check, timeout=timeout))
            passed = isinstance(observation, CmdOutputObservation) and observation.exit_code == 0
            reward = 1.0 if passed else 0.0
        seconds["verifier"] = time.monotonic() - mark
        outcome = TrialOutcome(job.trial_id, "done", reward, rewards={"reward": reward})
    except asyncio.CancelledError:
        outcome = TrialOutcome(job.trial_id, "cancelled", None, error="cancelled while running")
    except Exception as exc:  # an infrastructure error is an outcome, as run_trial's are
        outcome = TrialOutcome(job.trial_id, "error", None, error=f"{type(exc).__name__}: {exc}")
    finally:
        await runtime.close()
        shutil.rmtree(workspace, ignore_errors=True)
    seconds["total"] = time.monotonic() - started
    outcome.seconds = seconds
    record: dict[str, Any] = outcome.record() | {"task": job.task_ref, "attempt": job.attempt}
    outcome.files = {
        "trial.json": json.dumps(record, indent=2).encode(),
        "agent.txt": "\n".join(transcript).encode(),
    }
    return outcome


def _fill(command: str, job: TrialJob) -> str:
    config = str(job.settings.get("config_path") or "")
    return command.replace("{task}", job.task_ref).replace("{config_path}", config)


def _text(observation: object) -> str:
    if isinstance(observation, CmdOutputObservation):
        return f"{observation.content}\n[exit {observation.exit_code}]"
    return repr(observation)
