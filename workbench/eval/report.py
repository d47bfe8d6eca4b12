"""The results table of an eval run, printed at the end of a run and by
`workbench eval report DIR [--json] [--html FILE]`.

One row per task: finished attempts, mean reward, pass@1 and pass@n, errors, timeouts, tokens,
cost and the agent's mean time; then the totals. Everything in the table that came from a
trial (task names, error texts) goes through `one_line`, so an agent-written name cannot drive
the terminal. `add_report_parser`/`main_report` are the CLI glue `workbench/cli/eval.py` wires in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from workbench.eval.results import summarize, write_results
from workbench.eval.table import (
    HEADERS,
    clip,
    fmt_fraction,
    fmt_seconds,
    fmt_tokens,
    table_row,
    task_cells,
)

MAX_ERRORS_SHOWN = 10


def render_table(results: dict[str, Any]) -> str:
    """The table (one line per task, then the totals and the errors), as text."""
    rows = [task_cells(name, entry) for name, entry in results["tasks"].items()]
    totals = results["totals"]
    tokens = totals["tokens"]["prompt"] + totals["tokens"]["completion"]
    timeouts = sum(totals["timeouts"].values())
    unfinished = f"+{totals['unfinished']}" if totals["unfinished"] else ""
    total_row = [
        f"all {totals['tasks']} task{'' if totals['tasks'] == 1 else 's'}",
        f"{totals['finished']}{unfinished}",
        fmt_fraction(totals["reward"]),
        fmt_fraction(totals["pass_at_1"]),
        "",
        str(totals["errors"]) if totals["errors"] else "-",
        str(timeouts) if timeouts else "-",
        fmt_tokens(tokens),
        f"${totals['cost_usd']:.4f}",
        "",
    ]
    widths = [max(len(row[i]) for row in [HEADERS, *rows, total_row]) for i in range(len(HEADERS))]
    lines = [table_row(HEADERS, widths), table_row(["-" * w for w in widths], widths)]
    lines += [table_row(row, widths) for row in rows]
    lines += [table_row(["-" * w for w in widths], widths), table_row(total_row, widths)]
    rate = totals["success_rate"]
    spent = fmt_seconds(totals["seconds"]["total"])
    if rate is not None:
        wins = f"{totals['successes']}/{totals['scored']} scored trials ({rate:.0%})"
        lines.append(f"success {wins}; {spent} of trial time in all")
    errors = [
        (tid, text) for e in results["tasks"].values() for tid, text in e["error_messages"].items()
    ]
    for trial_id, text in errors[:MAX_ERRORS_SHOWN]:
        lines.append(f"error {clip(trial_id, 60)}: {clip(text, 200)}")
    if len(errors) > MAX_ERRORS_SHOWN:
        lines.append(f"... and {len(errors) - MAX_ERRORS_SHOWN} more errors (see results.json)")
    for bad in results.get("unreadable", []):
        lines.append(f"unreadable {clip(bad['trial_id'], 60)}: {clip(bad['why'], 200)}")
    return "\n".join(lines)


def print_report(out_dir: Path, stream: TextIO | None = None) -> dict[str, Any]:
    """Write results.json for the run in `out_dir` and print its table (the end of a run)."""
    results = write_results(out_dir)
    print(render_table(results), file=stream or sys.stdout)
    return results


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add `report DIR [--json] [--html FILE]` to `workbench eval`'s subcommands."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="the results table of an eval run (also as JSON or an HTML page)",
        description="Read every finished trial of the run in DIR, update DIR/results.json "
        "and print the results table.",
    )
    parser.add_argument("dir", type=Path, metavar="DIR", help="the run's --out folder")
    parser.add_argument("--json", action="store_true", help="print results.json instead")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML report")
    parser.set_defaults(handler=main_report)
    return parser


def report_command(argv: list[str]) -> int:
    """`workbench eval report ARGS...` from its own argument list (for `workbench/cli/eval.py`)."""
    parser = argparse.ArgumentParser(prog="workbench eval")
    add_report_parser(parser.add_subparsers())
    return main_report(parser.parse_args(["report", *argv]))


def main_report(args: argparse.Namespace) -> int:
    """Run `workbench eval report`; the exit code (2 when DIR is not an eval run)."""
    out_dir: Path = args.dir
    if not (out_dir / "trials").is_dir() and not (out_dir / "run.json").is_file():
        print(f"workbench eval report: {out_dir} is not an eval run's folder", file=sys.stderr)
        print(
            "(it has neither trials/ nor run.json; pass the --out folder of a run)", file=sys.stderr
        )
        return 2
    try:
        results = write_results(out_dir)
    except OSError as exc:  # a read-only copy of a run: report without updating it
        print(f"note: results.json not updated ({exc.strerror})", file=sys.stderr)
        results = summarize(out_dir)
    if args.json:
        print(json.dumps(results, indent=1))  # ASCII: no raw 8-bit control
    else:
        print(render_table(results))
    if args.html is not None:
        from workbench.eval.report_html import write_html

        try:
            write_html(results, args.html, title=f"eval run {out_dir.resolve().name}")
        except OSError as exc:
            print(
                f"workbench eval report: cannot write {args.html}: {exc.strerror}", file=sys.stderr
            )
            return 1
        print(f"HTML report: {args.html}", file=sys.stderr)
    return 0
