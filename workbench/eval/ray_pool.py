"""`RayPool`: trials as Ray tasks on a Ray cluster, one sandbox per trial on the node that runs it.

Each node says how many trials it can hold with the custom resource `sandbox_slot`
(`ray start ... --resources='{"sandbox_slot": 4}'`); a trial is a task asking for one slot and
no CPU, so Ray places trials where there is room. This process (the driver) keeps at most as
many tasks in flight as the cluster has slots (or `max_in_flight`), asking `should_start()`
before each start as `LocalPool` does, and waits on them with `ray.wait`: each outcome, its files
included, comes back as its trial ends and `on_done` runs here, in the caller's thread, where the
run writes `OUT/trials/<id>/`. Where a trial ran is added to its files as `ray_node.json`.

A node lost mid-trial: Ray runs the task again elsewhere (`node_retries`, for system failures
only; a trial that failed in its own code already is an outcome and is not retried here). Its
ObjectRef resolves once, so a retried trial is reported once; the lost attempt's files died with
its node, and so did its sandbox (a local sandbox server stops when its parent dies).

`cancel_running()`: `ray.cancel` on each task. On the node, the wrapper gets KeyboardInterrupt,
calls the work function's module's `cancel_all()` (`run_trial`'s stops its child the way Ctrl-C
stops a headless run) and returns the outcome the trial ends with, files too, within
`cancel_grace_s`. A task still queued is dropped and reported "cancelled". Ray's
KeyboardInterrupt is a simulated SIGINT, lost where SIGINT is ignored (a node started in the
background), so the wrapper lets SIGINT through while its trial runs. Ray's cancel is
best-effort (a cancel that meets the task at the wrong moment is lost), so it is sent again every
`CANCEL_AGAIN_S` to the tasks that have not ended; the wrapper takes a second one in its stride.

A task folder the driver can read (`job.task_ref` a directory here) is shipped with its trial:
packed once per run (`task_bundle.py`), put in Ray's object store, unpacked on the node into a
cache folder named by its content, and the job's `task_ref` pointed there; so nodes need no
shared filesystem for datasets. So is the config file a job names (`settings["config_path"]`),
written on the node readable by its owner only (it may hold keys). Workers import workbench and
the work function's module: the same install on every node (a cluster image with
`workbench[ray]`), or a `runtime_env` (docs/scaling.md). Ray is imported only here and only
when a pool runs: `pip install 'workbench[ray]'`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from workbench.eval.task_bundle import pack_task, unpack_task, write_config
from workbench.eval.types import TrialJob, TrialOutcome

SLOT = "sandbox_slot"
"""The custom resource each node advertises: how many trials (sandboxes) it can hold."""
NODE_FILE = "ray_node.json"
"""Added to a trial's files: the node that ran it (id, address, host name, worker pid)."""
CANCEL_AGAIN_S = 5.0
"""After `cancel_running`, how often the tasks still running get `ray.cancel` again."""

log = logging.getLogger("workbench.eval.ray_pool")


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be reached or has no sandbox slots."""


def import_ray() -> Any:
    """The `ray` module, or a RayUnavailable error that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            "Running trials on Ray needs the ray extra: pip install 'workbench[ray]' "
            f"(or leave out --ray to run them on this machine): {exc}"
        ) from exc
    return ray


