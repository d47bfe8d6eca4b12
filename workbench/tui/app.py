"""The Textual app: layout, key bindings and actions, and routing of session events to panes.

`create_app` builds the app for the CLI, the tests and the benchmark alike; `run_tui` runs it.
Events reach the app as `EventArrived` messages (from a `Backend`, see `backend.py`, or fed by
hand in tests); live shell output goes straight into the shell pane's buffer. The palette's
entries are in `commands.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.actions import parse as parse_action
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.css.query import NoMatches
from textual.events import DescendantFocus, Resize
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, TabbedContent, TabPane

from sandbox.protocol import CommandFinished, ErrorObservation, OutputChunk
from workbench.events import (
    ENDED_STATES,
    ActionEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    LLMCallEvent,
    LLMRetryEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
    ToolResultObservation,
)
from workbench.tools.registry import REGISTRY
from workbench.tui import themes as theme_files
from workbench.tui.backend import Backend
from workbench.tui.commands import palette_entries
from workbench.tui.messages import (
    BranchRequested,
    ConfirmationAnswered,
    EventArrived,
    MessageQueued,
    ModelCallChanged,
    NetworkAsked,
    NetworkAskWithdrawn,
    ProgressChanged,
    PromptSubmitted,
    QueuedMessagesReturned,
    RewindRequested,
    ShellInputSubmitted,
    SlashEntered,
    SlashMatchesChanged,
    StrayKey,
    TaskWaiting,
)
from workbench.tui.start_flow import ask_then_start
from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.panes import ToolPane
from workbench.tui.widgets.prompt import PLACEHOLDER, PromptInput
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.slash_popup import SlashPopup
from workbench.tui.widgets.status import StatusBar
from workbench.tui.widgets.tools_summary import ToolsSummary, fold_tools

if TYPE_CHECKING:
    from workbench.config.schema import Config
    from workbench.session.start_checks import StartQuestion
    from workbench.tui.screens.help import KeyGroup

NARROW_WIDTH = 110
"""Below this many columns the tool panes sit under the conversation instead of beside it."""
BACKEND_START_DELAY_S = 0.25
"""The backend starts this long after the first paint, once the footer has composed its keys
(it does so a few times as focus and bindings settle)."""
_RUN_STARTS_FROM = frozenset({"idle", *ENDED_STATES})
"""A `running` state after one of these starts a new run (its steps counted from 0)."""
HANGUP_CLOSE_S = 10.0
"""After SIGHUP or SIGTERM, at most this long to close the sandbox before the app exits."""
HANGUP_EXIT_S = 2.0
"""After that, at most this long for Textual to end before the process exits anyway."""
RECENT_EVENTS = 300
"""A loaded session fills the tool panes from its last this-many events (all are in the
conversation)."""
ESCAPE_TWICE_S = 0.8
"""Esc pressed again within this many seconds interrupts the agent."""
BUSY_STATES = frozenset({"running", "awaiting_confirmation", "paused"})
"""The agent's states in which it is in the middle of a task."""


@dataclass(frozen=True)
class SavedView:
    """A saved session on screen that no agent continues yet: read-only until a message is
    typed, which continues it (from event `upto` on, for a branch) as a new linked session."""

    path: Path
    session_id: str
    upto: int | None = None
    """None: the whole session (resume); else the id of the last event kept (branch)."""


