"""The shell pane: the running command, its live output, its state and exit code, and a line
to type into it (enter sends the text, ctrl+c interrupts).

Output chunks may arrive at any rate from any thread: `feed` only appends to a buffer, and a
50 ms timer moves the buffer into the view in one batch.
"""

from __future__ import annotations

import contextlib
import signal
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, Static

from workbench.display import strip_ansi
from workbench.tui.messages import ShellInputSubmitted
from workbench.tui.widgets.output_view import OutputView

if TYPE_CHECKING:
    from textual.app import ComposeResult

    from sandbox.protocol import (
        CmdOutputObservation,
        CommandFinished,
        ErrorObservation,
        OutputChunk,
    )
    from workbench.events import ActionEvent, ObservationEvent

FLUSH_INTERVAL_S = 0.05


class _Finished:
    __slots__ = ("exit_code",)

    def __init__(self, exit_code: int) -> None:
        self.exit_code = exit_code


class ShellPane(Vertical):
    """The live shell: header, output, input line."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Interrupt", priority=True),
        Binding("ctrl+d", "send_key('C-d')", "EOF", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._buffer: list[str | _Finished] = []
        self.command = ""
        self.state = "idle"
        self.exit_code: int | None = None
        self.cwd = ""
        """The shell's folder after the last command (from its result)."""
        self._streamed = False
        self._before: tuple[str, str, int | None] = ("", "idle", None)
        """The command, state and exit code before the last `command_started`."""
        self.border_title = "shell"
        self.last_line = ""
        """The newest line of streamed output (shown while the panes are folded)."""

    def compose(self) -> ComposeResult:
        """Header, output and the input line."""
        yield Static(self._header_text(), id="shell-header", markup=False)
        output = OutputView(id="shell-output")
        output.can_focus = False  # keys typed here go nowhere: Tab goes to the input line
        yield output
        yield Input(
            placeholder="type into the running command · enter sends · ctrl+c interrupts",
            id="shell-input",
            compact=True,
        )

    def on_mount(self) -> None:
        """Start the flush timer."""
        self.set_interval(FLUSH_INTERVAL_S, self.flush)

    @property
    def output(self) -> OutputView:
        """The output view."""
        return self.query_one(OutputView)

    def _header_text(self) -> str:
        if not self.command:
            return "no command yet"
        if self.exit_code == -1:  # returned to the agent before it ended
            status = "● still running · the agent has its output so far"
        elif self.state == "running":
            status = "● running"
        elif self.exit_code is None:
            status = self.state
        else:
            status = f"{'✓' if self.exit_code == 0 else '✗'} exit {self.exit_code}"
            if 128 < self.exit_code < 128 + 65:  # ended by a signal
                with contextlib.suppress(ValueError):
                    status += f" ({signal.Signals(self.exit_code - 128).name})"
        command = self.command.splitlines()[0] if self.command.strip() else self.command
        where = f"   in {self.cwd}" if self.cwd else ""
        return f"{status}   $ {command}{where}"

    def summary(self) -> str:
        """One line: the last command, how it ended, its newest output line while it runs
        (the folded panes' row)."""
        header = self._header_text()
        if self.cwd:  # the folder is in the conversation's title: room for the other panes
            header = header.removesuffix(f"   in {self.cwd}")
        if self.state == "running" and self.last_line:
            return f"» {self.last_line}   {header}"  # first: the command line can be long
        return header

    def reset(self) -> None:
        """A new session: no command, no output, nothing of the last session's shell."""
        self._buffer.clear()
        self.command, self.cwd, self._streamed = "", "", False
        self.output.clear()
        self.set_state("idle")

    def set_state(self, state: str, exit_code: int | None = None) -> None:
        """Show `state` ("running", "finished", "awaiting confirmation" ...) in the header."""
        self.state, self.exit_code = state, exit_code
        header = self.query_one("#shell-header", Static)
        header.update(self._header_text())
        header.set_class(state == "running", "-running")
        header.set_class(exit_code not in (None, 0, -1), "-failed")

    def command_started(self, command: str) -> None:
        """The agent started `command`."""
        self.flush()
        self._before = (self.command, self.state, self.exit_code)
        self.command = command
        self._streamed = False
        self.last_line = ""
        self.output.append_marked(f"$ {command}", "command")
        self.set_state("running")

    def feed(self, event: OutputChunk | CommandFinished) -> None:
        """Take a stream event (any thread); it is drawn at the next flush."""
        from sandbox.protocol import OutputChunk  # the protocol's models: after the first paint

        if isinstance(event, OutputChunk):
            self._buffer.append(event.data)
        else:
            self._buffer.append(_Finished(event.exit_code))

    def flush(self) -> None:
        """Move buffered output into the view (one batch)."""
        if not self._buffer:
            return
        pending, self._buffer = self._buffer, []
        text: list[str] = []
        for item in pending:
            if isinstance(item, _Finished):
                if text:
                    self.output.append("".join(text))
                    text.clear()
                self.set_state("finished", item.exit_code)
            else:
                text.append(item)
                self._streamed = True
                lines = [line for line in item.splitlines() if line.strip()]
                if lines:
                    self.last_line = strip_ansi(lines[-1]).strip()
        if text:
            self.output.append("".join(text))

    def show_action(self, event: ActionEvent) -> None:
        """The agent ran a shell action (the pane of `execute_bash`)."""
        from sandbox.protocol import CmdRunAction

        action = event.action
        if not isinstance(action, CmdRunAction):
            return
        if action.is_input:
            self.output.append_marked(f"⌨ {action.command}", "note")
        elif action.command:
            self.command_started(action.command)

    def show_observation(self, event: ObservationEvent) -> None:
        """A shell action's result."""
        from sandbox.protocol import CmdOutputObservation, ErrorObservation

        if isinstance(event.observation, CmdOutputObservation):
            self.observation(event.observation)
        elif isinstance(event.observation, ErrorObservation):
            self.not_run(event.observation)

    def not_run(self, obs: ErrorObservation) -> None:
        """The command was refused before it ran: say so; one still running stays shown
        (the sandbox answers "busy" while an earlier command runs)."""
        if obs.error_kind == "busy" and self._before[0]:
            self.command, state, exit_code = self._before
            still = self.command.splitlines()[0] if self.command.strip() else self.command
            self.output.append_marked(f"(not run: `{still}` is still running)", "note")
            self.set_state(state, exit_code)
        else:
            first = obs.content.splitlines()[0] if obs.content.strip() else obs.error_kind
            self.output.append_marked(f"(not run: {first})", "note")
            self.set_state("not run")

    def show_confirmation(self, approved: bool | None) -> None:
        """A shell action waits for confirmation (None), or was approved or rejected."""
        if approved is None:
            self.set_state("awaiting confirmation")
            return
        self.set_state("running" if approved else "rejected")
        if not approved:  # its "$ command" line is already in the output
            self.output.append_marked("(rejected: not run)", "note")

    def observation(self, obs: CmdOutputObservation) -> None:
        """The command's observation arrived; show its output if it was not streamed."""
        self.flush()
        if not self._streamed and obs.content:
            self.output.append(obs.content if obs.content.endswith("\n") else obs.content + "\n")
        # The observation's note is for the model ("[No new output for 10 s ...]"): the
        # header shows the state instead.
        self.cwd = obs.cwd or self.cwd
        running = obs.running or obs.exit_code == -1
        self.set_state("running" if running else "finished", obs.exit_code)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Send the typed line to the running process."""
        event.stop()
        self.post_message(ShellInputSubmitted(event.value))
        event.input.value = ""

    def action_interrupt(self) -> None:
        """Send C-c to the running process."""
        self.post_message(ShellInputSubmitted("C-c"))

    def action_send_key(self, key: str) -> None:
        """Send a control key (C-d, C-z) to the running process."""
        self.post_message(ShellInputSubmitted(key))
