"""`run_trial(job)`: one trial in a child process, its outcome and files brought back.

The child (`trial_proc.py`) does the work: a fresh sandbox, the agent headless, the verifier in
the same sandbox. A process per trial keeps trials apart (litellm's and the tool registry's
module state, signal handlers, a crash) and lets a trial be stopped as a whole: `cancel_all()`
sends SIGTERM, which ends the agent's run the way Ctrl-C ends a headless run (final state
logged, sandbox closed), then SIGKILL after a grace period. A hard deadline (the agent's and
the verifier's limits plus set-up slack) kills a child that hangs. The child's standard input
is a pipe this process holds: if this process dies, the child sees EOF and stops itself.

Module-level and picklable by reference, so a pool (threads here, Ray tasks elsewhere) can
call it; it only needs the job.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

from workbench.eval.types import TrialJob, TrialOutcome

SETUP_SLACK_S = 300.0
"""Beyond the agent's and verifier's limits: image builds, sandbox start and close."""
GRACE_S = 20.0
"""After SIGTERM, how long a child may take to close its sandbox before SIGKILL."""

_children: dict[int, subprocess.Popen[bytes]] = {}
_lock = threading.Lock()
_cancelled = threading.Event()


def cancel_all() -> None:
    """Stop every running trial of this process (SIGTERM now, SIGKILL after the grace)."""
    _cancelled.set()
    with _lock:
        children = list(_children.values())
    for child in children:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)


def reset_cancel() -> None:
    """Let new trials start again after `cancel_all` (a new run in the same process)."""
    _cancelled.clear()


def deadline_s(job: TrialJob) -> float:
    """The longest a trial's child may live."""
    agent = float(job.settings.get("agent_timeout_s") or job.settings.get("task_agent_s") or 600)
    verifier = float(
        job.settings.get("verifier_timeout_s") or job.settings.get("task_verifier_s") or 120
    )
    return agent + verifier + SETUP_SLACK_S


DRIVER_FILE = "driver"
"""In a trial's temporary folder: the process that made it (pid and start time), so that a
later run can tell a folder whose driver was killed from one a live driver still uses."""
ORPHAN_GRACE_S = 60.0


def run_trial(job: TrialJob) -> TrialOutcome:
    """Run one trial in a child process and return its outcome, files included."""
    started = time.monotonic()
    root = job.settings.get("work_root") or None
    folder = Path(tempfile.mkdtemp(prefix=f"wb-trial-{job.trial_id[:40]}-", dir=root))
    (folder / DRIVER_FILE).write_text(_process_key(os.getpid()) or "", encoding="utf-8")
    try:
        return _run_in(job, folder, started)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def sweep_orphans(root: Path | None = None) -> list[Path]:
    """Remove the trial folders in `root` (the temp folder) whose driver is gone: a driver
    killed with SIGKILL between a trial's end and its cleanup leaves one. Returns them."""
    removed = []
    for folder in Path(root or tempfile.gettempdir()).glob("wb-trial-*"):
        if folder.is_symlink() or not folder.is_dir():
            continue  # not a folder run_trial made: nothing of ours to remove through it
        try:
            key = (folder / DRIVER_FILE).read_text(encoding="utf-8").strip()
        except OSError:  # not yet written by a live driver, or no trial folder of ours
            key = ""
        with contextlib.suppress(OSError):
            if not key and time.time() - folder.stat().st_mtime < ORPHAN_GRACE_S:
                continue
            if key and _process_key(_pid_in(key)) == key:
                continue  # its driver still runs
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _pid_in(key: str) -> int:
    """The pid a driver file names; 0 (no process) for text that names none."""
    first = key.split()[0]
    return int(first) if first.isdecimal() else 0  # isdigit() takes "²", which int() refuses


def _process_key(pid: int) -> str | None:
    """`pid` and its start time (from /proc): the same key only for the same process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return None
    return f"{pid} {stat.rpartition(')')[2].split()[19]}"


def _run_in(job: TrialJob, folder: Path, started: float) -> TrialOutcome:
    if _cancelled.is_set():
        return TrialOutcome(job.trial_id, "cancelled", None, error="the run was stopped")
    job_file = folder / "job.json"
    job_file.write_text(json.dumps(asdict(job)), encoding="utf-8")
    log = (folder / "trial.log").open("wb")
    command = [sys.executable, "-m", "workbench.eval.trial_proc", str(job_file), str(folder)]
    try:
        child = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=log, stderr=log, start_new_session=True
        )
    except OSError as exc:
        log.close()
        return _error(job, f"cannot start the trial process: {exc}", started)
    with _lock:
        _children[child.pid] = child
    try:
        killed = _wait(child, deadline_s(job))
    finally:
        with _lock:
            _children.pop(child.pid, None)
        with contextlib.suppress(OSError):
            if child.stdin is not None:
                child.stdin.close()
        log.close()
    return _collect(job, folder, started, killed)


def _wait(child: subprocess.Popen[bytes], limit_s: float) -> str | None:
    """Wait for `child`; kill it after `limit_s` (or the grace after a cancel). Returns why
    it was killed, or None."""
    end = time.monotonic() + limit_s
    term_sent: float | None = None
    while True:
        try:
            child.wait(timeout=0.2)
            return None
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if _cancelled.is_set() and term_sent is None:
            term_sent = now  # cancel_all sent SIGTERM (or will): give it the grace
        if now >= end and term_sent is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)
            term_sent = now
        if term_sent is not None and now - term_sent > GRACE_S:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return "cancelled" if _cancelled.is_set() else f"no end within {limit_s:.0f} s"


def _collect(job: TrialJob, folder: Path, started: float, killed: str | None) -> TrialOutcome:
    """The outcome the child wrote, with its files; an error outcome when it wrote none."""
    record_file = folder / "outcome.json"
    if not record_file.is_file():
        tail = _tail(folder / "trial.log")
        if killed == "cancelled" or _cancelled.is_set():
            outcome = TrialOutcome(job.trial_id, "cancelled", None, error="the run was stopped")
        else:
            why = killed or "the trial process ended without an outcome"
            outcome = _error(job, f"{why}; its log ends with:\n{tail}", started)
    else:
        record = json.loads(record_file.read_text(encoding="utf-8"))
        session_id = record.pop("session_id", None)
        extra = {k: record.pop(k) for k in list(record) if k not in _FIELDS}
        outcome = TrialOutcome(**record)
        extra["session_id"] = session_id
        outcome.files["extra.json"] = json.dumps(extra).encode()
    files = folder / "files"
    if files.is_dir():
        for path in sorted(files.rglob("*")):
            if path.is_file():
                outcome.files[str(path.relative_to(files))] = path.read_bytes()
    if (folder / "trial.log").is_file() and (folder / "trial.log").stat().st_size:
        outcome.files["trial.log"] = (folder / "trial.log").read_bytes()
    outcome.seconds["total"] = time.monotonic() - started
    return outcome


_FIELDS = set(TrialOutcome.__dataclass_fields__) - {"files"}


def _error(job: TrialJob, message: str, started: float) -> TrialOutcome:
    return TrialOutcome(
        job.trial_id, "error", None, error=message, seconds={"total": time.monotonic() - started}
    )


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty)"