class WorkbenchApp(App[int]):
    """The workbench TUI."""

    CSS_PATH = "app.tcss"
    TITLE = "workbench"
    ENABLE_COMMAND_PALETTE = True
    PANES: ClassVar[tuple[str, ...]] = ("shell", "jupyter", "browser")
    """The tool panes, by id (each in its own tab)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f2", "toggle_tools", "Tools", tooltip="Show or hide the tool panes"),
        Binding("f3", "show_pane('shell')", "Shell", show=False, tooltip="The shell pane"),
        Binding("f4", "show_pane('jupyter')", "Jupyter", show=False, tooltip="The Jupyter pane"),
        Binding("f5", "show_pane('browser')", "Browser", show=False, tooltip="The browser pane"),
        Binding(
            "f6",
            "maximize_pane",
            "Max",
            show=False,
            priority=True,  # the input box (a TextArea, focused by default) binds F6/F7 itself
            tooltip="Maximize the focused pane (again: restore)",
        ),
        Binding(
            "f7",
            "resize_tools(-5)",
            "Narrower",
            show=False,
            priority=True,
            tooltip="Tool panes narrower",
        ),
        Binding(
            "f8", "resize_tools(5)", "Wider", show=False, priority=True, tooltip="Tool panes wider"
        ),
        Binding("f9", "toggle_pause", "Pause", tooltip="Pause the agent after its step, or resume"),
        Binding("f10", "stop", "Stop", tooltip="Stop the agent"),
        Binding("ctrl+n", "new_session", "New", show=False, tooltip="New session"),
        Binding("ctrl+o", "open_session", "Open", show=False, tooltip="Open a saved session"),
        Binding(
            "ctrl+s",
            "settings",
            "Settings",
            tooltip="Settings: model, confirmation, streaming, theme, step limit",
        ),
        Binding("ctrl+t", "change_theme", "Theme", show=False, tooltip="Try another theme"),
        Binding(
            "ctrl+r",
            "rules",
            "Rules",
            show=False,
            tooltip="Confirmation rules in effect; remove one",
        ),
        Binding("f1,question_mark", "help", "Help", tooltip="This help (? outside the input box)"),
        Binding(
            "escape",
            "escape",
            "Close",
            show=False,
            tooltip="Close what is open, back to the input box; twice quickly: interrupt the agent",
        ),
        Binding(
            "ctrl+q",
            "request_quit",
            "Quit",
            show=False,
            priority=True,
            tooltip="Quit (asks first while the agent works)",
        ),
    ]

    def __init__(
        self,
        config: Config | None = None,
        backend: Backend | None = None,
        clock: Callable[[], float] = time.monotonic,
        image_mode: str = "halfcell",
        user_themes: Path | None = None,
        config_path: Path | None = None,
    ) -> None:
        super().__init__()
        self.config = config
        self.backend = backend
        self.clock = clock
        self.image_mode = image_mode
        self.config_path = config_path
        self.actions: dict[int, ActionEvent] = {}
        self.tools_size = 50
        self._tools_layout: tuple[bool, int, bool, bool] | None = None
        self.tools_hidden = False
        """F2 hid the tool panes (and their folded row)."""
        self.paused = False
        self.initial_task = ""
        """A task to start as soon as the app is up (`workbench -t TASK` without --headless)."""
        self.initial_session: Path | None = None
        """A saved session to show as the app starts (`--resume ID`, `--last`)."""
        self.start_questions: list[StartQuestion] = []
        """Asked before the sandbox starts (`workbench.session.start_checks`); a no quits."""
        self._signals: list[signal.Signals] = []
        self._closing = False
        self.saved: SavedView | None = None
        """The saved session shown read-only (Ctrl-O, `--resume`) or a branch not yet begun."""
        self._last_escape = -1e9  # time.monotonic() of the last esc, for esc esc
        self._held: list[ProgressChanged] = []
        self._ended_logs: set[Path] = set()
        """Logs of sessions ended here (ctrl+n): their late events are not shown."""
        """Start-up news that came while a question was on screen: shown once it closes."""
        folders = [theme_files.builtin_themes_dir()]
        if user_themes is not None:
            folders.append(user_themes)
        self.loaded_themes = theme_files.load_themes(folders)
        for theme in self.loaded_themes.themes.values():
            self.register_theme(theme)
        wanted = config.ui.theme if config is not None else theme_files.DEFAULT_THEME
        self._theme_problem = ""
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            self._theme_problem = f"Theme {wanted!r} not found; using {theme_files.DEFAULT_THEME}."
            if theme_files.DEFAULT_THEME in self.available_themes:
                self.theme = theme_files.DEFAULT_THEME

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Workbench's colour variables, for themes (Textual's own) that do not set them."""
        return dict(theme_files.APP_VARIABLES)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        """Conversation and tool panes, confirmation panel, input, status, footer."""
        with Container(id="main"):
            yield ConversationView(id="conversation", clock=self.clock)
            with TabbedContent(id="tools", initial="tab-shell"):
                with TabPane("Shell", id="tab-shell"):
                    yield ShellPane(id="shell")
                with TabPane("Jupyter", id="tab-jupyter"):
                    yield JupyterPane(id="jupyter")
                with TabPane("Browser", id="tab-browser"):
                    yield BrowserPane(self.image_mode, id="browser")
            yield ToolsSummary(self._tools_summary, self.action_show_pane, id="tools-summary")
        yield ConfirmPanel(id="confirm")
        yield SlashPopup(id="slash-popup")
        yield PromptInput(id="prompt")
        yield StatusBar(self.clock, id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Apply the theme's code style, report theme problems, start the background work."""
        problems = list(self.loaded_themes.errors)
        if self._theme_problem:
            problems.append(self._theme_problem)
        if problems:
            self.notify(
                "\n".join(problems),
                title="Theme problems",
                severity="warning",
                timeout=10,
                markup=False,
            )
        self.theme_changed_signal.subscribe(self, lambda _theme: self._apply_code_style())
        self.screen_change_signal.subscribe(self, self._show_held)
        self._apply_code_style()
        status = self.query_one(StatusBar)
        if self.config is not None:
            status.set(model=self.config.llm.model, max_steps=self.config.agent.max_iterations)
            self.query_one(ConversationView).set_welcome(
                self._workspace_shown(), self.config.llm.model
            )
        if self.backend is not None:
            self.backend.attach(self)
            self.query_one(JupyterPane).loader = self.load_artifact
            self.query_one(BrowserPane).loader = self.load_artifact
            # After the first frames: litellm's import (a thread holding the GIL for long
            # stretches) and the sandbox's start would otherwise hold them up.
            # Not before the start questions are answered (a home folder, another folder).
            self.call_after_refresh(
                ask_then_start,
                self,
                self.start_questions,
                lambda: self.set_timer(BACKEND_START_DELAY_S, self._start_backend),
                self.config,
            )
        if self.initial_session is not None:
            self.open_session_file(self.initial_session)
        if self.backend is not None and self.initial_task:
            self.post_message(PromptSubmitted(self.initial_task))
        self.query_one(PromptInput).focus()
        self._watch_hangup()
        if self.config is not None:
            from workbench.config.places import workspace_of

            self._diffs_from(workspace_of(self.config))

    def _diffs_from(self, workspace: Path) -> None:
        """The conversation reads its rows' diffs from the checkpoints of `workspace`."""
        from workbench.checkpoints.rewind_here import step_diff

        self.query_one(ConversationView).diff_of = partial(step_diff, workspace)

    def _watch_hangup(self) -> None:
        """A closed terminal (SIGHUP) or a SIGTERM closes the sandbox before the app ends:
        by default either kills the app at once, leaving the sandbox's folder and log."""
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGHUP, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self._hung_up)
                self._signals.append(sig)

    def on_unmount(self) -> None:
        """Give the signals back (tests run many apps in one process)."""
        loop = asyncio.get_running_loop()
        for sig in self._signals:
            loop.remove_signal_handler(sig)
        self._signals.clear()

    def _hung_up(self) -> None:
        if not self._closing:
            self._closing = True
            self.run_worker(self._close_and_exit(), group="hangup")

    async def _close_and_exit(self) -> None:
        from workbench.exit_codes import INTERRUPTED

        if self.backend is not None:
            with contextlib.suppress(Exception):  # whatever happens, the app must end
                await asyncio.wait_for(self.backend.close(), HANGUP_CLOSE_S)
        # With the terminal gone, Textual's input thread may never stop (reads fail at once,
        # forever): once the sandbox is closed, nothing is left to save, so end regardless.
        import os
        import threading

        watchdog = threading.Timer(HANGUP_EXIT_S, os._exit, [INTERRUPTED])
        watchdog.daemon = True
        watchdog.start()
        self.exit(INTERRUPTED)

    def _workspace_shown(self) -> str:
        """The workspace's path, with ~ for the home folder."""
        from workbench.config.places import workspace_of

        assert self.config is not None
        workspace = workspace_of(self.config)
        home = Path.home()
        if workspace == home or home in workspace.parents:
            return "~/" + str(workspace.relative_to(home)) if workspace != home else "~"
        return str(workspace)

    async def load_artifact(self, name: str) -> bytes:
        """An image by name: from the files folder of the saved session shown, else the
        backend's (the open session's folder, then the sandbox)."""
        saved = self.saved
        if saved is not None:
            stored = saved.path.with_name(f"{saved.path.stem}.files") / Path(name).name
            if stored.is_file():
                return stored.read_bytes()
        if self.backend is None:
            raise FileNotFoundError(name)
        return await self.backend.load_artifact(name)

    async def _draw_result_image(self, keys: tuple[str, ...], name: str) -> None:
        data = await self.load_artifact(name)
        self.query_one(ConversationView).show_image(keys, data)

    def _start_backend(self) -> None:
        if self.backend is not None:
            self._background(self.backend.start(), "backend")

    def _apply_code_style(self) -> None:
        style = self.loaded_themes.pygments.get(
            self.theme, theme_files.DEFAULT_PYGMENTS[self.current_theme.dark]
        )
        self.code_style = style
        for cells in (self.query_one(ConversationView), self.query_one(JupyterPane)):
            cells.set_pygments_style(style)
        self.query_one(ConfirmPanel).pygments = style

    def on_resize(self, event: Resize) -> None:
        """Stack the panes on narrow terminals; fold them on small ones."""
        # This handler runs before Textual's own, so `self.size` is still the old size here.
        self._layout_tools(event.size.width, event.size.height)

    def _layout_tools(
        self, width: int | None = None, height: int | None = None, opening: bool = False
    ) -> None:
        main, tools = self.query_one("#main"), self.query_one("#tools")
        width = self.size.width if width is None else width
        height = self.size.height if height is None else height
        narrow = width < NARROW_WIDTH
        main.set_class(narrow, "-narrow")
        # Small terminals: the panes fold to one row until one has the focus (issue 23.12).
        folded = fold_tools(
            width, height, self.tools_size, opening or self._tools_focused(), NARROW_WIDTH
        )
        layout = (narrow, self.tools_size, folded, self.tools_hidden)
        if layout == self._tools_layout:  # a resize that changes nothing costs no restyle
            return
        self._tools_layout = layout
        tools.display = not self.tools_hidden and not folded
        summary = self.query_one(ToolsSummary)
        summary.display = not self.tools_hidden and folded
        summary.follow()
        if narrow:
            tools.styles.width, tools.styles.height = "1fr", f"{self.tools_size}%"
        else:
            tools.styles.width, tools.styles.height = f"{self.tools_size}%", "1fr"

    def _tools_focused(self) -> bool:
        """Whether the focus is in a tool pane (on the main screen, under any dialog)."""
        tools = self.query_one("#tools")
        focused = tools.screen.focused
        return focused is not None and (focused is tools or tools in focused.ancestors)

    def _tools_summary(self) -> tuple[str, dict[str, str]]:
        """The pane shown first and what each pane shows now, for the folded panes' row."""
        active = self.query_one("#tools", TabbedContent).active.removeprefix("tab-") or "shell"
        parts = {
            "shell": self.query_one(ShellPane).summary(),
            "jupyter": self.query_one(JupyterPane).summary(),
            "browser": self.query_one(BrowserPane).summary(),
        }
        return active, parts

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """The focus moved: open the folded panes when it enters one, fold them when it leaves."""
        with contextlib.suppress(NoMatches):  # the panes are not composed yet
            self._layout_tools()

    # ------------------------------------------------------------------ events in

    def feed_event(self, event: Event, live: bool = True) -> None:
        """Show one event (call from the app's thread; other threads post `EventArrived`)."""
        self._route(event, live)
        self.query_one(ConversationView).add_events([event], live=live)

    def load_events(self, events: Iterable[Event]) -> None:
        """Show a recorded session: the conversation in one batch (all collapsed), the panes
        with the recent past, the status bar with the totals."""
        batch = list(events)
        status = self.query_one(StatusBar)
        steps, prompt, completion, cost, state = 0, 0, 0, 0.0, status.data.state
        run_steps = status.data.run_steps
        for event in batch:
            if isinstance(event, ActionEvent):
                self.actions[event.id] = event
            elif isinstance(event, LLMCallEvent):  # a step, as `agent.max_iterations` counts
                steps += 1
                run_steps += 1
                prompt += event.prompt_tokens
                completion += event.completion_tokens
                cost += event.cost
            elif isinstance(event, StateChangedEvent):
                if event.state == "running" and state in _RUN_STARTS_FROM:
                    run_steps = 0
                state = event.state
        for event in batch[-RECENT_EVENTS:]:
            self._route(event, live=False, account=False)
        status.set(
            steps=status.data.steps + steps,
            run_steps=run_steps,
            state=state,
            cost=status.data.cost + cost,
            prompt_tokens=status.data.prompt_tokens + prompt,
            completion_tokens=status.data.completion_tokens + completion,
        )
        self.query_one(ConversationView).add_events(batch, live=False)

    def feed_output(self, event: OutputChunk | CommandFinished) -> None:
        """Live output of the shell or a Jupyter cell (any thread): buffered, drawn by the
        pane's timer."""
        if isinstance(event, OutputChunk) and event.source == "jupyter":
            self.query_one(JupyterPane).feed(event.data)
        else:
            self.query_one(ShellPane).feed(event)

    def on_event_arrived(self, message: EventArrived) -> None:
        """An event from the controller (one of a session ended since is dropped)."""
        if message.log is not None and message.log in self._ended_logs:
            return
        self.feed_event(message.event, message.live)

    def on_model_call_changed(self, message: ModelCallChanged) -> None:
        """A model call started, streamed, was retried or ended: the conversation shows it."""
        if message.log is not None and message.log in self._ended_logs:
            return
        self.query_one(ConversationView).show_activity(message.activity)

    def _route(self, event: Event, live: bool, account: bool = True) -> None:
        status = self.query_one(StatusBar)
        if isinstance(event, ActionEvent):
            self.actions[event.id] = event
            pane = self._pane_of(event)
            if pane is not None:
                pane.show_action(event)
                self._reveal(REGISTRY.for_action(event.action).pane or "", live)
        elif isinstance(event, ObservationEvent):
            pane = self._tool_pane(REGISTRY.for_observation(event.observation).pane)
            if pane is None and isinstance(event.observation, ErrorObservation):
                pane = self._pane_of(self.actions.get(event.cause or -1))  # e.g. "busy"
            if pane is not None:
                pane.show_observation(event)
            observation = event.observation
            if isinstance(observation, ToolResultObservation) and observation.images:
                # An MCP tool's picture, drawn in its result's cell once fetched.
                work = self._draw_result_image(
                    (f"e{event.id}", f"e{event.cause}"), observation.images[0]
                )
                self._background(work, "image")
        elif isinstance(event, ConfirmationRequestEvent):
            pane = self._pane_of(self.actions.get(event.cause))
            if pane is not None:
                pane.show_confirmation(None)
            if live:
                typing = self.query_one(PromptInput).is_typing()
                panel = self.query_one(ConfirmPanel)
                panel.ask(self.actions.get(event.cause), event, take_focus=not typing)
        elif isinstance(event, ConfirmationDecisionEvent):
            panel = self.query_one(ConfirmPanel)
            if panel.request is not None and panel.request.cause == event.cause:
                panel.hide()
            pane = self._pane_of(self.actions.get(event.cause))
            if pane is not None:
                pane.show_confirmation(event.approved)
        elif isinstance(event, MessageEvent) and event.source == "user" and live:
            self.query_one(PromptInput).delivered(event.text)
        elif isinstance(event, StateChangedEvent) and account:
            if event.state == "running" and status.data.state in _RUN_STARTS_FROM:
                status.set(run_steps=0)  # a new run: the controller counts its steps afresh
            status.set(state=event.state)
            if event.state == "paused" or event.state in ENDED_STATES:
                status.set(pending="")  # "pausing…" came true, or the run ended first
            if event.state in ENDED_STATES and self.paused and live:
                self.action_toggle_pause()  # a pause asked for this run does not hold the next
            data = status.data
            if event.state == "running" and live:
                if data.started is None:
                    status.set(started=self.clock())
                elif data.ended is not None:  # a follow-up task: the clock goes on from there
                    status.set(started=data.started + self.clock() - data.ended, ended=None)
            elif event.state in ENDED_STATES and data.started is not None:
                status.set(ended=self.clock())
        elif isinstance(event, LLMCallEvent) and account:
            status.set(
                steps=status.data.steps + 1,  # one reply is one step, however many calls
                run_steps=status.data.run_steps + 1,
                prompt_tokens=status.data.prompt_tokens + event.prompt_tokens,
                completion_tokens=status.data.completion_tokens + event.completion_tokens,
                cost=status.data.cost + event.cost,
                model=event.model,
            )
            if live:
                status.set(llm="ready")  # it answered
        elif live and isinstance(event, LLMRetryEvent):
            status.set(llm="retrying")
        elif live and isinstance(event, ErrorEvent) and event.error_kind.startswith("llm_"):
            status.set(llm="failing")  # the library is loaded, the provider did not answer

    def _tool_pane(self, name: str | None) -> ToolPane | None:
        panes: dict[str, ToolPane] = {
            "shell": self.query_one(ShellPane),
            "jupyter": self.query_one(JupyterPane),
            "browser": self.query_one(BrowserPane),
        }
        return panes.get(name or "")

    def _pane_of(self, event: ActionEvent | None) -> ToolPane | None:
        """The tool pane that shows the action's tool, if it has one."""
        if event is None:
            return None
        return self._tool_pane(REGISTRY.for_action(event.action).pane)

    def _reveal(self, pane: str, live: bool) -> None:
        if live:
            self.query_one("#tools", TabbedContent).active = f"tab-{pane}"

    def on_progress_changed(self, message: ProgressChanged) -> None:
        """Background start-up moved on."""
        self.query_one(StatusBar).set(**{message.part: message.state})
        if message.detail:
            failed = message.state in ("failed", "dead")
            if not failed and isinstance(self.screen, ModalScreen):
                self._held.append(message)  # e.g. the limits, under the trust question
                return
            self.notify(
                message.detail,
                title=message.part,
                severity="error" if failed else "information",
                timeout=10 if failed else 8,  # the limits in force take a few lines to read
                markup=False,
            )

    def _show_held(self, screen: Screen[Any]) -> None:
        """Back from a question: the start-up news it covered."""
        if isinstance(screen, ModalScreen):
            return
        held, self._held = self._held, []
        for message in held:
            self.on_progress_changed(message)

    def on_message_queued(self, message: MessageQueued) -> None:
        """A message waits for the agent's next step: the input box's border says so."""
        self.query_one(PromptInput).add_queued(message.text)

    def on_queued_messages_returned(self, message: QueuedMessagesReturned) -> None:
        """Queued messages the agent never read go back into the input box."""
        self.query_one(PromptInput).take_back(message.texts)
        self.notify(
            f"Not sent: {message.why}. It is back in the input box.",
            severity="warning",
            markup=False,
        )

    def on_slash_matches_changed(self, message: SlashMatchesChanged) -> None:
        """A slash command is being typed: list what it may be above the input box."""
        self.query_one(SlashPopup).show(message.matches, message.index)

    def on_slash_entered(self, message: SlashEntered) -> None:
        """A slash command was sent: run it (one that is no command: say so)."""
        from workbench.tui.slash_run import run_slash

        run_slash(self, message.parsed)

    def on_stray_key(self, message: StrayKey) -> None:
        """A letter typed in the conversation: into the input box, which takes the focus."""
        prompt = self.query_one(PromptInput)
        prompt.focus()
        prompt.insert(message.character)

    def on_task_waiting(self, message: TaskWaiting) -> None:
        """A task waits for start-up: the conversation says so where it will appear."""
        self.query_one(ConversationView).show_waiting_task(message.text)

    # ------------------------------------------------------------------ the person's input

    def on_prompt_submitted(self, message: PromptSubmitted) -> None:
        """Send a task or a queued message (continuing the saved session shown, if one is)."""
        panel = self.query_one(ConfirmPanel)
        if panel.request is not None:  # it waited while this message was being written
            panel.take_focus()
        if self.backend is None:
            self.notify("No agent is connected (viewing a recorded session).", severity="warning")
            return
        saved = self.saved
        if saved is not None:
            self._leave_saved()
            how = "Resuming" if saved.upto is None else f"Branching at event {saved.upto} of"
            self.notify(
                f"{how} session {saved.session_id}: a new session linked to it, in a new "
                "sandbox (the shell and the kernel start afresh).",
                timeout=6,
                markup=False,
            )
            self._background(self._continue(saved, message.text), "resume")
            return
        self._background(self.backend.submit(message.text), "submit")

    async def _continue(self, saved: SavedView, text: str) -> None:
        """Continue `saved` with `text`; if that fails, the view and the text are as before."""
        assert self.backend is not None
        try:
            await self.backend.continue_session(saved.path, text, saved.upto)
        except Exception:
            self._show_saved(saved)
            self.query_one(PromptInput).take_back([text])
            raise  # shown as a notification

    def on_confirmation_answered(self, message: ConfirmationAnswered) -> None:
        """Pass the answer to the controller; "always" first shows the rules it would save."""
        if message.answer == "always":
            self._offer_allow_rules(message.cause)
            return
        self.query_one(PromptInput).focus()
        if self.backend is not None:
            work = self.backend.answer(message.cause, message.answer, reason=message.reason)
            self._background(work, "answer")

    def on_network_asked(self, message: NetworkAsked) -> None:
        """Ask the person about a host the sandbox wants (`screens/net_ask.py`)."""
        from workbench.tui.screens.net_ask import NetAskScreen

        def chosen(answer: str | None) -> None:
            message.answered(answer or "reject")

        self.push_screen(NetAskScreen(message.question), chosen)

    def on_network_ask_withdrawn(self, message: NetworkAskWithdrawn) -> None:
        """Close the question about a host once the run that asked has ended."""
        from workbench.tui.screens.net_ask import NetAskScreen

        for screen in self.screen_stack:
            if isinstance(screen, NetAskScreen) and screen.question is message.question:
                screen.dismiss(None)
                self.notify(
                    f"The run ended before you answered about {message.question.host}: the "
                    "connection was refused.",
                    timeout=6,
                )

    def _offer_allow_rules(self, cause: int) -> None:
        """Show the rules "always allow" proposes; saved, they answer the panel's request."""
        from workbench.tui.screens.allow_rule import AllowChoice, AllowRuleScreen

        panel = self.query_one(ConfirmPanel)
        backend = self.backend
        offer = backend.allow_offer(cause) if backend is not None else None
        if backend is None or offer is None:
            if panel.request is not None and panel.request.always_ask:  # not waiting yet
                why = "; ".join(panel.request.always_ask)
                self.notify(f"No rule offered: asked every time ({why}).", markup=False)
            return
        if not offer.rules:
            self.notify(
                f"No rule offered: {offer.refused}. Press y to approve this action once.",
                severity="warning",
                timeout=8,
                markup=False,
            )
            return

        def chosen(choice: AllowChoice | None) -> None:
            if choice is None or panel.request is None or panel.request.cause != cause:
                if panel.request is not None:
                    panel.focus()
                return
            panel.hide()
            self.query_one(PromptInput).focus()
            answer = "always" if choice.target is not None else "session"
            work = backend.answer(cause, answer, choice.rules, choice.target)
            self._background(work, "answer")

        screen = AllowRuleScreen(offer, lambda rules: backend.allow_rule_errors(cause, rules))
        self.push_screen(screen, chosen)

    def on_shell_input_submitted(self, message: ShellInputSubmitted) -> None:
        """Text or a key for the running command."""
        shell = self.query_one(ShellPane)
        if message.text == "C-c":
            shell.output.append_marked("^C", "note")
        if self.backend is not None:
            self._background(self.backend.shell_input(message.text), "shell-input")

    def _background(self, work: Coroutine[Any, Any, None], group: str) -> None:
        """Run backend work without blocking the UI; a failure becomes a notification."""

        async def guarded() -> None:
            try:
                await work
            except Exception as exc:
                self.notify(
                    f"{type(exc).__name__}: {exc}",
                    title=group,
                    severity="error",
                    timeout=10,
                    markup=False,
                )

        self.run_worker(guarded(), group=group)

    # ------------------------------------------------------------------ actions

    def action_focus_prompt(self) -> None:
        """Back to the input box (and out of a maximized pane)."""
        self.screen.minimize()
        self.query_one(PromptInput).focus()

    def agent_busy(self) -> bool:
        """Whether an agent is in the middle of a task (running, asking, paused); never while
        only a recording is shown (a replay, or no backend)."""
        if self.backend is None:
            return False
        return self.query_one(StatusBar).data.state in BUSY_STATES

    def action_escape(self) -> None:
        """Close what is open (toasts, a maximized pane) and go back to the input box; pressed
        twice quickly while the agent works, interrupt it."""
        now = time.monotonic()
        again = now - self._last_escape < ESCAPE_TWICE_S
        self._last_escape = now
        self.clear_notifications()
        if again and self.agent_busy():
            self._last_escape = -1e9
            self.action_stop()
            return
        self.action_focus_prompt()
        if self.agent_busy():
            self.notify("Press esc again to interrupt the agent.", timeout=ESCAPE_TWICE_S + 0.7)

    def action_help(self) -> None:
        """Show every key binding, by where it works."""
        from workbench.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(key_groups(self)))

    def action_rules(self) -> None:
        """Show the confirmation rules in effect, where each comes from; remove one there."""
        from workbench.tui.screens.rules import RulesScreen

        if self.config is None:
            self.notify("No configuration loaded: no rules to show.", markup=False)
            return
        if not isinstance(self.screen, RulesScreen):
            self.push_screen(RulesScreen(self.config, self.config_path))

    async def action_request_quit(self) -> None:
        """Quit; while the agent works, ask first (ctrl+q again, or y, quits)."""
        from workbench.tui.screens.quit import QuitScreen

        if isinstance(self.screen, QuitScreen):
            await self.action_quit()
            return
        if not self.agent_busy():
            await self.action_quit()
            return

        def answered(quit_now: bool | None) -> None:
            if quit_now:
                self.call_later(self.action_quit)

        state = self.query_one(StatusBar).data.state.replace("_", " ")
        self.push_screen(QuitScreen(state), answered)

    def action_toggle_tools(self) -> None:
        """Show or hide the tool panes."""
        self.tools_hidden = not self.tools_hidden
        self._layout_tools()

    def action_show_pane(self, pane: str) -> None:
        """Show the tool pane `pane` and focus it."""
        tools = self.query_one("#tools", TabbedContent)
        self.tools_hidden = False
        self._layout_tools(opening=True)  # unfolded before the focus can go there
        tools.active = f"tab-{pane}"
        target = self.query_one(f"#{pane}")
        if pane == "shell":
            target = self.query_one("#shell-input")
        target.focus()

    def action_maximize_pane(self) -> None:
        """Maximize the focused pane (again: restore)."""
        if self.screen.maximized is not None:
            self.screen.minimize()
            return
        focused = self.focused
        while focused is not None and focused.id not in ("conversation", *self.PANES):
            focused = focused.parent  # type: ignore[assignment]
        target = focused or self.query_one(ConversationView)
        self.screen.maximize(target, container=False)

    def action_resize_tools(self, delta: int) -> None:
        """Give the tool panes more or less room."""
        self.tools_size = max(20, min(80, self.tools_size + delta))
        self._layout_tools()

    def action_toggle_pause(self) -> None:
        """Pause or resume the agent."""
        if self.backend is None:
            return
        if self.paused:
            self.backend.resume()
        else:
            self.backend.pause()
        self.paused = not self.paused
        status = self.query_one(StatusBar)
        working = status.data.state in ("running", "awaiting_confirmation")
        # Shown at once: the agent stops only once its current step (a long command) ends.
        status.set(pending="pausing…" if self.paused and working else "")
        if self.paused and working:
            self.notify("Pausing after the current step", timeout=2)
        elif status.data.state not in ENDED_STATES:
            self.notify("Paused" if self.paused else "Resumed", timeout=2)

    def action_stop(self) -> None:
        """Stop the agent."""
        if self.backend is not None:
            self.backend.stop()
            self.notify("Stopping the agent", timeout=2)

    def action_condense_now(self) -> None:
        """Condense the older history before the agent's next LLM call."""
        if self.backend is not None and self.backend.condense_now():
            self.notify("The history is condensed before the next LLM call", timeout=3)
        else:
            self.notify("No session to condense yet", timeout=3)

    def action_new_session(self) -> None:
        """End the session open now (nothing more of it is shown), read the config again and
        clear the panes; the next message starts a new session."""
        if self.backend is not None and (ended := self.backend.current_log()) is not None:
            self._ended_logs.add(ended)
        self.paused = False
        self._reread_config()
        self._leave_saved()
        self.query_one(ConfirmPanel).hide()  # its question went with the session
        self.query_one(ConversationView).clear()
        self.query_one(ConversationView).show_waiting_task("")  # given back, if one waited
        self.query_one(JupyterPane).clear()
        self.query_one(ShellPane).reset()
        self.actions.clear()
        status = self.query_one(StatusBar)
        status.set(
            steps=0,
            run_steps=0,
            prompt_tokens=0,
            completion_tokens=0,
            cost=0.0,
            state="idle",
            started=None,
            ended=None,
            pending="",
        )
        self.query_one(PromptInput).focus()  # a new session starts with typing
        if self.backend is not None:
            self._background(self.backend.new_session(), "backend")

    def _reread_config(self) -> None:
        """Read the config again (edited since?); one that does not load: say why, keep the
        one in use."""
        from pydantic import ValidationError

        from workbench.config.load import ConfigError
        from workbench.config.reload import adopt, reread
        from workbench.tui.start_flow import offer_trust

        config = self.config
        if config is None:
            return
        before = config.project_trust
        try:
            fresh = reread(config)
        except (ConfigError, ValidationError, OSError) as exc:
            self.notify(
                f"The configuration was not read again, the one in use stays: {exc}",
                title="Configuration error",
                severity="error",
                timeout=20,
                markup=False,
            )
            return
        if fresh is None or not adopt(config, fresh):
            return
        self.query_one(StatusBar).set(model=config.llm.model, max_steps=config.agent.max_iterations)
        self.query_one(ConversationView).set_welcome(self._workspace_shown(), config.llm.model)
        after = config.project_trust
        if after is not None and (before is None or before.digest != after.digest):
            offer_trust(self, config)  # the project's file changed: its allow rules wait

    def action_open_session(self) -> None:
        """Pick a saved session and show it."""
        from workbench.tui.screens.sessions import SessionPicker

        self.push_screen(SessionPicker(self._sessions_dir()), self._open_picked)

    def _sessions_dir(self) -> Path:
        from workbench.config.places import sessions_dir_of
        from workbench.paths import sessions_dir

        return sessions_dir_of(self.config) if self.config is not None else sessions_dir()

    def _open_picked(self, path: Path | None) -> None:
        if path is not None:
            self.open_session_file(path)

    def open_session_file(self, path: Path) -> None:
        """Load a session log into the panes, read-only until a message continues it."""
        from workbench.session.log import SessionLogError
        from workbench.session.opening import reopen

        try:
            loaded = reopen(path)
        except SessionLogError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.action_new_session()
        self.load_events(loaded.events)
        self._diffs_from(Path(loaded.header.workspace))
        self._show_saved(SavedView(path, loaded.header.session_id))
        if loaded.bad_lines or loaded.truncated:
            self.notify(f"{len(loaded.bad_lines)} unreadable line(s) skipped", severity="warning")

    def _show_saved(self, saved: SavedView) -> None:
        """Mark the view read-only (status bar, input box) until a message continues it."""
        self.saved = saved
        prompt = self.query_one(PromptInput)
        status = self.query_one(StatusBar)
        if status.data.state not in ("finished", "error", "stopped"):
            # A history cut mid-run (a branch) or left by a killed app: nothing runs now.
            status.set(state="idle")
        if saved.upto is None:
            self.query_one(StatusBar).set(mark="read-only")
            prompt.placeholder = (
                f"Read-only: saved session {saved.session_id} · type a message to resume it"
            )
        else:
            self.query_one(StatusBar).set(mark="branch")
            prompt.placeholder = (
                f"Branch of {saved.session_id} at event {saved.upto} · type a message to "
                "continue from here"
            )

    def _leave_saved(self) -> None:
        self.saved = None
        self.query_one(StatusBar).set(mark="")
        self.query_one(PromptInput).placeholder = PLACEHOLDER

    def action_branch_here(self) -> None:
        """A new session with the history up to the conversation's current cell."""
        event_id = self.query_one(ConversationView).event_id_at_cursor()
        if event_id is None:
            self.notify("No cell to branch from: pick one in the conversation.", markup=False)
            return
        self.branch_at(event_id)

    def on_branch_requested(self, message: BranchRequested) -> None:
        """`b` on a cell of the conversation: asked first (a "b" may begin a word)."""
        from workbench.tui.screens.branch import BranchScreen

        view = self.query_one(ConversationView)
        cell = view.current()
        what = cell.title[:60] if cell is not None else f"event {message.event_id}"
        running = self.query_one(StatusBar).data.state in ("running", "awaiting_confirmation")

        def answered(go: bool | None) -> None:
            if go:
                self.branch_at(message.event_id)

        self.push_screen(BranchScreen(what, running), answered)

    def session_log_shown(self) -> Path | None:
        """The log of the session the conversation shows (saved or open now), if any."""
        if self.saved is not None:
            return self.saved.path
        return self.backend.current_log() if self.backend is not None else None

    def branch_at(self, event_id: int, source: Path | None = None) -> None:
        """Show the session (the one shown, or the log `source`) up to event `event_id` (its
        running agent stopped): the next message continues it from there as a new session."""
        from workbench.session.log import SessionLogError
        from workbench.session.resume import load_history

        source = source or self.session_log_shown()
        if source is None:
            self.notify("No session to branch from yet.", severity="warning", markup=False)
            return
        try:
            history = load_history(source, upto=event_id)
        except (SessionLogError, ValueError) as exc:
            self.notify(f"Cannot branch here: {exc}", severity="error", markup=False)
            return
        self.action_new_session()
        self.load_events(history.events)
        self._diffs_from(Path(history.workspace))
        self._show_saved(SavedView(source, history.parent_id, history.upto))
        self.query_one(PromptInput).focus()

    def action_rewind_here(self) -> None:
        """Rewind the files to the conversation's current cell, asking first; then branch."""
        event_id = self.query_one(ConversationView).event_id_at_cursor()
        if event_id is None:
            self.notify("No cell to rewind to: pick one in the conversation.", markup=False)
            return
        self._rewind_at(event_id)

    def on_rewind_requested(self, message: RewindRequested) -> None:
        """`r` on a cell of the conversation."""
        self._rewind_at(message.event_id)

    def _rewind_at(self, event_id: int) -> None:
        from workbench.config.schema import CheckpointsConfig
        from workbench.tui.rewind_flow import rewind_here

        source = self.session_log_shown()
        open_now = self.saved is None and self.backend is not None and source is not None
        end_session = self.backend.new_session if open_now and self.backend else None
        checkpoints = self.config.checkpoints if self.config is not None else CheckpointsConfig()
        flow = rewind_here(self, event_id, source, checkpoints, end_session, self.branch_at)
        self.run_worker(flow, group="rewind", exclusive=True)

    def action_settings(self) -> None:
        """Open the settings screen."""
        from workbench.tui.screens.settings import SettingsScreen

        def saved(changed: bool | None) -> None:
            if not changed or self.config is None:
                return
            config = self.config
            self.query_one(StatusBar).set(
                model=config.llm.model, max_steps=config.agent.max_iterations
            )
            self.query_one(ConversationView).set_welcome(self._workspace_shown(), config.llm.model)
            if self.backend is not None:
                self.backend.settings_changed()

        self.push_screen(SettingsScreen(self.config, self.config_path), saved)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Palette entries for everything the footer keys do (Textual's own "Maximize", which
        would maximize the input box, gives way to "Maximize pane")."""
        from workbench.tui.screens.help import bindings_of

        keys: dict[str, list[str]] = {}
        for binding in bindings_of(type(self), own_only=False):
            keys.setdefault(binding.action, []).append(self.get_key_display(binding))
        for command in super().get_system_commands(screen):
            if command.title not in ("Maximize", "Quit"):  # ours ask first while a task runs
                yield command
        for entry in palette_entries(self.PANES):
            run = partial(self._palette_action, entry.action)
            shown = " / ".join(keys.get(entry.action, []))
            yield SystemCommand(
                entry.title, f"{shown} · {entry.help}" if shown else entry.help, run
            )

    def _palette_action(self, action: str) -> None:
        """Run a palette entry's action now (an async one as a worker)."""
        self.run_action_now(action)

    def run_action_now(self, action: str) -> None:
        """Run the app action `action` (as a key binding names it) now; an async one as a
        worker (the palette and slash commands)."""
        _, name, params = parse_action(action)
        result = getattr(self, f"action_{name}")(*params)
        if inspect.isawaitable(result):
            self.run_worker(result, group="palette")

    async def action_quit(self) -> None:
        """Close the backend (no process left behind), then exit."""
        if self.backend is not None:
            await self.backend.close()
        self.exit(0)


