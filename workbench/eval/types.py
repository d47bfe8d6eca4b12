"""The types shared by the evaluation's parts: jobs, outcomes, verifier results, protocols.

`TrialJob` goes to a pool's worker (a thread here, a Ray task elsewhere) and `TrialOutcome`
comes back, both picklable; the driver writes the outcome's `files` under
`OUT/trials/<trial_id>/`. `TrialPool` and `TaskKind` are what other pools and other kinds of
task (BrowserGym's, `browsergym_task.py`) implement.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sandbox.runtimes.base import Runtime

TrialStatus = str
""""done" (the verifier scored it), "error" (infrastructure: no score) or "cancelled"."""


@dataclass(frozen=True)
class TrialJob:
    """One trial to run: picklable, sent to a pool worker or a Ray task."""

    trial_id: str
    """"<task name>__<attempt>": also the folder name under OUT/trials/."""
    task_ref: str
    """A task folder path, or a BrowserGym id such as "browsergym/miniwob.click-test"."""
    attempt: int
    settings: dict[str, Any]
    """Model, timeouts, caps, runtime ... (JSON-able; see `trial_proc.py`)."""


@dataclass
class TrialOutcome:
    """How one trial ended: picklable, comes back to the driver."""

    trial_id: str
    status: TrialStatus
    reward: float | None
    """None when status is not "done"."""
    rewards: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    """Infrastructure error text (sandbox failed, image build failed)."""
    timed_out: dict[str, bool] = field(default_factory=lambda: {"agent": False, "verifier": False})
    tokens: dict[str, int] = field(default_factory=lambda: {"prompt": 0, "completion": 0})
    cost_usd: float = 0.0
    seconds: dict[str, float] = field(default_factory=dict)
    """{"setup": .., "agent": .., "verifier": .., "total": ..}"""
    files: dict[str, bytes] = field(default_factory=dict)
    """The trial folder's files, relative path -> bytes."""

    def record(self) -> dict[str, Any]:
        """The outcome as JSON-able data, without `files` (what trial.json holds)."""
        data = asdict(self)
        del data["files"]
        return data


@dataclass(frozen=True)
class VerifierResult:
    """What a task's verifier said."""

    reward: float | None
    """The score (None: the verifier wrote none, which counts as 0 with `error` said)."""
    rewards: dict[str, float] = field(default_factory=dict)
    timed_out: bool = False
    output: str = ""
    """What the verifier printed."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Files for the trial folder (relative path -> bytes): its stdout, its reward file."""
    error: str | None = None
    """Why there is no reward, for the person."""


class TrialPool(Protocol):
    """Runs trials, at most N at once."""

    def run(
        self,
        jobs: Sequence[TrialJob],
        work: Callable[[TrialJob], TrialOutcome],
        on_done: Callable[[TrialOutcome], None],
        should_start: Callable[[], bool],
    ) -> None:
        """Run work(job) for each job, at most N at once; on_done in the caller's thread as each
        ends; start no job once should_start() is False; return when all started jobs ended.

        A pool may also take `prepare: Callable[[TrialJob], TrialJob] | None = None` (LocalPool
        does): called in the caller's thread just before a job starts, it gives the job the
        cost budget left at that moment; `run.py` passes it when the pool's `run` accepts it."""
        ...

    def cancel_running(self) -> None:
        """Stop running trials (cost cap with --on-cap stop)."""
        ...


class TaskKind(Protocol):
    """A kind of task: sets itself up in a started sandbox, then scores what the agent did."""

    name: str

    def instruction(self, runtime: Runtime) -> str:
        """Set up in the sandbox, return the task text."""
        ...

    def verify(self, runtime: Runtime, timeout_s: float) -> VerifierResult:
        """Score it."""
        ...


_trial_loop: Any = None


def set_trial_loop(loop: Any) -> None:
    """Name the event loop that owns the trial's runtime (`trial_proc.py` does, at start)."""
    global _trial_loop
    _trial_loop = loop


def sandbox_call(awaitable: Any, timeout_s: float | None = None) -> Any:
    """Run a runtime coroutine (`runtime.execute(...)`) from a `TaskKind` method: those are
    called in a worker thread, while the runtime lives on the trial's event loop."""
    import asyncio

    if _trial_loop is None:
        raise RuntimeError("sandbox_call: no trial loop; only a trial process calls tasks")
    return asyncio.run_coroutine_threadsafe(awaitable, _trial_loop).result(timeout_s)
