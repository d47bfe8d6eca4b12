"""What a re-run prints: a readable diff per differing step, or one JSON line per difference
(docs/headless.md, "Replay"), then a summary whose exit code says whether everything matched."""

from __future__ import annotations

import difflib
import json
from typing import Any

from sandbox.protocol import CmdOutputObservation
from workbench.headless.output import JSONL_VERSION, Printer, describe_action
from workbench.replay.rerun import StepResult


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def _outcome(result: StepResult) -> str:
    """A command's exit code, for the line that says how its step went."""
    new = result.new
    if isinstance(new, CmdOutputObservation):
        return " (still running)" if new.running else f" (exit code {new.exit_code})"
    return ""


class RerunReport:
    """Prints each step's outcome as it comes, then the summary (human-readable)."""

    def __init__(self, printer: Printer) -> None:
        self.printer = printer

    def start(self, info: dict[str, Any]) -> None:
        """Which recording re-runs where."""
        self.printer.line(f"re-running {info['session_id']} ({info['log']}) in {info['workspace']}")
        if info.get("starts_from"):
            self.printer.line(f"the workspace starts {info['starts_from']}")

    def step(self, result: StepResult) -> None:
        """One action: as recorded, different (with a diff), or not re-run."""
        if not result.reported:
            return
        self.printer.line(f"[{result.step}] {describe_action(result.action)}")
        if result.skipped:
            self.printer.line(f"    - not re-run: {result.skipped}")
        elif result.differs:
            self.printer.line(f"    ✗ differs from the recording{_outcome(result)}:")
            diff = difflib.unified_diff(
                result.recorded_text.splitlines(),
                result.new_text.splitlines(),
                "recorded",
                "re-run",
                lineterm="",
            )
            self.printer.line(_indent("\n".join(diff), "      "))
            self.printer.line(f"      why: {result.why}")
        else:
            self.printer.line(f"    = as recorded{_outcome(result)}")
            self.printer.line(f"      why: {result.why}")

    def summary(self, summary: dict[str, Any]) -> None:
        """The closing line."""
        s = summary
        first = s["first_difference_step"]
        outcome = (
            f"{s['differences']} differ, the first at step {first}"
            if s["differences"]
            else "all as recorded"
        )
        self.printer.line(
            f"== {s['mode']}: {s['compared']} actions compared, {outcome}; "
            f"{s['skipped']} not re-run; workspace {s['workspace']}; exit {s['exit_code']}"
        )


class JsonRerunReport(RerunReport):
    """One JSON object per line: `start`, a `difference` per differing action, `summary`."""

    def _emit(self, obj: dict[str, Any]) -> None:
        self.printer.line(json.dumps({"v": JSONL_VERSION, **obj}, separators=(",", ":")))

    def start(self, info: dict[str, Any]) -> None:
        """The `start` line."""
        self._emit({"type": "start", **info})

    def step(self, result: StepResult) -> None:
        """A `difference` line when the result differs; a note on stderr when not re-run."""
        if result.reported and result.skipped:
            self.printer.notice(f"step {result.step}: not re-run: {result.skipped}")
        if not result.differs:
            return
        self._emit(
            {
                "type": "difference",
                "step": result.step,
                "event": result.action.id,
                "tool": result.action.tool_name,
                "action": describe_action(result.action),
                "recorded": result.recorded_text,
                "new": result.new_text,
                "why": result.why,
            }
        )

    def summary(self, summary: dict[str, Any]) -> None:
        """The `summary` line."""
        self._emit({"type": "summary", **summary})
