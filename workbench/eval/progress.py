"""Live progress of an eval run: one updating line on a terminal, or JSON lines with --json.

The line: `trials 7/20 · running 4 · failed 1 · errors 0 · success 5/6 (83%) · $0.0421 ·
ETA 1m20s`. Off a terminal (a log file, CI) each finished trial gets a line of its own
instead of the `\\r` rewrites. With --json every line is one compact JSON object on stdout:
`start`, one `trial` per finished trial, and `summary` at the end.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

from workbench.eval.types import TrialOutcome


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def summary_line(summary: dict[str, Any]) -> str:
    """The run's last line for a person: what finished, the mean reward, errors, cost, where."""
    mean = summary.get("mean_reward")
    parts = [f"{summary['finished']} of {summary['trials']} trials finished"]
    parts.append("mean reward " + ("-" if mean is None else f"{mean:g}"))
    parts.append(f"{summary['errors']} errors")
    if summary.get("unfinished"):
        parts.append(f"{summary['unfinished']} not run")
    parts.append(f"${summary['cost_usd']:.4f}")
    return "eval: " + ", ".join(parts) + f"; results in {summary['out']}"


class Progress:
    """Counts trials as they start and end, and shows them."""

    def __init__(
        self, total: int, concurrency: int, json_mode: bool = False, out: TextIO | None = None
    ) -> None:
        self.total = total
        self.concurrency = concurrency
        self.json_mode = json_mode
        self.out = out or (sys.stdout if json_mode else sys.stderr)
        self.tty = not json_mode and self.out.isatty()
        self.started_at = time.monotonic()
        self.started = self.done = self.failed = self.errors = self.successes = 0
        self.cost = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # -- events

    def begin(self, info: dict[str, Any]) -> None:
        """The run starts: `info` says what (JSON mode prints it)."""
        if self.json_mode:
            self._json({"type": "start", "trials": self.total, **info})
        elif self.tty:
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def trial_started(self) -> None:
        """One more trial is running."""
        with self._lock:
            self.started += 1
        self._redraw()

    def trial_done(self, outcome: TrialOutcome, task: str) -> None:
        """A trial ended (its folder is written)."""
        with self._lock:
            self.done += 1
            self.cost += outcome.cost_usd
            if outcome.status == "done":
                if (outcome.reward or 0.0) >= 1.0:
                    self.successes += 1
                else:
                    self.failed += 1
            else:
                self.errors += 1
        if self.json_mode:
            self._json(
                {
                    "type": "trial", "trial_id": outcome.trial_id, "task": task,
                    "status": outcome.status, "reward": outcome.reward,
                    "error": outcome.error, "timed_out": outcome.timed_out,
                    "cost_usd": round(outcome.cost_usd, 6),
                    "seconds": {k: round(v, 3) for k, v in outcome.seconds.items()},
                }
            )  # fmt: skip
        elif not self.tty:
            reward = "-" if outcome.reward is None else f"{outcome.reward:g}"
            extra = f" ({outcome.error.splitlines()[0][:100]})" if outcome.error else ""
            self._write(f"{outcome.trial_id}: {outcome.status}, reward {reward}{extra}\n")
        self._redraw()

    def notice(self, text: str) -> None:
        """A sentence for the person (a cap reached, a missing part); JSON: a `notice`."""
        if self.json_mode:
            self._json({"type": "notice", "message": text})
        else:
            self._write(("\r\033[K" if self.tty else "") + text + "\n")
            self._redraw()

    def end(self, summary: dict[str, Any]) -> None:
        """The run is over: stop the ticker, print the last line or the summary object."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if self.json_mode:
            self._json({"type": "summary", **summary})
            return
        if self.tty:
            self._write("\r\033[K" + self.line() + "\n")
        if summary:
            self._write(summary_line(summary) + "\n")

    # -- drawing

    def line(self) -> str:
        """The progress line."""
        with self._lock:
            running = max(0, min(self.started - self.done, self.concurrency))
            scored = self.successes + self.failed
            rate = f" ({100 * self.successes / scored:.0f}%)" if scored else ""
            elapsed = time.monotonic() - self.started_at
            left = self.total - self.done
            eta = ""
            if self.done and left > 0:
                per = elapsed / self.done
                eta = f" · ETA {_duration(per * left)}"
            return (
                f"trials {self.done}/{self.total} · running {running} · failed {self.failed} · "
                f"errors {self.errors} · success {self.successes}/{scored}{rate} · "
                f"${self.cost:.4f} · {_duration(elapsed)}{eta}"
            )

    def _redraw(self) -> None:
        if self.tty:
            self._write("\r\033[K" + self.line())

    def _tick(self) -> None:
        while not self._stop.wait(1.0):
            self._redraw()

    def _json(self, obj: dict[str, Any]) -> None:
        self._write(json.dumps({"v": 1, **obj}, separators=(",", ":")) + "\n")

    def _write(self, text: str) -> None:
        with self._lock:
            try:
                self.out.write(text)
                self.out.flush()
            except (BrokenPipeError, ValueError):
                pass