def key_groups(app: WorkbenchApp) -> list[KeyGroup]:
    """Every key of the app, grouped by where it works (for the help screen)."""
    from workbench.tui.screens.help import KeyGroup, bindings_of, describe
    from workbench.tui.slash import help_rows as slash_help_rows

    def group(
        title: str,
        *classes: type,
        before: tuple[tuple[str, str], ...] = (),
        after: tuple[tuple[str, str], ...] = (),
    ) -> KeyGroup:
        rows = [row for cls in classes for row in describe(app, bindings_of(cls))]
        return KeyGroup(title, (*before, *rows, *after))

    everywhere = bindings_of(type(app), own_only=False)
    return [
        KeyGroup(
            "Everywhere",
            (
                *describe(app, everywhere),
                (
                    app.get_key_display(Binding(app.COMMAND_PALETTE_BINDING, "")),
                    "Command palette: every action by name, with its key",
                ),
            ),
        ),
        group(
            "Input box",
            PromptInput,
            before=(("enter", "Send (while the agent works: queued for its next step)"),),
            after=(
                ("↑ / ↓", "Earlier messages (while / commands are listed: pick one)"),
                ("tab", "Next pane (while / commands are listed: complete the picked one)"),
            ),
        ),
        KeyGroup("Slash commands (type them in the input box)", slash_help_rows()),
        group(
            "Conversation (tab to it, or click a cell)",
            ConversationView,
            after=(("other letters", "Go to the input box, typed there"),),
        ),
        group("Confirmation panel", ConfirmPanel),
        group(
            "Shell pane",
            ShellPane,
            before=(("enter", "Send the line typed to the running command"),),
        ),
        group("Jupyter pane", JupyterPane),
        group("Browser pane", BrowserPane),
    ]


