"""BrowserGym tasks as evaluation tasks: `browsergym/<benchmark>.<task>[@SEED]`.

`BrowserGymTask("browsergym/miniwob.click-test")` implements the `TaskKind` protocol of
`types.py`. `instruction` starts the task's episode in the sandbox's browser
(`browse_task_start`: BrowserGym's environment for that id, reset with the seed) and returns
the goal with the first page, so the agent acts at once with its `browser` tool. Each step's
reward and done come back on the browse observation (`task`), which the session log keeps;
when the task says done, the browser tool ends the run (`BrowserTool.ends_run_after`). `verify`
asks the sandbox for the episode's score (`browse_task_score`): the best reward of its steps,
as the reference scores BrowserGym's evaluation mode.

MiniWoB's pages come from the installed `miniwob` package, so these tasks ask for network
"off" (`config.allow_internet` is False). The browser runs on the host's runtimes only (the
Docker sandbox image has no Chromium): under Docker, `instruction` fails with the reason.
Without `@SEED`, a random seed is drawn and written in the verifier's output, so an episode
can be run again as it was.
"""

from __future__ import annotations

import importlib
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.protocol import (
    BrowseObservation,
    BrowseTaskScoreAction,
    BrowseTaskScoreObservation,
    BrowseTaskStartAction,
    ErrorObservation,
)
from workbench.eval.types import VerifierResult, sandbox_call

if TYPE_CHECKING:
    from sandbox.runtimes.base import Runtime

PREFIX = "browsergym/"
START_TIMEOUT_S = 120.0
"""How long starting an episode may take (a cold browser on a busy machine: ~2-6 s)."""
REF = re.compile(r"^browsergym/(?P<task>[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+?)(?:@(?P<seed>\d{1,9}))?$")
BENCHMARK_MODULES = {"miniwob": "browsergym.miniwob"}
NEEDS_BROWSER = (
    "BrowserGym tasks need the sandbox's browser: run them on the local runtime with Chromium "
    "installed; the Docker sandbox image has no browser"
)


class BrowserGymTaskError(ValueError):
    """A BrowserGym id that cannot be used here; the message says what to fix."""


@dataclass(frozen=True)
class BrowserGymConfig:
    """What a trial reads of a task's settings (the fields of a Harbor task's `TaskConfig`)."""

    agent_timeout_s: float = 300.0
    verifier_timeout_s: float = 60.0
    docker_image: str | None = None
    dockerfile: Path | None = None
    cpus: float | None = None
    memory_bytes: int | None = None
    allow_internet: bool = False
    """MiniWoB's pages are local files: the sandbox needs no network."""
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def uses_docker(self) -> bool:
        """Never: the browser runs on the host's runtimes only."""
        return False


def parse_ref(ref: str) -> tuple[str, int | None]:
    """`browsergym/miniwob.click-test@7` -> ("miniwob.click-test", 7); a bad id raises
    BrowserGymTaskError saying the form."""
    match = REF.match(ref)
    if match is None:
        raise BrowserGymTaskError(
            f"{ref!r} is not a BrowserGym task id: write browsergym/<benchmark>.<task>, e.g. "
            "browsergym/miniwob.click-test (optionally @SEED, e.g. @7)"
        )
    seed = match.group("seed")
    return match.group("task"), int(seed) if seed is not None else None


def benchmark_ids(benchmark: str) -> list[str]:
    """Every task id of a BrowserGym benchmark installed here (`browsergym/miniwob.…`)."""
    import gymnasium as gym

    module = BENCHMARK_MODULES.get(benchmark, f"browsergym.{benchmark}")
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise BrowserGymTaskError(
            f"BrowserGym's '{benchmark}' benchmark is not installed here ({exc}); for MiniWoB: "
            "pip install browsergym-miniwob==0.14.3 && pip install --no-deps miniwob==1.1.0"
        ) from exc
    start = f"{PREFIX}{benchmark}."
    return sorted(name for name in gym.registry if name.startswith(start))


