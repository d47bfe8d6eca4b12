"""How a run ended: the status names of `RunResult` and the exit codes headless returns.

Documented for users in docs/headless.md; keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SUCCESS = 0
GAVE_UP = 1
USAGE = 2
MAX_ITERATIONS = 3
BUDGET = 4
STUCK = 5
REJECTED = 6
LLM_ERROR = 7
SANDBOX_ERROR = 8
MALFORMED = 9
INTERNAL = 10
INTERRUPTED = 130

Status = Literal[
    "success",
    "gave_up",
    "no_finish",
    "config_error",
    "max_iterations",
    "budget",
    "stuck",
    "malformed",
    "rejected",
    "llm_error",
    "sandbox_error",
    "internal_error",
    "interrupted",
]

EXIT_CODES: dict[Status, int] = {
    "success": SUCCESS,
    "gave_up": GAVE_UP,
    "no_finish": GAVE_UP,
    "config_error": USAGE,
    "max_iterations": MAX_ITERATIONS,
    "budget": BUDGET,
    "stuck": STUCK,
    "rejected": REJECTED,
    "llm_error": LLM_ERROR,
    "sandbox_error": SANDBOX_ERROR,
    "malformed": MALFORMED,
    "internal_error": INTERNAL,
    "interrupted": INTERRUPTED,
}

DESCRIPTIONS: dict[int, str] = {
    SUCCESS: "the agent finished the task",
    GAVE_UP: "the agent gave up, or stopped without calling finish",
    USAGE: "bad command line or configuration; nothing ran",
    MAX_ITERATIONS: "the step limit (--max-iterations) was reached",
    BUDGET: "a budget (tokens, cost or wall time) ran out",
    STUCK: "the agent was stuck in a loop and did not get out after a warning",
    REJECTED: "an action needed confirmation and the policy said stop",
    LLM_ERROR: "the LLM could not be used (unreachable, key refused, or failing after retries)",
    SANDBOX_ERROR: "the sandbox could not be started or was lost",
    MALFORMED: "too many malformed tool calls in a row",
    INTERNAL: "a bug in workbench; the session log has the details",
    INTERRUPTED: "interrupted (Ctrl-C); the session log is complete",
}


def exit_code(status: Status) -> int:
    """The process exit code for a run that ended with `status`."""
    return EXIT_CODES[status]


@dataclass(frozen=True)
class RunResult:
    """How a run ended, with its accounting."""

    status: Status
    exit_code: int
    steps: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    session_id: str
    reason: str = ""

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens
