"""Tasks and datasets: Harbor task folders, BrowserGym ids, and the built-in demo suite.

A Harbor task folder (the Harbor / Terminal-Bench 2.0 layout) holds `instruction.md` (the task
text), `task.toml` (`task_config.py`), `tests/test.sh` (the verifier: writes
`/logs/verifier/reward.txt` or `reward.json`, `verifier.py` says how it runs) and optionally
`solution/solve.sh` and `environment/Dockerfile`. A dataset is a folder of task folders.

`load_dataset` turns what the person typed into `TaskEntry`s:

- `demo`: the built-in suite (`demo/`), plus the MiniWoB ids of `demo/browsergym.txt` once
  BrowserGym tasks are available (`browsergym_task.py`);
- a task folder, or a folder of task folders;
- `browsergym/<benchmark>.<task>` (one BrowserGym task) or `browsergym/<benchmark>` /
  `miniwob` (all of a benchmark's tasks), run by `workbench/eval/browsergym_task.py`.
"""

from __future__ import annotations

import fnmatch
import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.eval.task_config import TaskConfig, TaskConfigError, read_task_config
from workbench.eval.types import TaskKind, VerifierResult

if TYPE_CHECKING:
    from sandbox.runtimes.base import Runtime

DEMO_DIR = Path(__file__).resolve().parent / "demo"
BROWSERGYM_PREFIX = "browsergym/"
BENCHMARKS = ("miniwob", "webarena", "visualwebarena", "workarena", "assistantbench", "weblinx")
BROWSERGYM_MODULE = "workbench.eval.browsergym_task"


class DatasetError(ValueError):
    """A dataset or task that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class TaskEntry:
    """One task of a dataset, as the driver needs it (no sandbox yet)."""

    name: str
    """Unique in the dataset; also the first part of its trials' folder names."""
    ref: str
    """What a trial loads: a task folder's path or a BrowserGym id."""
    config: TaskConfig = field(default_factory=TaskConfig)


class HarborTask:
    """A task in the Harbor layout: instruction.md, task.toml, tests/test.sh."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self.name = self.folder.name
        self.config = read_task_config(self.folder)

    def instruction(self, runtime: Runtime) -> str:
        """The task text (instruction.md); nothing to set up: the sandbox starts empty."""
        return (self.folder / "instruction.md").read_text(encoding="utf-8")

    def verify(self, runtime: Runtime, timeout_s: float) -> VerifierResult:
        """Run tests/test.sh in the sandbox the agent worked in (`verifier.py`)."""
        from workbench.eval.verifier import run_verifier

        return run_verifier(runtime, self.folder / "tests", timeout_s)


def browsergym_module() -> Any:
    """`workbench.eval.browsergym_task`, or DatasetError when it is not there."""
    if importlib.util.find_spec(BROWSERGYM_MODULE) is None:
        raise DatasetError(
            "BrowserGym tasks are not available in this build (no workbench/eval/"
            "browsergym_task.py); run Harbor task folders, or `workbench eval demo`"
        )
    return importlib.import_module(BROWSERGYM_MODULE)


def load_task(ref: str) -> TaskKind:
    """The task a trial runs: a Harbor folder, or a BrowserGym id (`BrowserGymTask(id)`)."""
    if ref.startswith(BROWSERGYM_PREFIX):
        task: TaskKind = browsergym_module().BrowserGymTask(ref)
        return task
    return HarborTask(Path(ref))


def check_task_folder(folder: Path) -> TaskEntry:
    """A Harbor task folder checked (instruction.md, tests/test.sh, task.toml)."""
    if not (folder / "instruction.md").is_file():
        raise DatasetError(f"{folder}: no instruction.md, so it is not a task folder")
    if not (folder / "tests" / "test.sh").is_file():
        raise DatasetError(f"{folder}: no tests/test.sh (the verifier that writes the reward)")
    try:
        config = read_task_config(folder)
    except TaskConfigError as exc:
        raise DatasetError(str(exc)) from None
    return TaskEntry(folder.name, str(folder.resolve()), config)


def _browsergym_entries(ref: str) -> list[TaskEntry]:
    """Entries for one BrowserGym id, or a whole benchmark (`benchmark_ids(name)`)."""
    rest = ref.removeprefix(BROWSERGYM_PREFIX)
    module = browsergym_module()
    ids = [ref] if "." in rest else list(module.benchmark_ids(rest))
    if not ids:
        raise DatasetError(f"{ref}: the benchmark has no tasks here")
    return [TaskEntry(i.removeprefix(BROWSERGYM_PREFIX), i) for i in ids]


def _demo_entries() -> list[TaskEntry]:
    entries = [check_task_folder(p) for p in sorted(DEMO_DIR.iterdir()) if _is_task(p)]
    if importlib.util.find_spec(BROWSERGYM_MODULE) is not None:
        listed = (DEMO_DIR / "browsergym.txt").read_text(encoding="utf-8").split()
        entries += [TaskEntry(i.removeprefix(BROWSERGYM_PREFIX), i) for i in listed]
    return entries


def _is_task(path: Path) -> bool:
    return path.is_dir() and (path / "instruction.md").is_file()


def load_dataset(dataset: str, only: list[str] | None = None) -> list[TaskEntry]:
    """The tasks `dataset` names, in order, filtered by `only` (names or glob patterns)."""
    if dataset == "demo":
        entries = _demo_entries()
    elif dataset.startswith(BROWSERGYM_PREFIX):
        entries = _browsergym_entries(dataset)
    elif dataset in BENCHMARKS and not Path(dataset).exists():
        entries = _browsergym_entries(BROWSERGYM_PREFIX + dataset)
    else:
        folder = Path(dataset).expanduser()
        if not folder.is_dir():
            raise DatasetError(
                f"{dataset}: no such folder. Give a task folder, a folder of task folders, "
                "`demo`, or a BrowserGym id such as browsergym/miniwob.click-test"
            )
        if _is_task(folder):
            entries = [check_task_folder(folder)]
        else:
            entries = [check_task_folder(p) for p in sorted(folder.iterdir()) if _is_task(p)]
            if not entries:
                raise DatasetError(
                    f"{folder}: no task folders in it (a task folder holds instruction.md "
                    "and tests/test.sh)"
                )
    if only:
        unknown = [p for p in only if not any(fnmatch.fnmatchcase(e.name, p) for e in entries)]
        if unknown:
            names = ", ".join(e.name for e in entries[:20])
            raise DatasetError(f"--tasks {', '.join(unknown)}: no such task (tasks: {names})")
        entries = [e for e in entries if any(fnmatch.fnmatchcase(e.name, p) for p in only)]
    seen: set[str] = set()
    for entry in entries:
        if entry.name in seen:
            raise DatasetError(f"two tasks are named {entry.name}: task names must be unique")
        seen.add(entry.name)
    return entries
