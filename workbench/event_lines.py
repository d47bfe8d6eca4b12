"""One-line accounts of a condensation and of the project instructions read, as headless prints
them and the TUI titles their cells."""

from __future__ import annotations

from workbench.events import CondensationEvent, InstructionsEvent

_REASONS = {
    "threshold": "near the context window",
    "refused": "after the provider refused a request for its length",
    "manual": "asked for",
}


def condensation_line(event: CondensationEvent) -> str:
    """What a condensation did: tokens before and after, outputs elided, events summarised."""
    parts = [f"condensed history ({_REASONS[event.reason]}): {event.tokens_before} → "]
    parts.append(f"{event.tokens_after} tokens of {event.window}")
    if event.elided:
        parts.append(f", {len(event.elided)} outputs elided")
    if event.summary:
        parts.append(f", events {event.summarized_from}-{event.summarized_to} summarised")
    if event.note:
        parts.append(f" ({event.note})")
    return "".join(parts)


def instructions_line(event: InstructionsEvent) -> str:
    """Which project instructions went into the system prompt, and what was cut or skipped."""
    read = ", ".join(event.files)
    line = f"project instructions: {read} ({event.chars} characters)" if read else ""
    line = line or "project instructions: none read"
    return line + "".join(f"; {note}" for note in event.notes)


def event_line(event: CondensationEvent | InstructionsEvent) -> str:
    """`condensation_line` or `instructions_line`, as the event is."""
    if isinstance(event, CondensationEvent):
        return condensation_line(event)
    return instructions_line(event)