class RayPool:
    """Runs `work(job)` as Ray tasks on the cluster at `address` ("auto": the one on this node,
    or RAY_ADDRESS), one `sandbox_slot` each; `runtime_env` (Ray's: env_vars, py_modules ...)
    applies to each trial's task."""

    def __init__(
        self,
        address: str = "auto",
        *,
        max_in_flight: int | None = None,
        node_retries: int = 3,
        runtime_env: dict[str, Any] | None = None,
        cancel_grace_s: float = 30.0,
        ship_tasks: bool = True,
        no_slots_timeout_s: float = 600.0,
        poll_s: float = 0.5,
    ) -> None:
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.address = address
        self.max_in_flight = max_in_flight
        self.node_retries = node_retries
        self.runtime_env = runtime_env
        self.cancel_grace_s = cancel_grace_s
        self.ship_tasks = ship_tasks
        self.no_slots_timeout_s = no_slots_timeout_s
        self.poll_s = poll_s
        self._connected_here = False
        self._lock = threading.Lock()
        self._running: dict[Any, TrialJob] = {}  # ray.ObjectRef -> its job
        self._cancelled = False
        self._cancel_sent = 0.0  # time.monotonic() of the last ray.cancel round

    # ------------------------------------------------------------------ connection

    def connect(self) -> None:
        """Join the cluster (once; a process already connected to Ray keeps its connection)."""
        ray = import_ray()
        if ray.is_initialized():
            return
        try:
            ray.init(
                address=self.address,
                log_to_driver=False,  # the workers' output would garble the progress line
                logging_level=logging.WARNING,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise RayUnavailable(
                f"Cannot join the Ray cluster at {self.address!r}: {exc}. Start one with "
                "`ray start --head` (docs/scaling.md) or name its address: --ray HOST:PORT."
            ) from exc
        self._connected_here = True

    def close(self) -> None:
        """Leave the cluster if this pool joined it."""
        if self._connected_here:
            import_ray().shutdown()
            self._connected_here = False

    def slots(self) -> int:
        """How many trials the cluster's live nodes can hold at once now."""
        return int(import_ray().cluster_resources().get(SLOT, 0))

    # ------------------------------------------------------------------ TrialPool

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
        ray = import_ray()
        self.connect()
        self._cancelled = False
        with self._lock:  # an earlier run cut short by Ctrl-C cancelled what it left here
            self._running.clear()
        task = ray.remote(run_on_node)
        if self.slots() == 0:
            log.warning(
                "no node of the Ray cluster offers a %s yet: trials wait for one (up to %.0f s); "
                "start nodes with --resources='{\"%s\": N}'",
                SLOT,
                self.no_slots_timeout_s,
                SLOT,
            )
        pending = deque(jobs)
        bundles: dict[str, Any] = {}  # task folder -> (digest, ObjectRef of its packed bytes)
        configs: dict[str, bytes | None] = {}  # config path -> its bytes
        no_slots_since: float | None = None
        while True:
            slots = self.slots()
            if slots == 0 and (pending or self._running):
                no_slots_since = no_slots_since or time.monotonic()
                if time.monotonic() - no_slots_since > self.no_slots_timeout_s:
                    self._give_up(on_done)
                    return
            else:
                no_slots_since = None
            room = max(1, slots)  # one even with none: an autoscaler sees the demand
            if self.max_in_flight is not None:
                room = min(room, self.max_in_flight)
            while pending and len(self._running) < room and not self._cancelled and should_start():
                job = pending.popleft()
                if prepare is not None:
                    job = prepare(job)
                ref = task.options(
                    name=f"trial {job.trial_id}",
                    num_cpus=0,
                    resources={SLOT: 1},
                    max_retries=self.node_retries,
                    retry_exceptions=False,
                    **({"runtime_env": self.runtime_env} if self.runtime_env else {}),
                ).remote(
                    work,
                    job,
                    self.cancel_grace_s,
                    *self._bundle(ray, job, bundles),
                    config=self._config(job, configs),
                )
                with self._lock:
                    self._running[ref] = job
            if not self._running:
                return
            refs = list(self._running)
            ready, _ = ray.wait(refs, num_returns=1, timeout=self.poll_s)
            if ready:  # and whatever else has ended meanwhile
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            for ref in ready:
                with self._lock:
                    job = self._running.pop(ref)
                on_done(self._outcome(ray, ref, job))
            since_cancel = time.monotonic() - self._cancel_sent
            if self._cancelled and self._running and since_cancel > CANCEL_AGAIN_S:
                log.info("cancelling again: %d trial(s) still running", len(self._running))
                self.cancel_running()  # the tasks a lost cancel left running

    def cancel_running(self) -> None:
        """Stop the running trials (each returns its outcome as cancelled) and start no more."""
        self._cancelled = True
        self._cancel_sent = time.monotonic()
        with self._lock:
            refs = list(self._running)
        if refs:
            ray = import_ray()
            for ref in refs:
                ray.cancel(ref)

    # ------------------------------------------------------------------ helpers

    def _bundle(self, ray: Any, job: TrialJob, bundles: dict[str, Any]) -> tuple[Any, ...]:
        """(digest, ObjectRef) of the job's task folder packed (arguments of their own, so Ray
        resolves the ref), or () to send the job's task_ref alone."""
        if not self.ship_tasks or not os.path.isdir(job.task_ref):
            return ()
        if job.task_ref not in bundles:
            try:
                digest, data = pack_task(Path(job.task_ref))
            except (OSError, ValueError) as exc:  # the nodes read it by its path, or say why not
                log.warning("not shipping the task %s: %s", job.task_ref, exc)
                bundles[job.task_ref] = ()
            else:
                bundles[job.task_ref] = (digest, ray.put(data))
        return tuple(bundles[job.task_ref])

    def _config(self, job: TrialJob, configs: dict[str, bytes | None]) -> bytes | None:
        """The bytes of the config file the job names, read once; None without one."""
        path = job.settings.get("config_path")
        if not self.ship_tasks or not isinstance(path, str) or not path:
            return None
        if path not in configs:
            try:
                configs[path] = Path(path).read_bytes()
            except OSError as exc:  # the node may have it at the same path, or says why not
                log.warning("not shipping the config %s: %s", path, exc)
                configs[path] = None
        return configs[path]

    def _outcome(self, ray: Any, ref: Any, job: TrialJob) -> TrialOutcome:
        try:
            outcome: TrialOutcome = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            return TrialOutcome(
                job.trial_id, "cancelled", None, error="cancelled before it started"
            )
        except ray.exceptions.RayError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return TrialOutcome(
                job.trial_id,
                "error",
                None,
                error=f"the trial's Ray task failed ({type(exc).__name__}, after up to "
                f"{self.node_retries} retries on other nodes): {first}",
            )
        return outcome

    def _give_up(self, on_done: Callable[[TrialOutcome], None]) -> None:
        """No node has had a sandbox slot for `no_slots_timeout_s`: report the running
        trials as errors and start no more (a later run with the same --out retries them)."""
        ray = import_ray()
        with self._lock:
            stranded = list(self._running.items())
            self._running.clear()
        for ref, job in stranded:
            ray.cancel(ref, force=True)
            on_done(
                TrialOutcome(
                    job.trial_id,
                    "error",
                    None,
                    error=f"no Ray node offered a {SLOT} for {self.no_slots_timeout_s:.0f} s "
                    "(all nodes lost?); start nodes with --resources='{\"sandbox_slot\": N}'",
                )
            )


def run_on_node(
    work: Callable[[TrialJob], TrialOutcome],
    job: TrialJob,
    cancel_grace_s: float,
    digest: str | None = None,
    packed: bytes | None = None,
    config: bytes | None = None,
) -> TrialOutcome:
    """The Ray task: `work(job)` in a thread of this worker, so that `ray.cancel` (a
    KeyboardInterrupt in the main thread) can ask the trial to stop and still get its outcome.
    `digest`, `packed`: the task folder shipped (`task_bundle.py`), unpacked here first;
    `config`: the config file's bytes, written here first."""
    with _sigint_raises():
        return _run_here(work, job, cancel_grace_s, digest, packed, config)


@contextlib.contextmanager
def _sigint_raises() -> Iterator[None]:
    """Inside, SIGINT raises KeyboardInterrupt in this worker; the old disposition is put back
    after. `ray.cancel` is a SIGINT simulated in the task's main thread
    (`_thread.interrupt_main`), which does nothing where SIGINT is ignored: a node started by a
    script in the background (`nohup ray start ... &`) passes that on to its workers, and every
    cancel was lost. A handler of the worker's own (not ignored, not the default) is kept."""
    previous = signal.getsignal(signal.SIGINT)
    handled = previous not in (signal.SIG_IGN, signal.SIG_DFL, None)  # the worker's own
    if handled or threading.current_thread() is not threading.main_thread():
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous or signal.SIG_DFL)