def create_app(
    config: Config | None = None,
    backend: Backend | None = None,
    *,
    clock: Callable[[], float] = time.monotonic,
    image_mode: str = "halfcell",
    user_themes: Path | None = None,
    config_path: Path | None = None,
) -> WorkbenchApp:
    """The app as the CLI runs it (`image_mode` from `terminal.image_mode`, asked before
    Textual starts; half-cell blocks by default); tests pass a fixed clock."""
    if user_themes is None:
        from workbench.paths import themes_dir

        user_themes = themes_dir()
    return WorkbenchApp(
        config,
        backend,
        clock=clock,
        image_mode=image_mode,
        user_themes=user_themes,
        config_path=config_path,
    )


def run_tui(config: Config, args: Any) -> int:
    """Open the TUI (the CLI's default); a task given with `-t`/`-f` starts at once."""
    import os
    import sys

    from workbench.exit_codes import WORKSPACE_REFUSED
    from workbench.tui import terminal
    from workbench.tui.bridge import ControllerBackend

    config_path = Path(args.config).expanduser() if getattr(args, "config", None) else None
    image_mode = terminal.image_mode(os.environ, sys.stdout.isatty())  # before Textual starts
    backend = ControllerBackend(config, config_path)
    app = create_app(config, backend, image_mode=image_mode, config_path=config_path)
    task = getattr(args, "task", None)
    if getattr(args, "file", None):
        task = Path(args.file).read_text(encoding="utf-8")
    if task and task.strip():
        app.initial_task = task.strip()
    app.start_questions = list(getattr(args, "start_questions", []))
    history = getattr(args, "history", None)
    if history is not None:  # --resume ID / --last: shown read-only; -t continues it at once
        app.initial_session = history.parent_path
    code = app.run()
    if code == WORKSPACE_REFUSED and app.start_questions:  # a start question answered no
        print("workbench: not started: you answered no. Nothing was run.", file=sys.stderr)
    return code or 0
