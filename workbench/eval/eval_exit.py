"""Exit codes of `workbench eval`, in the style of `workbench/exit_codes.py` (one table).

They say how the run went, not how well the agent did: rewards are in `results.json` and the
table. Codes shared with headless runs keep their meaning (2 usage, 4 budget, 130 interrupted);
14 is new. Only the standard library: `workbench eval --help` prints the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class EvalExit:
    """One exit code of `workbench eval`: its value, constant name, a label, its meaning."""

    code: int
    name: str
    label: str
    description: str


TABLE: Final[tuple[EvalExit, ...]] = (
    EvalExit(0, "DONE", "done", "every trial ran and was scored (whatever its reward)"),
    EvalExit(
        2,
        "USAGE",
        "usage error",
        "bad command line, dataset, task folder or task.toml; no trial ran (the message names "
        "the file and the field)",
    ),
    EvalExit(
        4,
        "CAPPED",
        "cost cap",
        "a cost cap (--max-cost, --max-task-cost) stopped the run before every trial ran; the "
        "finished ones are kept: raise the cap and run again with the same --out to go on",
    ),
    EvalExit(
        14,
        "TRIAL_ERRORS",
        "trial errors",
        "every trial ran, but some ended in an infrastructure error (sandbox or image build "
        "failed, the model unusable after its retries): no score for those; --retry-errors "
        "with the same --out runs them again",
    ),
    EvalExit(
        130,
        "INTERRUPTED",
        "interrupted",
        "interrupted (Ctrl-C or SIGTERM); finished trials are kept, the same --out goes on",
    ),
)

DONE: Final = 0
USAGE: Final = 2
CAPPED: Final = 4
TRIAL_ERRORS: Final = 14
INTERRUPTED: Final = 130


def help_list() -> str:
    """The codes and their labels, one line, for `--help`."""
    return "   ".join(f"{row.code} {row.label}" for row in TABLE)


def markdown_table() -> str:
    """The table of docs/eval.md's "Exit codes" section."""
    lines = ["| code | meaning |", "|---|---|"]
    lines += [f"| {row.code} | {row.description} |" for row in TABLE]
    return "\n".join(lines) + "\n"
