"""The cells of the results table, shared by the terminal table (`report.py`) and the HTML
report (`report_html.py`). Text from a trial goes through `one_line` (no control characters)."""

from __future__ import annotations

from typing import Any

from workbench.safe_text import one_line

TASK_WIDTH = 32


def fmt_fraction(value: float | None) -> str:
    """0.67, or - for none."""
    return "-" if value is None else f"{value:.2f}"


def fmt_tokens(count: int) -> str:
    """A token count, short: 950, 12k, 1.2M."""
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 10_000:
        return f"{count / 1000:.0f}k"
    return str(count)


def fmt_seconds(value: float | None) -> str:
    """4.2s, 42s, 3m33s, 1h02m, or - for none."""
    if value is None:
        return "-"
    if value < 10:
        return f"{value:.1f}s"
    whole = round(value)
    if whole < 120:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def clip(text: str, width: int) -> str:
    """`text` on one line, safe for a terminal, cut to `width` with an ellipsis."""
    text = one_line(text)
    return text if len(text) <= width else text[: width - 1] + "…"


def table_row(cells: list[str], widths: list[int]) -> str:
    """One line of the table: the first cell left-aligned, the others right-aligned."""
    first = cells[0].ljust(widths[0])
    rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
    return "  ".join([first, *rest]).rstrip()


HEADERS = ["task", "tries", "reward", "pass@1", "pass@n", "err", "t/o", "tokens", "cost", "agent"]


def task_cells(name: str, entry: dict[str, Any]) -> list[str]:
    """One task's row, as text cells in `HEADERS` order."""
    passes = entry["pass_at_k"]
    last = passes[str(len(passes))] if passes else None
    timeouts = sum(entry["timeouts"].values())
    tokens = entry["tokens"]["prompt"] + entry["tokens"]["completion"]
    unfinished = f"+{entry['unfinished']}" if entry["unfinished"] else ""
    return [
        clip(name, TASK_WIDTH),
        f"{entry['attempts']}{unfinished}",
        fmt_fraction(entry["reward"]),
        fmt_fraction(passes.get("1")),
        fmt_fraction(last),
        str(entry["errors"]) if entry["errors"] else "-",
        str(timeouts) if timeouts else "-",
        fmt_tokens(tokens),
        f"${entry['cost_usd']:.4f}",
        fmt_seconds(entry["seconds_mean"]["agent"]),
    ]
