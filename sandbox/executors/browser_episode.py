"""The record of one BrowserGym evaluation episode, kept by the browser executor.

The worker reports each step's reward and done (`browser_task.py`); this record keeps every
reward, the best one (the episode's score, as the reference scores it) and whether the task
ended the episode. It lives in the executor, not the worker: a browser that crashes ends the
episode but loses none of its rewards.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from sandbox.protocol import BrowseTaskScoreObservation, BrowseTaskState, ErrorObservation


def script_url(action: str) -> str | None:
    """The first `javascript:` URL among the action's strings, else None. During an episode
    one is refused: `goto("javascript:WOB_RAW_REWARD_GLOBAL=1")` runs code in the task's page
    and would set its reward. Browsers drop whitespace and control characters around and
    inside a URL's scheme, so this check does too."""
    try:
        tree = ast.parse(action)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            bare = "".join(ch for ch in node.value if ord(ch) > 0x20 and ord(ch) != 0x7F)
            if bare.lower().startswith("javascript:"):
                return node.value
    return None


@dataclass
class Episode:
    """One evaluation episode: its task, goal, rewards so far and whether it is over."""

    task_id: str
    goal: str = ""
    goal_images: list[str] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    done: bool = False
    ended: str = ""
    """Why the episode is over: the task's word, or what went wrong ("" while it runs)."""

    @property
    def best(self) -> float:
        """The episode's score: its best reward (0.0 before any step)."""
        return max(self.rewards, default=0.0)

    def state(self, reward: float = 0.0, message: str = "") -> BrowseTaskState:
        """Where the episode stands, with this step's reward and message."""
        return BrowseTaskState(
            task_id=self.task_id,
            goal=self.goal,
            goal_images=list(self.goal_images),
            reward=reward,
            done=self.done,
            message=message,
            best_reward=self.best,
            steps=len(self.rewards),
        )

    def record(self, reward: float, done: bool, message: str) -> BrowseTaskState:
        """Add one step's reward; `done` (the task's word) ends the episode."""
        self.rewards.append(reward)
        if done and not self.done:
            self.done = True
            self.ended = message or f"the task ended the episode with reward {reward:g}"
        return self.state(reward, message)

    def end(self, why: str) -> None:
        """End the episode from outside the task (the browser stopped); the score stays."""
        if not self.done:
            self.done = True
            self.ended = why

    def refusal(self) -> ErrorObservation:
        """The answer to a step after the episode ended."""
        return ErrorObservation(
            content=f"The task '{self.task_id}' is over ({self.ended}; score {self.best:g}): "
            "no further browser action counts. Call finish."
        )

    def script_refusal(self, url: str) -> ErrorObservation:
        """The answer to a step that would run a `javascript:` URL in the task's page."""
        return ErrorObservation(
            content=f"Not run: {url[:80]!r} is a javascript: URL, which would run code in the "
            f"task's page (and could change its score). In the task '{self.task_id}', act on "
            "the page's elements by bid: click, fill, press, select_option ..."
        )

    def score(self) -> BrowseTaskScoreObservation:
        """The episode's score and what it is made of."""
        status = f"ended: {self.ended}" if self.done else "still running"
        return BrowseTaskScoreObservation(
            task_id=self.task_id,
            best_reward=self.best,
            rewards=list(self.rewards),
            done=self.done,
            steps=len(self.rewards),
            content=f"Task '{self.task_id}': best reward {self.best:g} after "
            f"{len(self.rewards)} steps; {status}.",
        )
