"""`LocalPool`: trials on this machine, at most N at once.

Threads, not processes: each trial already runs in a child process of its own
(`trial.py`), so a pool thread only starts it and waits, and N threads cost next to nothing.
Outcomes come back through a queue and `on_done` runs in the caller's thread (where the run's
files are written and its caps checked), never in a worker.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence

from workbench.eval.types import TrialJob, TrialOutcome


class LocalPool:
    """Runs `work(job)` in up to `concurrency` threads of this process."""

    def __init__(self, concurrency: int = 1) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        self.concurrency = concurrency

    def run(
        self,
        jobs: Sequence[TrialJob],
        work: Callable[[TrialJob], TrialOutcome],
        on_done: Callable[[TrialOutcome], None],
        should_start: Callable[[], bool],
        prepare: Callable[[TrialJob], TrialJob] | None = None,
    ) -> None:
        """Run work(job) for each job, at most N at once; on_done in the caller's thread as
        each ends; start no job once should_start() is False; return when all started jobs
        ended. `prepare` (optional) gives the job its final form just before it starts, in
        the caller's thread (the driver fills in the cost budget left at that moment)."""
        done: queue.Queue[TrialOutcome] = queue.Queue()
        pending = list(jobs)
        running = 0

        def worker(job: TrialJob) -> None:
            try:
                outcome = work(job)
            except BaseException as exc:  # a bug in `work`: still an outcome, never a hang
                outcome = TrialOutcome(job.trial_id, "error", None, error=f"{exc!r}")
            done.put(outcome)

        while True:
            while pending and running < self.concurrency and should_start():
                job = pending.pop(0)
                if prepare is not None:
                    job = prepare(job)
                threading.Thread(
                    target=worker, args=(job,), name=f"trial-{job.trial_id}", daemon=True
                ).start()
                running += 1
            if running == 0:
                return
            outcome = done.get()
            running -= 1
            on_done(outcome)

    def cancel_running(self) -> None:
        """Stop the running trials: SIGTERM to each trial's process (`trial.cancel_all`)."""
        from workbench.eval.trial import cancel_all

        cancel_all()
