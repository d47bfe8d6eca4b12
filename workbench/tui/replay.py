"""The replay player: a recorded session played into the usual panes, with no LLM and no
sandbox. Space plays and pauses, right/left step forward and back, +/- change the speed, g
jumps to a step; the bar above the status line says where the player is.

The position is a `workbench.replay.timeline.Timeline`; going forward feeds events as a live
session would get them, going back clears the panes and loads the events up to the new
position in one batch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Input, Static

from workbench.replay.recording import Recording
from workbench.replay.timeline import Timeline, pause_between
from workbench.tui import routing, saved_sessions
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput

if TYPE_CHECKING:
    from workbench.config.schema import Config

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
MIN_PAUSE_S = 0.05
"""Even events recorded at the same instant are shown one after the other."""


class ReplayBar(Static):
    """One line: playing or paused, the step and event shown, the speed, the keys."""


class ReplayApp(WorkbenchApp):
    """The workbench TUI playing a recording instead of running an agent."""

    CSS = """
    #replay-bar { dock: bottom; height: 1; background: $boost; }
    #replay-jump { dock: bottom; width: 40; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_play", "Play/pause", priority=True),
        Binding("right", "step_forward", "Step", priority=True),
        Binding("left", "step_back", "Back", priority=True),
        Binding("plus,equals_sign", "speed(1)", "Faster", priority=True),
        Binding("minus", "speed(-1)", "Slower", priority=True),
        Binding("g", "ask_step", "Jump", priority=True),
    ]

    def __init__(
        self,
        recording: Recording,
        first: int = 1,
        last: int | None = None,
        speed: float = 1.0,
        autoplay: bool = True,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.recording = recording
        self.timeline = Timeline(recording.events, first, last)
        self.speed = speed
        self.playing = False
        self.autoplay = autoplay
        self._timer: Timer | None = None

    def workspace_shown(self) -> str:
        """The recorded session's workspace, not the folder the player was started in."""
        return self.recording.workspace or super().workspace_shown()

    def compose(self) -> ComposeResult:
        """The usual panes, then the player's bar and its (hidden) step box."""
        yield from super().compose()
        yield Input(placeholder="jump to step (enter)", type="integer", id="replay-jump")
        yield ReplayBar(id="replay-bar", markup=False)

    def on_mount(self) -> None:
        """Hide the input box (nothing is sent while watching), note what was skipped, play."""
        prompt = self.query_one(PromptInput)
        prompt.display = False
        prompt.disabled = True  # a focused input box would take the player's keys
        self.query_one("#replay-jump", Input).display = False
        # after the app's own on_mount (it runs after this one), which focuses the input box
        self.call_after_refresh(self.query_one(ConversationView).focus)
        self.title = f"replay {self.recording.session_id}"
        if self.recording.notes:
            self.notify(
                "\n".join(self.recording.notes), title="Skipped", severity="warning", markup=False
            )
        self._show_bar()
        if self.autoplay:
            self.action_toggle_play()

    # ------------------------------------------------------------------ moving

    def _feed(self, events: list[Any]) -> None:
        for event in events:
            routing.feed_event(self, event, live=False)

    def _reload(self) -> None:
        """Show exactly the events before the timeline's position (after a move back)."""
        saved_sessions.new_session(self)
        routing.load_events(self, self.timeline.events[: self.timeline.position])

    def _tick(self) -> None:
        self._timer = None
        if not self.playing:
            return
        upcoming = self.timeline.next_event()
        if upcoming is None:
            self._set_playing(False)
            return
        event, _ = upcoming
        self.timeline.position += 1
        self._feed([event])
        self._schedule()
        self._show_bar()

    def _schedule(self) -> None:
        upcoming = self.timeline.next_event()
        if upcoming is None or not self.playing:
            if upcoming is None:
                self._set_playing(False)
            return
        event, gap = upcoming
        pause = pause_between(event.timestamp - gap, event.timestamp, self.speed)
        self._timer = self.set_timer(max(pause, MIN_PAUSE_S), self._tick)

    def _set_playing(self, playing: bool, show: bool = True) -> None:
        self.playing = playing
        if not playing and self._timer is not None:
            self._timer.stop()
            self._timer = None
        if show:
            self._show_bar()

    def on_unmount(self) -> None:
        """No event is fed into panes that are going away."""
        self._set_playing(False, show=False)

    def action_focus_prompt(self) -> None:
        """Escape: back to the conversation (there is no input box while watching)."""
        self.screen.minimize()
        self.query_one("#replay-jump", Input).display = False
        self.query_one(ConversationView).focus()

    def _show_bar(self) -> None:
        line = self.timeline
        state = "▶ playing" if self.playing else ("■ end" if line.at_end else "❚❚ paused")
        self.query_one(ReplayBar).update(
            f"{state}  step {line.step}/{line.last_step}  event {line.position}/"
            f"{len(line.events)}  speed {self.speed:g}x   space play/pause · ←/→ step · +/- speed "
            "· g jump"
        )

    # ------------------------------------------------------------------ keys

    def action_toggle_play(self) -> None:
        """Play from here, or pause."""
        if self.playing:
            self._set_playing(False)
            return
        if self.timeline.at_end:
            self.timeline.position = 0  # play again from the start
            self._reload()
        self._set_playing(True)
        self._schedule()

    def action_step_forward(self) -> None:
        """Pause and show the rest of the next step."""
        self._set_playing(False)
        self._feed(self.timeline.forward())
        self._show_bar()

    def action_step_back(self) -> None:
        """Pause and go back to the end of the previous step."""
        self._set_playing(False)
        self.timeline.back()
        self._reload()
        self._show_bar()

    def action_speed(self, direction: int) -> None:
        """The next speed up or down."""
        faster = [s for s in SPEEDS if s > self.speed]
        slower = [s for s in SPEEDS if s < self.speed]
        if direction > 0 and faster:
            self.speed = faster[0]
        elif direction < 0 and slower:
            self.speed = slower[-1]
        self._show_bar()

    def action_ask_step(self) -> None:
        """Open the step box."""
        box = self.query_one("#replay-jump", Input)
        box.display = True
        box.value = ""
        box.focus()

    def on_input_submitted(self, message: Input.Submitted) -> None:
        """Jump to the step typed in the step box."""
        if message.input.id != "replay-jump":
            return
        message.stop()
        message.input.display = False
        self.query_one(ConversationView).focus()
        if message.value.strip().lstrip("-").isdigit():
            self.jump_to(int(message.value))

    def jump_to(self, step: int) -> None:
        """Pause and show everything up to the end of `step`."""
        self._set_playing(False)
        before = self.timeline.position
        after = self.timeline.jump(step)
        if after >= before:
            self._feed(self.timeline.events[before:after])
        else:
            self._reload()
        self._show_bar()


def create_player(
    recording: Recording,
    config: Config | None = None,
    first: int = 1,
    last: int | None = None,
    speed: float = 1.0,
    autoplay: bool = True,
    **options: Any,
) -> ReplayApp:
    """The player as the CLI runs it; tests pass `autoplay=False`, a fixed clock and their
    own themes folder."""
    return ReplayApp(recording, first, last, speed, autoplay, config=config, **options)


def run_player(
    recording: Recording, config: Config, first: int, last: int | None, speed: float
) -> int:
    """Open the player (`workbench replay SESSION` without --headless)."""
    import os
    import sys

    from workbench.paths import themes_dir
    from workbench.tui import terminal

    image_mode = terminal.image_mode(os.environ, sys.stdout.isatty())  # before Textual starts
    app = create_player(
        recording, config, first, last, speed, user_themes=themes_dir(), image_mode=image_mode
    )
    code = app.run()
    return code or 0
