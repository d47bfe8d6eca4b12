"""An eval run's report as one self-contained HTML file, viewable offline: the totals, a bar
chart of success per task, a scatter of cost against reward (one dot per task), the table.

The charts are inline SVG drawn here; no script, no stylesheet or font from anywhere else.
Every text that came from a trial (task names, error messages: agent-written, untrusted) is
escaped with `html.escape`, attributes included, so none of it can become markup.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from workbench.eval.results import atomic_write_text
from workbench.eval.table import HEADERS, task_cells

BAR_HEIGHT = 22
LABEL_WIDTH = 260
CHART_WIDTH = 420
SCATTER = (560, 320)
PAD = 48
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.1em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.2em 0.6em; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
.errors li { font-family: monospace; white-space: pre-wrap; }
svg text { font-size: 12px; fill: #222; }
"""


_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""Characters HTML and SVG (XML) do not allow in text, or a terminal would act on."""


def _e(text: object) -> str:
    """`text` safe anywhere in the page: controls dropped, markup characters escaped."""
    return html.escape(_CONTROLS.sub("", str(text)), quote=True)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _color(value: float) -> str:
    """Red (0) to green (1)."""
    value = min(1.0, max(0.0, value))
    return f"hsl({round(120 * value)}, 60%, 45%)"


def success_chart(tasks: dict[str, Any]) -> str:
    """Horizontal bars: each task's success (pass@1: the share of its scored trials that
    succeeded), with the figure written beside it."""
    rows = list(tasks.items())
    height = BAR_HEIGHT * max(1, len(rows)) + 30
    width = LABEL_WIDTH + CHART_WIDTH + 60
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="success per task">'
    ]
    for index, (name, entry) in enumerate(rows):
        y = index * BAR_HEIGHT + 4
        value = entry["pass_at_k"].get("1")
        label = name if len(name) <= 38 else name[:37] + "…"
        parts.append(
            f'<text x="{LABEL_WIDTH - 6}" y="{y + 14}" text-anchor="end">{_e(label)}</text>'
        )
        if value is None:
            parts.append(f'<text x="{LABEL_WIDTH + 4}" y="{y + 14}">no score</text>')
            continue
        bar = round(CHART_WIDTH * value, 1)
        parts.append(
            f'<rect x="{LABEL_WIDTH}" y="{y}" width="{bar}" height="{BAR_HEIGHT - 6}" '
            f'fill="{_color(value)}"><title>{_e(name)}: {value:.2f}</title></rect>'
        )
        parts.append(f'<text x="{LABEL_WIDTH + bar + 4}" y="{y + 14}">{value:.2f}</text>')
    axis_y = BAR_HEIGHT * max(1, len(rows)) + 4
    parts.append(
        f'<line x1="{LABEL_WIDTH}" y1="{axis_y}" x2="{LABEL_WIDTH + CHART_WIDTH}" '
        f'y2="{axis_y}" stroke="#888"/>'
    )
    for tick in (0.0, 0.5, 1.0):
        x = LABEL_WIDTH + CHART_WIDTH * tick
        parts.append(f'<text x="{x}" y="{axis_y + 16}" text-anchor="middle">{tick:.1f}</text>')
    parts.append("</svg>")
    return "".join(parts)


def cost_reward_chart(tasks: dict[str, Any]) -> str:
    """A scatter: each task's cost per finished attempt (x) against its mean reward (y)."""
    width, height = SCATTER
    points: list[tuple[str, float, float]] = [
        (name, float(e["cost_usd"]) / e["attempts"], float(e["reward"]))
        for name, e in tasks.items()
        if e["attempts"] and e["reward"] is not None
    ]
    top_cost = max((cost for _, cost, _ in points), default=0.0) or 1.0
    low_reward: float = min([0.0, *(reward for _, _, reward in points)])
    high_reward: float = max([1.0, *(reward for _, _, reward in points)])
    span = high_reward - low_reward

    def x_of(cost: float) -> float:
        return round(PAD + (width - 2 * PAD) * cost / top_cost, 1)

    def y_of(reward: float) -> float:
        return round(height - PAD - (height - 2 * PAD) * (reward - low_reward) / span, 1)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="cost against reward">',
        f'<line x1="{PAD}" y1="{height - PAD}" x2="{width - PAD}" y2="{height - PAD}" '
        'stroke="#888"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{height - PAD}" stroke="#888"/>',
        f'<text x="{width / 2}" y="{height - 10}" text-anchor="middle">'
        "cost per attempt (USD)</text>",
        f'<text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" '
        'text-anchor="middle">mean reward</text>',
        f'<text x="{PAD}" y="{height - PAD + 16}" text-anchor="middle">0</text>',
        f'<text x="{width - PAD}" y="{height - PAD + 16}" text-anchor="middle">'
        f"{top_cost:.4g}</text>",
        f'<text x="{PAD - 6}" y="{y_of(low_reward) + 4}" text-anchor="end">{low_reward:g}</text>',
        f'<text x="{PAD - 6}" y="{y_of(high_reward) + 4}" text-anchor="end">{high_reward:g}</text>',
    ]
    for index, (name, cost, reward) in enumerate(points):
        x, y = x_of(cost), y_of(reward)
        parts.append(
            f'<circle cx="{x}" cy="{y}" r="5" fill="{_color(reward)}" '
            f'fill-opacity="0.8"><title>{_e(name)}: reward {reward:.2f}, '
            f"${cost:.4f} per attempt</title></circle>"
        )
        label = name if len(name) <= 24 else name[:23] + "…"  # above and below in turn
        anchor = "end" if x > width / 2 else "start"
        shift = -8 if anchor == "end" else 8
        parts.append(
            f'<text x="{x + shift}" y="{y + (14 if index % 2 else -6)}" text-anchor="{anchor}" '
            f'font-size="10">{_e(label)}</text>'
        )
    if not points:
        parts.append(
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle">no scored task</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _table(results: dict[str, Any]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in HEADERS)
    rows = []
    for name, entry in results["tasks"].items():
        cells = task_cells(name, entry)
        cells[0] = name  # the whole name here; the cell escapes it
        rows.append("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def render_html(results: dict[str, Any], title: str = "eval run") -> str:
    """The whole page, as text."""
    totals = results["totals"]
    rate = totals["success_rate"]
    summary = (
        f"{_count(totals['tasks'], 'task')}, {_count(totals['finished'], 'finished trial')} "
        f"({totals['unfinished']} unfinished), {_count(totals['errors'], 'error')}; "
        f"success {totals['successes']}/{totals['scored']}"
        + (f" ({rate:.0%})" if rate is not None else "")
        + f"; cost ${totals['cost_usd']:.4f}"
    )
    errors = [
        f"<li>{_e(trial_id)}: {_e(text)}</li>"
        for entry in results["tasks"].values()
        for trial_id, text in entry["error_messages"].items()
    ]
    errors += [f"<li>{_e(u['trial_id'])}: {_e(u['why'])}</li>" for u in results["unreadable"]]
    error_block = f'<h2>Errors</h2><ul class="errors">{"".join(errors)}</ul>' if errors else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{_e(title)}</h1><p>{_e(summary)}</p>"
        f"<h2>Success per task (pass@1)</h2>{success_chart(results['tasks'])}"
        f"<h2>Cost against reward</h2>{cost_reward_chart(results['tasks'])}"
        f"<h2>Tasks</h2>{_table(results)}{error_block}"
        "</body></html>\n"
    )


def write_html(results: dict[str, Any], path: Path, title: str = "eval run") -> None:
    """Write the report page to `path` (atomically)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, render_html(results, title))
