"""How a run ended: the status names of `RunResult` and the exit codes headless returns.

`TABLE` is the one list of exit codes: the constants, `EXIT_CODES`, `DESCRIPTIONS`, the
`--help` list and the table in docs/headless.md are all made from it
(`python -m workbench.exit_codes --markdown` prints the doc's table; a test compares them).
Only the standard library is imported here: `workbench --help` reads this module.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

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
    "replay_differs",
    "log_error",
    "workspace_refused",
]


@dataclass(frozen=True)
class ExitCode:
    """One exit code: its value, constant name, the statuses it ends, a label, its meaning."""

    code: int
    name: str
    statuses: tuple[Status, ...]
    label: str
    """A few words for the `--help` list."""
    description: str
    """What it means, for docs/headless.md and standard error (which drops the backticks)."""


TABLE: Final[tuple[ExitCode, ...]] = (
    ExitCode(
        0, "SUCCESS", ("success",), "success", "the agent called `finish` with outcome `success`"
    ),
    ExitCode(
        1,
        "GAVE_UP",
        ("gave_up", "no_finish"),
        "agent gave up",
        "the agent gave up (`finish` with outcome `gave_up`), or stopped without calling `finish`",
    ),
    ExitCode(
        2,
        "USAGE",
        ("config_error",),
        "usage/config error",
        "bad command line or configuration, or a model the provider cannot place or find (seen "
        "at the first LLM call); no step ran (the message names the file, the key and the fix)",
    ),
    ExitCode(
        3,
        "MAX_ITERATIONS",
        ("max_iterations",),
        "max iterations",
        "the step limit (`--max-iterations`) was reached",
    ),
    ExitCode(4, "BUDGET", ("budget",), "budget", "a budget ran out: tokens, cost or wall time"),
    ExitCode(
        5,
        "STUCK",
        ("stuck",),
        "stuck",
        "the agent kept repeating itself after a warning (same action and result, an A/B "
        "loop, or the same error)",
    ),
    ExitCode(
        6,
        "REJECTED",
        ("rejected",),
        "rejected by policy",
        "an action needed confirmation and the answer was `stop` (`--on-confirm stop`)",
    ),
    ExitCode(
        7,
        "LLM_ERROR",
        ("llm_error",),
        "LLM error",
        "the LLM could not be used: unreachable, key refused, or rate limits, server errors "
        "or timeouts that outlasted the retries",
    ),
    ExitCode(
        8,
        "SANDBOX_ERROR",
        ("sandbox_error",),
        "sandbox error",
        "the sandbox could not be started, or was lost and could not be restarted",
    ),
    ExitCode(
        9,
        "MALFORMED",
        ("malformed",),
        "malformed tool calls",
        "too many malformed tool calls in a row (`agent.max_malformed_calls`)",
    ),
    ExitCode(
        10,
        "INTERNAL",
        ("internal_error",),
        "internal error",
        "a bug in workbench; the session log has the error",
    ),
    ExitCode(
        11,
        "REPLAY_DIFFERS",
        ("replay_differs",),
        "replay differs",
        "`workbench replay --rerun`: a re-run action's result differs from the recorded one "
        "(after normalising times, pids, temporary paths, durations and the workspace path)",
    ),
    ExitCode(
        12,
        "LOG_ERROR",
        ("log_error",),
        "session log unwritable",
        "the session log could not be written (a full disk, a read-only or vanished folder): "
        "the run stopped there, or never started; the log keeps every event written before, "
        "each line whole, and the message names the folder and the fix",
    ),
    ExitCode(
        13,
        "WORKSPACE_REFUSED",
        ("workspace_refused",),
        "workspace refused",
        "the workspace was not confirmed: it looks like a home folder (it is `$HOME`, or holds "
        "`.ssh`, `.gnupg`, `.aws` or a shell start-up file), or a resumed session's log names "
        "another folder than the current one; nothing ran (the message says how to choose it: "
        "`--workspace DIR`, `--yes`)",
    ),
    ExitCode(
        130,
        "INTERRUPTED",
        ("interrupted",),
        "interrupted",
        "interrupted (Ctrl-C or SIGTERM); the session log is complete",
    ),
)


def _code(name: str) -> int:
    """The code of the row with this constant name."""
    return next(row.code for row in TABLE if row.name == name)


SUCCESS: Final = _code("SUCCESS")
GAVE_UP: Final = _code("GAVE_UP")
USAGE: Final = _code("USAGE")
MAX_ITERATIONS: Final = _code("MAX_ITERATIONS")
BUDGET: Final = _code("BUDGET")
STUCK: Final = _code("STUCK")
REJECTED: Final = _code("REJECTED")
LLM_ERROR: Final = _code("LLM_ERROR")
SANDBOX_ERROR: Final = _code("SANDBOX_ERROR")
MALFORMED: Final = _code("MALFORMED")
INTERNAL: Final = _code("INTERNAL")
REPLAY_DIFFERS: Final = _code("REPLAY_DIFFERS")
INTERRUPTED: Final = _code("INTERRUPTED")
LOG_ERROR: Final = _code("LOG_ERROR")
WORKSPACE_REFUSED: Final = _code("WORKSPACE_REFUSED")

EXIT_CODES: Final[dict[Status, int]] = {
    status: row.code for row in TABLE for status in row.statuses
}
DESCRIPTIONS: Final[dict[int, str]] = {row.code: row.description.replace("`", "") for row in TABLE}


def exit_code(status: Status) -> int:
    """The process exit code for a run that ended with `status`."""
    return EXIT_CODES[status]


def markdown_table() -> str:
    """The table of docs/headless.md's "Exit codes" section, one row per code."""
    lines = ["| code | status | meaning |", "|---|---|---|"]
    for row in TABLE:
        statuses = ", ".join(f"`{status}`" for status in row.statuses)
        lines.append(f"| {row.code} | {statuses} | {row.description} |")
    return "\n".join(lines) + "\n"


def help_list(width: int = 88, indent: str = "  ") -> str:
    """The codes and their labels packed into lines of at most `width` columns, for `--help`."""
    lines: list[str] = []
    line = ""
    for row in TABLE:
        item = f"{row.code} {row.label}"
        if line and len(indent) + len(line) + 3 + len(item) > width:
            lines.append(indent + line)
            line = ""
        line = f"{line}   {item}" if line else item
    lines.append(indent + line)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    """`python -m workbench.exit_codes --markdown | --help-list`: print a rendering."""
    renders = {"--markdown": markdown_table, "--help-list": help_list}
    if len(argv) != 1 or argv[0] not in renders:
        print("usage: python -m workbench.exit_codes --markdown | --help-list", file=sys.stderr)
        return 2
    print(renders[argv[0]](), end="")
    return 0


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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
