"""The re-run view: a recording's actions run again in a fresh sandbox, each step shown as the
recorded result beside the new one (both as compared, masked), differing steps marked.

`workbench replay SESSION --rerun` without `--headless`/`--json` opens it. An action that needs
confirmation is asked on the same confirmation panel as in a live session (y approves, n
rejects, r rejects with a reason; "always allow" approves this once: a re-run saves no rule).
`n` jumps to the next differing step, `q` quits; the exit code is the headless re-run's (0 all
matched, 11 one differs, 8 the sandbox failed).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Footer, Static

from sandbox.runtimes.base import SandboxError
from workbench import exit_codes
from workbench.events import ActionEvent, ConfirmationRequestEvent
from workbench.replay.recording import Recording
from workbench.replay.rerun import Rerunner, StepResult
from workbench.security.policy import Decision
from workbench.tools.base import ToolContext
from workbench.tools.registry import REGISTRY
from workbench.tui.messages import ConfirmationAnswered
from workbench.tui.widgets.confirm import ConfirmPanel

if TYPE_CHECKING:
    from workbench.config.schema import Config


class StepBlock(Vertical):
    """One re-run step: its action as the title, recorded and new results side by side."""

    def __init__(self, result: StepResult) -> None:
        classes = "-differs" if result.differs else ("-skipped" if result.skipped else "-same")
        super().__init__(classes=classes)
        self.result = result
        action = result.action.action
        mark = "✗" if result.differs else ("-" if result.skipped else "=")
        described = REGISTRY.for_action(action).describe(action)
        self.border_title = Text(f"{mark} [{result.step}] {described}")  # a title, not markup

    def compose(self) -> ComposeResult:
        """The two texts, or why the step was not re-run."""
        if self.result.skipped:
            yield Static(f"not re-run: {self.result.skipped}", markup=False)
            return
        with Horizontal():
            yield Static(self.result.recorded_text, classes="recorded", markup=False)
            yield Static(self.result.new_text, classes="new", markup=False)
        if self.result.why:
            yield Static(f"why: {self.result.why}", classes="why", markup=False)


class RerunView(App[int]):
    """Runs the re-run in a worker and shows each step as it comes."""

    CSS = """
    #rerun-status { height: auto; background: $boost; }
    StepBlock { height: auto; border: round $secondary; margin: 0 1; }
    StepBlock.-differs { border: round $error; }
    StepBlock.-skipped { border: round $panel; color: $text-muted; }
    StepBlock Horizontal { height: auto; }
    StepBlock Static.recorded, StepBlock Static.new { width: 1fr; padding: 0 1; }
    StepBlock Static.recorded { border-right: vkey $panel; }
    #confirm { display: none; height: auto; max-height: 12; border: heavy $warning;
               background: $surface; padding: 0 1; }
    #confirm.-shown { display: block; }
    #confirm-action { height: auto; max-height: 8; }
    #confirm-keys { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_difference", "Next difference"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self, recording: Recording, config: Config, first: int = 1, last: int | None = None
    ) -> None:
        super().__init__()
        self.recording = recording
        self.config = config
        self.first = first
        self.last = last
        self.results: list[StepResult] = []
        self.code: int | None = None
        """The exit code once the re-run ended."""
        self._shown_difference = -1
        self._answers: dict[int, asyncio.Future[tuple[str, str]]] = {}

    def compose(self) -> ComposeResult:
        """Status line, the steps, the footer."""
        yield Static("starting the sandbox ...", id="rerun-status", markup=False)
        yield VerticalScroll(id="rerun-steps")
        yield ConfirmPanel(id="confirm")
        yield Footer()

    def on_mount(self) -> None:
        """Start the re-run."""
        self.title = f"re-run {self.recording.session_id}"
        self.run_worker(self._rerun(), exclusive=True)

    async def _rerun(self) -> None:
        from workbench.session.opening import make_runtime, start_runtime

        status = self.query_one("#rerun-status", Static)
        try:
            runtime = await start_runtime(make_runtime(self.config))
        except SandboxError as exc:
            self.code = exit_codes.SANDBOX_ERROR
            status.update(f"the sandbox could not start: {exc}")
            return
        try:
            info = await runtime.info()
            status.update(f"re-running in {info.workspace} (left: recorded, right: re-run)")
            context = ToolContext(runtime, info.workspace)
            rerunner = Rerunner(self.recording, self.config, context, confirm=self._ask)
            async for result in rerunner.run(self.first, self.last):
                if result.reported:
                    self.results.append(result)
                    await self.query_one("#rerun-steps").mount(StepBlock(result))
        except SandboxError as exc:
            self.code = exit_codes.SANDBOX_ERROR
            status.update(f"the sandbox failed during the re-run: {exc}")
            return
        finally:
            await runtime.close()
        differing = [r for r in self.results if r.differs]
        self.code = exit_codes.REPLAY_DIFFERS if differing or rerunner.stopped else 0
        outcome = (
            f"{len(differing)} differ, the first at step {differing[0].step} (n: next)"
            if differing
            else "all as recorded"
        )
        status.update(f"done in {info.workspace}: {outcome}; exit {self.code} (q quits)")

    async def _ask(self, action: ActionEvent, request: ConfirmationRequestEvent) -> Decision:
        """Ask the person at the screen about `action`, on the confirmation panel."""
        answer: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        self._answers[request.cause] = answer
        panel = self.query_one(ConfirmPanel)
        panel.ask(action, request)
        try:
            said, reason = await answer
        finally:
            self._answers.pop(request.cause, None)
            panel.hide()
        if said == "reject":
            told = f"; the person said: {reason}" if reason else ""
            return Decision("reject", "user", f"rejected in the re-run{told}")
        return Decision("approve", "user", "approved in the re-run")

    def on_confirmation_answered(self, message: ConfirmationAnswered) -> None:
        """The panel's answer goes to the step waiting for it."""
        waiting = self._answers.get(message.cause)
        if waiting is not None and not waiting.done():
            waiting.set_result((message.answer, message.reason))

    def action_next_difference(self) -> None:
        """Scroll to the next differing step."""
        blocks = [b for b in self.query(StepBlock) if b.result.differs]
        if not blocks:
            return
        self._shown_difference = (self._shown_difference + 1) % len(blocks)
        self.query_one("#rerun-steps", VerticalScroll).scroll_to_widget(
            blocks[self._shown_difference], top=True
        )

    async def action_quit(self) -> None:
        """Quit with the re-run's exit code (130 when it had not ended)."""
        self.exit(exit_codes.INTERRUPTED if self.code is None else self.code)


def run_rerun_view(
    recording: Recording, config: Config, first: int = 1, last: int | None = None
) -> int:
    """Open the re-run view; returns its exit code."""
    code = RerunView(recording, config, first, last).run()
    return exit_codes.INTERRUPTED if code is None else code
