"""What headless prints: human-readable progress, or versioned JSON lines (docs/headless.md).

Both printers see the same events. By default they show the events a person follows (messages,
actions, results, confirmations, errors); `log_all_events` adds state changes and LLM calls.
Every printed line goes through the secret scrubber first. JSON lines are strict JSON: a
number that is not finite is written as the string "NaN", "Infinity" or "-Infinity", and text
UTF-8 cannot carry (a lone surrogate) as U+FFFD, so any JSON parser reads every line.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from sandbox.truncate import truncate_middle
from workbench.agent.boundary import clean_text
from workbench.event_lines import event_line
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    CheckpointEvent,
    CondensationEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    InstructionsEvent,
    LLMCallEvent,
    LLMRetryEvent,
    LLMWaitEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.llm.errors import retry_notice
from workbench.safe_text import terminal_safe
from workbench.session.steps import StepCounter
from workbench.tools.registry import REGISTRY

JSONL_VERSION = 1
PROGRESS_KINDS = frozenset(
    {
        "message",
        "action",
        "observation",
        "agent_error",
        "confirmation_request",
        "confirmation_decision",
        "error",
        "llm_wait",
        "llm_retry",
        "condensation",
        "instructions",
    }
)
"""Event kinds printed without LOG_ALL_EVENTS (the rest: `state`, `llm_call`, `checkpoint`)."""
_HUMAN_OBS_CHARS = 2000
_SURROGATE_ESCAPE = re.compile(r"\\ud[89a-f]", re.IGNORECASE)


def _strict(value: Any) -> Any:
    """`value` with non-finite floats as strings and every string valid for UTF-8."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {_strict(key): _strict(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(item) for item in value]
    return value


def strict_json(obj: Any) -> str:
    """One compact line of JSON any parser reads: no NaN or Infinity, no lone surrogates."""
    try:
        text = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a non-finite number
        text = ""
    if not text or _SURROGATE_ESCAPE.search(text):  # pairs are fine; lone ones are replaced
        text = json.dumps(_strict(obj), separators=(",", ":"), allow_nan=False)
    return text


def silence(stream: TextIO) -> None:
    """Point the file descriptor under `stream` at /dev/null, so what is still buffered, and
    the interpreter's last flush, do not fail on a closed pipe again."""
    try:
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
    except (OSError, ValueError):  # no descriptor (a StringIO): nothing to silence
        return
    os.dup2(devnull, fd)
    os.close(devnull)


class Printer:
    """Base of both printers: filtering, scrubbing and the line sink."""

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        all_events: bool = False,
        scrub: Callable[[str], str] = str,
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.all_events = all_events
        self.scrub = scrub
        self.counter = StepCounter()
        """Numbers the steps of the events seen (`workbench/session/steps.py`); a resumed run's
        printer is given the earlier events first (`skip`)."""
        self._gone: list[TextIO] = []
        """Streams whose reader went away."""

    @property
    def steps(self) -> int:
        """The latest step seen (its number)."""
        return self.counter.steps

    def skip(self, events: Iterable[Event]) -> None:
        """Count `events` (earlier ones: a resumed session's history, steps not shown)."""
        for event in events:
            self.counter.see(event)

    def wants(self, event: Event) -> bool:
        """True when `event` is printed at this verbosity."""
        return self.all_events or event.kind in PROGRESS_KINDS

    def line(self, text: str, err: bool = False) -> None:
        """Print one (scrubbed) line and flush, so a pipe reader sees it at once. A reader that
        went away (`| head`) ends the printing to that stream, not the run (its log is kept)."""
        stream = self.err if err else self.out
        if stream in self._gone:
            return
        try:
            stream.write(terminal_safe(clean_text(self.scrub(text))) + "\n")
            stream.flush()
        except BrokenPipeError:
            self._gone.append(stream)
            silence(stream)

    def start(self, info: dict[str, Any]) -> None:
        """The session started."""

    def event(self, event: Event) -> None:
        """One event of the session."""

    def notice(self, text: str) -> None:
        """A side note for the person watching (retries, warnings): always on stderr."""
        self.line(f"workbench: {text}", err=True)

    def summary(self, summary: dict[str, Any]) -> None:
        """The run ended."""


class JsonPrinter(Printer):
    """One compact JSON object per line: `start`, `event`s, then one `summary`."""

    def _emit(self, obj: dict[str, Any]) -> None:
        self.line(strict_json({"v": JSONL_VERSION, **obj}))

    def start(self, info: dict[str, Any]) -> None:
        """Print the `start` line."""
        self._emit({"type": "start", **info})

    def event(self, event: Event) -> None:
        """Print an `event` line when the event is wanted."""
        self.counter.see(event)
        if self.wants(event):
            self._emit({"type": "event", "event": event.model_dump(mode="json")})

    def summary(self, summary: dict[str, Any]) -> None:
        """Print the `summary` line (always the last line)."""
        self._emit({"type": "summary", **summary})


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()) if text else ""