def _run_here(
    work: Callable[[TrialJob], TrialOutcome],
    job: TrialJob,
    cancel_grace_s: float,
    digest: str | None,
    packed: bytes | None,
    config: bytes | None,
) -> TrialOutcome:
    try:
        if digest is not None and packed is not None:
            folder = unpack_task(digest, packed, Path(job.task_ref).name)
            job = replace(job, task_ref=str(folder))
        if config is not None:
            path = write_config(config, Path(str(job.settings["config_path"])).suffix)
            job = replace(job, settings={**job.settings, "config_path": str(path)})
    except (OSError, ValueError) as exc:
        return TrialOutcome(job.trial_id, "error", None, error=f"unpacking the task: {exc}")
    hooks = sys.modules.get(getattr(work, "__module__", ""), None)
    reset = getattr(hooks, "reset_cancel", None)
    if callable(reset):  # a worker process is reused: an earlier run's cancel must not stick
        reset()
    box: list[TrialOutcome] = []
    ended = threading.Event()  # not Thread.join: a join cut short by KeyboardInterrupt can
    # leave the thread marked as stopped while it still runs

    def call() -> None:
        try:
            box.append(work(job))
        except BaseException as exc:  # a bug in `work`: still an outcome, never a hang
            box.append(TrialOutcome(job.trial_id, "error", None, error=f"{exc!r}"))
        finally:
            ended.set()

    threading.Thread(target=call, name=f"trial-{job.trial_id}", daemon=True).start()
    try:
        while not ended.wait(0.2):
            pass
    except KeyboardInterrupt:  # ray.cancel
        cancel = getattr(hooks, "cancel_all", None)
        if callable(cancel):
            try:
                cancel()
            except KeyboardInterrupt:  # cancelled twice: once is enough
                cancel()
        deadline = time.monotonic() + cancel_grace_s
        while not ended.is_set() and time.monotonic() < deadline:
            try:
                ended.wait(0.2)
            except KeyboardInterrupt:
                continue
    if not box:
        return TrialOutcome(
            job.trial_id,
            "cancelled",
            None,
            error=f"cancelled; the trial had not stopped {cancel_grace_s:.0f} s later",
        )
    outcome = box[0]
    outcome.files[NODE_FILE] = _node_record()
    return outcome


def _node_record() -> bytes:
    import json

    ray = import_ray()
    context = ray.get_runtime_context()
    return json.dumps(
        {
            "node_id": context.get_node_id(),
            "node_ip": ray.util.get_node_ip_address(),
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
    ).encode()