class BrowserGymTask:
    """One BrowserGym task run as an evaluation task in the sandbox's browser."""

    def __init__(self, ref: str, seed: int | None = None) -> None:
        task_id, given = parse_ref(ref)
        self.task_id = task_id
        self.name = task_id
        self.seed = seed if seed is not None else given
        if self.seed is None:
            self.seed = random.randrange(2**31)
        self.config = BrowserGymConfig()
        self.config_overrides: dict[str, Any] = {
            "agent.enable_browser": True,
            "sandbox.network": "off",
        }
        """Settings the trial's session needs whatever the person's config says: the browser
        tool and executor on (the agent acts with them), no network (the pages are local)."""
        self.goal = ""

    def instruction(self, runtime: Runtime) -> str:
        """Start the episode in the sandbox's browser; the goal and the first page."""
        action = BrowseTaskStartAction(task_id=self.task_id, seed=self.seed)
        observation = sandbox_call(runtime.execute(action), START_TIMEOUT_S)
        if isinstance(observation, ErrorObservation):
            hint = ""
            if observation.error_kind == "unavailable" and "No 'browse_task_start'" in str(
                observation.content
            ):
                hint = f" ({NEEDS_BROWSER})"
            raise RuntimeError(
                f"the task '{self.task_id}' did not start: {observation.content}{hint}"
            )
        if not isinstance(observation, BrowseObservation) or observation.task is None:
            raise RuntimeError(f"the task '{self.task_id}' did not start: {observation!r}")
        self.goal = observation.task.goal
        return instruction_text(self.task_id, observation)

    def verify(self, runtime: Runtime, timeout_s: float) -> VerifierResult:
        """The episode's score: its best reward (every reward and done in the output)."""
        try:
            answer = sandbox_call(runtime.execute(BrowseTaskScoreAction()), timeout_s)
        except TimeoutError:
            return VerifierResult(None, timed_out=True, error="the score was not read in time")
        if not isinstance(answer, BrowseTaskScoreObservation):
            text = getattr(answer, "content", repr(answer))
            return VerifierResult(None, output=text, error=f"no score: {text}")
        record = {
            "task": self.task_id,
            "seed": self.seed,
            "goal": self.goal,
            "reward": answer.best_reward,
            "rewards": answer.rewards,
            "done": answer.done,
            "steps": answer.steps,
        }
        output = f"{answer.content}\nseed {self.seed}; rewards {answer.rewards}\n"
        files = {
            "verifier/stdout.txt": output.encode(),
            "verifier/reward.txt": f"{answer.best_reward:g}\n".encode(),
            "verifier/browsergym.json": json.dumps(record, indent=2).encode(),
        }
        return VerifierResult(
            answer.best_reward, {"reward": answer.best_reward}, output=output, files=files
        )


def instruction_text(task_id: str, page: BrowseObservation) -> str:
    """The agent's task: the goal, its images, the page it starts on, and how to act."""
    assert page.task is not None
    images = page.task.goal_images
    folder = Path(page.screenshot_path).parent if page.screenshot_path else None
    shown = [f"[goal image: {folder / name if folder else name}]" for name in images]
    return "\n".join(
        [
            f"Web task '{task_id}' (BrowserGym). Goal:",
            page.task.goal or "(the task gave no text)",
            *shown,
            "",
            "The task's page is open in the browser. Act on it with the `browser` tool, one "
            'BrowserGym action at a time: click("13"), fill("15", "some text"), '
            'press("15", "Enter"), select_option("7", "blue") ... (the numbers are the bid in '
            "brackets in the accessibility tree below). Stay on this page. Each step answers "
            "with the task's reward; when the task is complete it says so and the run ends.",
            "",
            f"URL: {page.url}",
            "Accessibility tree:",
            page.axtree,
        ]
    )
