"""The status bar: model, agent state, step/max, tokens, cost, LLM and sandbox state, elapsed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget


@dataclass
class StatusData:
    """Everything the status bar shows."""

    model: str = ""
    state: str = "idle"
    steps: int = 0
    """LLM calls in the whole session."""
    run_steps: int = 0
    """LLM calls in the current run: what `max_steps` limits (a new message starts a run)."""
    max_steps: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    llm: str = "not loaded"
    sandbox: str = "stopped"
    started: float | None = None
    """When the running task started (clock seconds), for the elapsed time."""
    ended: float | None = None
    """When it finished, stopped or failed: the elapsed time stands still from then on."""
    mark: str = ""
    """Shown first, highlighted: e.g. "read-only" while a saved session is only viewed."""
    pending: str = ""
    """Shown instead of a "running" state: what was asked and is on its way ("pausing…")."""


_SHORT_STATES = {"awaiting confirmation": "confirm?", "awaiting user": "your turn"}
_SHORT_PARTS = {
    "ready": "✓",
    "retrying": "↻",
    "failing": "✗",
    "not loaded": "off",
    "stopped": "off",
    "loading…": "…",
    "starting…": "…",
}


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


def _elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    return (
        f"{hours}:{rest // 60:02d}:{rest % 60:02d}"
        if hours
        else f"{rest // 60:02d}:{rest % 60:02d}"
    )


class StatusBar(Widget):
    """One line of session facts, refreshed every second."""

    DEFAULT_CSS = """
    StatusBar { height: 1; }
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, *, id: str | None = None
    ) -> None:
        super().__init__(id=id)
        self.data = StatusData()
        self.clock = clock

    def on_mount(self) -> None:
        """Tick the elapsed time."""
        self.set_interval(1.0, self.refresh)

    def set(self, **changes: object) -> None:
        """Change some fields and redraw."""
        for key, value in changes.items():
            setattr(self.data, key, value)
        self.refresh()

    def render(self) -> Text:
        """The line; on a narrow screen a compact form, and only then is the end cut."""
        parts = self._parts(compact=False)
        if sum(len(part) + 1 for part, _ in parts) > self.size.width:
            parts = self._parts(compact=True)
        text = Text(no_wrap=True, overflow="ellipsis", end="")
        for index, (part, style) in enumerate(parts):
            if index:
                text.append("│", style="dim")
            text.append(part, style=style)
        return text

    def _parts(self, compact: bool) -> list[tuple[str, str]]:
        d = self.data
        step = f"{d.run_steps}/{d.max_steps}" if d.max_steps else str(d.steps)
        tokens = _tokens(d.prompt_tokens + d.completion_tokens)
        now = d.ended if d.ended is not None else self.clock()
        elapsed = _elapsed(now - d.started) if d.started is not None else "--:--"
        state = d.pending if d.pending and d.state == "running" else d.state.replace("_", " ")
        state_style = "reverse" if d.state == "awaiting_confirmation" else ""
        mark = [(f" {d.mark.upper()} ", "bold reverse")] if d.mark else []
        # Without a model the LLM indicator says so (the library loading fine is no news then).
        llm_part = (f" llm {d.llm} ", "") if d.model else (" llm: no model ", "bold reverse")
        if not compact:
            return [
                *mark,
                *([(f" {d.model} ", "bold")] if d.model else []),
                (f" {state} ", state_style),
                (f" step {step} ", ""),
                (f" {tokens} tok ", ""),
                (f" ${d.cost:.4f} ", ""),
                llm_part,
                (f" sandbox {d.sandbox} ", ""),
                (f" {elapsed} ", ""),
            ]
        model = d.model.rsplit("/", 1)[-1]
        if len(model) > 18:
            model = model[:17] + "…"
        state = _SHORT_STATES.get(state, state)
        llm = _SHORT_PARTS.get(d.llm, d.llm)
        sandbox = _SHORT_PARTS.get(d.sandbox, d.sandbox)
        return [
            *mark,
            *([(f" {model} ", "bold")] if model else []),
            (f" {state} ", state_style),
            (f" {step} ", ""),
            (f" {tokens} tok ", ""),
            (f" ${d.cost:.2f} ", ""),
            (f" {elapsed} ", ""),
            (f" llm {llm} ", "") if model else llm_part,
            (f" sbx {sandbox} ", ""),
        ]