def describe_action(event: ActionEvent) -> str:
    """A one-line description of an action for people (its tool's)."""
    return REGISTRY.for_action(event.action).describe(event.action)


class HumanPrinter(Printer):
    """Readable progress on stdout; errors and notices on stderr. Results read as a person
    wants them (`Tool.human_text`: an edit's diff, images by their path), not as the model."""

    files: Path | None = None
    """The session's folder of kept images (beside its log), once the session started."""

    def start(self, info: dict[str, Any]) -> None:
        """Say which session, model and workspace."""
        if info.get("log"):
            log = Path(info["log"])
            self.files = log.with_name(f"{log.stem}.files")
        self.line(
            f"workbench session {info['session_id']}  model {info['model']}  "
            f"workspace {info['workspace']}"
        )
        if info.get("mcp_on_host"):
            names = ", ".join(info["mcp_on_host"])
            self.line(f"MCP servers on the host, not sandboxed (sandbox = false): {names}")
        if info.get("resumed_from"):
            self.line(
                f"continuing session {info['resumed_from']} "
                f"({info.get('resumed_events', 0)} earlier events) in a new sandbox"
            )

    def event(self, event: Event) -> None:
        """Print the event, when wanted, in a form a person can scan. Actions carry their step
        number (`[N]`), the one `workbench checkpoints|diff|rewind` take."""
        step = self.counter.see(event)
        if not self.wants(event):
            return
        if isinstance(event, MessageEvent):
            label = {"user": "user", "agent": "agent", "environment": "note"}[event.source]
            self.line(f"{label}: {event.text}")
        elif isinstance(event, ActionEvent):
            risk = f"  [{event.security_risk}]" if event.security_risk else ""
            if event.thought:
                self.line(_indent(event.thought, "  ~ "))
            number = "env" if step is None else step  # an imported trajectory's own setup
            self.line(f"[{number}] {describe_action(event)}{risk}")
        elif isinstance(event, ObservationEvent):
            obs = event.observation
            text = REGISTRY.for_observation(obs).human_text(obs, self.files)
            text = truncate_middle(text, _HUMAN_OBS_CHARS)
            if text:
                self.line(_indent(text))
        elif isinstance(event, AgentErrorEvent):
            self.line(f"  ! malformed call to {event.tool_name!r}: {event.content}")
        elif isinstance(event, ConfirmationRequestEvent):
            self.line(f"    ? needs confirmation (risk {event.risk}): {event.reason}")
        elif isinstance(event, ConfirmationDecisionEvent):
            verdict = "approved" if event.approved else "rejected"
            self.line(
                f"    -> {verdict} by {event.rule}" + (f": {event.reason}" if event.reason else "")
            )
        elif isinstance(event, ErrorEvent):
            self.line(f"error ({event.error_kind}): {event.message}", err=True)
        elif isinstance(event, StateChangedEvent):
            self.line(f"-- state {event.state}" + (f" ({event.reason})" if event.reason else ""))
        elif isinstance(event, CheckpointEvent):
            counts = f"+{len(event.added)} ~{len(event.changed)} -{len(event.deleted)}"
            skipped = f", {len(event.skipped)} not covered" if event.skipped else ""
            self.line(f"-- checkpoint [{step}] {counts}{skipped} ({event.commit[:12]})")
        elif isinstance(event, CondensationEvent | InstructionsEvent):
            self.line(f"-- {event_line(event)}")
        elif isinstance(event, LLMWaitEvent):
            until = f", gives up at {event.deadline_s:g} s" if event.deadline_s else ""
            self.line(
                f"-- waiting for {event.model}: no answer after {event.waited_s:g} s{until}",
                err=True,
            )
        elif isinstance(event, LLMRetryEvent):
            self.notice(retry_notice(event.error_kind, event.retry, event.wait_s, event.message))
        elif isinstance(event, LLMCallEvent):
            tokens = f"{event.prompt_tokens}+{event.completion_tokens} tokens"
            if event.estimated:
                tokens = f"~{tokens} (estimated: no usage reported)"
            self.line(
                f"-- llm {event.model}: {tokens}, "
                f"${event.cost:.4f}, {event.latency_ms:.0f} ms"
                + (f", {event.retries} retries" if event.retries else "")
            )

    def summary(self, summary: dict[str, Any]) -> None:
        """The closing line: status, model calls (the summary's `steps`, which `--max-iterations`
        limits; not the step numbers, which count actions), tokens, cost, session, exit code."""
        s = summary
        reason = f" ({s['reason']})" if s.get("reason") else ""
        session = f"session {s['session_id']}" if s.get("session_id") else "no session"
        failed = f", MCP servers not started: {', '.join(s.get('mcp_failed') or [])}"
        self.line(
            f"== {s['status']}{reason}: {s['steps']} model calls, {s['tokens']} tokens, "
            f"${s['cost']:.4f}, {session}, exit {s['exit_code']}"
            + (failed if s.get("mcp_failed") else "")
        )
