"""The Textual app: its composition (layout, themes, start-up) and its key bindings.

`create_app` builds the app for the CLI, the tests and the benchmark alike; `run_tui` runs it.
Events reach the app as `EventArrived` messages (from a `Backend`, see `backend.py`, or fed by
hand in tests); live shell output goes straight into the shell pane's buffer. What the app
does lives beside it, one job a module, each taking the app (`host.Host`): `routing.py` (events
to the panes), `saved_sessions.py` (new, open, continue), `branching.py` (branch and rewind),
`tool_layout.py`, `agent_controls.py`, `answers.py` (the person's answers), `hangup.py`,
`key_groups.py`; the palette's entries are in `commands.py`.

Nothing here loads what the first paint does not need (the tool registry, the session log,
the checkpoints, litellm): the backend starts after the first paint.
"""

from __future__ import annotations

import contextlib
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.css.query import NoMatches
from textual.widgets import Footer, TabbedContent, TabPane

from workbench.tui import (
    agent_controls,
    answers,
    branching,
    dialogs,
    hangup,
    input_box,
    palette,
    routing,
    saved_sessions,
)
from workbench.tui import themes as theme_files
from workbench.tui import tool_layout as layout
from workbench.tui.host import SavedView
from workbench.tui.key_groups import key_groups
from workbench.tui.messages import (
    EventArrived,
    ModelCallChanged,
    ProgressChanged,
    PromptSubmitted,
    ShellInputSubmitted,
    TaskWaiting,
)
from workbench.tui.tool_layout import NARROW_WIDTH
from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.slash_popup import SlashPopup
from workbench.tui.widgets.status import StatusBar
from workbench.tui.widgets.tools_summary import ToolsSummary

if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Coroutine, Iterable

    from textual.events import DescendantFocus, Resize
    from textual.screen import Screen

    from sandbox.protocol import CommandFinished, OutputChunk
    from workbench.config.schema import Config
    from workbench.events import ActionEvent
    from workbench.session.start_checks import StartQuestion
    from workbench.tui.backend import Backend

__all__ = ["NARROW_WIDTH", "SavedView", "WorkbenchApp", "create_app", "key_groups", "run_tui"]

BACKEND_START_DELAY_S = 0.25
"""The backend starts this long after the first paint, once the footer has composed its keys
(it does so a few times as focus and bindings settle)."""


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
        """Every action of the session shown, by id (the panes and the panel look them up)."""
        self.tools_size = 50
        self.tools_layout: tuple[bool, int, bool, bool] | None = None
        self.tools_hidden = False
        """F2 hid the tool panes (and their folded row)."""
        self.paused = False
        self.initial_task = ""
        """A task to start as soon as the app is up (`workbench -t TASK` without --headless)."""
        self.initial_session: Path | None = None
        """A saved session to show as the app starts (`--resume ID`, `--last`)."""
        self.start_questions: list[StartQuestion] = []
        """Asked before the sandbox starts (`workbench.session.start_checks`); a no quits."""
        self.signals: list[signal.Signals] = []
        self.closing = False
        self.saved: SavedView | None = None
        """The saved session shown read-only (Ctrl-O, `--resume`) or a branch not yet begun."""
        self.last_escape = -1e9  # time.monotonic() of the last esc, for esc esc
        self.held_news: list[ProgressChanged] = []
        """Start-up news that came while a question was on screen: shown once it closes."""
        self.ended_logs: set[Path] = set()
        """Logs of sessions ended here (ctrl+n): their late events are not shown."""
        wanted = config.ui.theme if config is not None else theme_files.DEFAULT_THEME
        self.loaded_themes, self._theme_problems = theme_files.install(self, wanted, user_themes)

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """Workbench's colour variables, for themes (Textual's own) that do not set them."""
        return dict(theme_files.APP_VARIABLES)

    # ------------------------------------------------------------------ composition

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
            yield ToolsSummary(
                partial(layout.tools_summary, self), self.action_show_pane, id="tools-summary"
            )
        yield ConfirmPanel(id="confirm")
        yield SlashPopup(id="slash-popup")
        yield PromptInput(id="prompt")
        yield StatusBar(self.clock, id="status")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        """Apply the theme's code style, report theme problems, start the background work."""
        if self._theme_problems:
            self.notify(
                "\n".join(self._theme_problems),
                title="Theme problems",
                severity="warning",
                timeout=10,
                markup=False,
            )
        self.theme_changed_signal.subscribe(self, lambda _theme: self._apply_code_style())
        self.screen_change_signal.subscribe(self, partial(routing.show_held, self))
        self._apply_code_style()
        status = self.query_one(StatusBar)
        if self.config is not None:
            status.set(model=self.config.llm.model, max_steps=self.config.agent.max_iterations)
            self.query_one(ConversationView).set_welcome(
                self.workspace_shown(), self.config.llm.model
            )
        if self.backend is not None:
            self.backend.attach(self)
            self.query_one(JupyterPane).loader = self.load_artifact
            self.query_one(BrowserPane).loader = self.load_artifact
            # After the first frames: litellm's import (a thread holding the GIL for long
            # stretches) and the sandbox's start would otherwise hold them up.
            # Not before the start questions are answered (a home folder, another folder).
            self.call_after_refresh(self._ask_then_start)
        if self.initial_session is not None:
            self.open_session_file(self.initial_session)
        if self.backend is not None and self.initial_task:
            self.post_message(PromptSubmitted(self.initial_task))
        self.query_one(PromptInput).focus()
        hangup.watch_hangup(self)
        if self.config is not None:
            self.diffs_from(_workspace_of(self.config))

    def diffs_from(self, workspace: Path) -> None:
        """The conversation reads its rows' diffs from the checkpoints of `workspace` (the
        checkpoint modules load at the first diff, not before the first paint)."""

        def diff_of(before: str | None, after: str) -> str:
            from workbench.checkpoints.rewind_here import step_diff

            return step_diff(workspace, before, after)

        self.query_one(ConversationView).diff_of = diff_of

    def on_unmount(self) -> None:
        """Give the signals back (tests run many apps in one process)."""
        hangup.release_signals(self)

    def workspace_shown(self) -> str:
        """The workspace's path, with ~ for the home folder."""
        assert self.config is not None
        workspace = _workspace_of(self.config)
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

    def _ask_then_start(self) -> None:
        from workbench.tui.start_flow import ask_then_start

        def start() -> None:
            self.set_timer(BACKEND_START_DELAY_S, self._start_backend)

        ask_then_start(self, self.start_questions, start, self.config)

    def _start_backend(self) -> None:
        if self.backend is not None:
            self.background(self.backend.start(), "backend")

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
        layout.layout_tools(self, event.size.width, event.size.height)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        """The focus moved: open the folded panes when it enters one, fold them when it leaves."""
        with contextlib.suppress(NoMatches):  # the panes are not composed yet
            layout.layout_tools(self)

    def background(self, work: Coroutine[Any, Any, None], group: str) -> None:
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

    # ------------------------------------------------------------------ events in (routing.py)

    feed_event = routing.feed_event
    load_events = routing.load_events
    on_progress_changed = routing.show_progress

    def feed_output(self, event: OutputChunk | CommandFinished) -> None:
        """Live output of the shell or a Jupyter cell (any thread): buffered, drawn by the
        pane's timer."""
        from sandbox.protocol import OutputChunk  # the protocol's models: after the first paint

        if isinstance(event, OutputChunk) and event.source == "jupyter":
            self.query_one(JupyterPane).feed(event.data)
        else:
            self.query_one(ShellPane).feed(event)

    def on_event_arrived(self, message: EventArrived) -> None:
        """An event from the controller (one of a session ended since is dropped)."""
        if message.log is None or message.log not in self.ended_logs:
            self.feed_event(message.event, message.live)

    def on_model_call_changed(self, message: ModelCallChanged) -> None:
        """A model call started, streamed, was retried or ended: the conversation shows it."""
        if message.log is None or message.log not in self.ended_logs:
            self.query_one(ConversationView).show_activity(message.activity)

    on_message_queued = input_box.message_queued
    on_queued_messages_returned = input_box.queued_messages_returned
    on_slash_matches_changed = input_box.slash_matches_changed
    on_slash_entered = input_box.slash_entered
    on_stray_key = input_box.stray_key

    def on_task_waiting(self, message: TaskWaiting) -> None:
        """A task waits for start-up: the conversation says so where it will appear."""
        self.query_one(ConversationView).show_waiting_task(message.text)

    # ------------------------------------------------------------------ the person's input

    on_prompt_submitted = saved_sessions.submit
    on_confirmation_answered = answers.confirmation_answered
    on_network_asked = answers.network_asked
    on_network_ask_withdrawn = answers.network_ask_withdrawn
    on_branch_requested = branching.ask_branch
    on_rewind_requested = branching.rewind_requested

    def on_shell_input_submitted(self, message: ShellInputSubmitted) -> None:
        """Text or a key for the running command."""
        if message.text == "C-c":
            self.query_one(ShellPane).output.append_marked("^C", "note")
        if self.backend is not None:
            self.background(self.backend.shell_input(message.text), "shell-input")

    # ------------------------------------------------------------------ actions (the keys')

    agent_busy = agent_controls.agent_busy
    action_escape = agent_controls.escape
    action_request_quit = agent_controls.request_quit
    action_toggle_pause = agent_controls.toggle_pause
    action_stop = agent_controls.stop
    action_condense_now = agent_controls.condense_now
    action_toggle_tools = layout.toggle_tools
    action_show_pane = layout.show_pane
    action_maximize_pane = layout.maximize_pane
    action_resize_tools = layout.resize_tools
    action_new_session = saved_sessions.new_session
    action_open_session = saved_sessions.pick_session
    _sessions_dir = saved_sessions.sessions_dir
    open_session_file = saved_sessions.open_session_file
    session_log_shown = branching.session_log_shown
    action_branch_here = branching.branch_here
    branch_at = branching.branch_at
    action_rewind_here = branching.rewind_here

    def action_focus_prompt(self) -> None:
        """Back to the input box (and out of a maximized pane)."""
        self.screen.minimize()
        self.query_one(PromptInput).focus()

    action_help = dialogs.open_help
    action_rules = dialogs.open_rules
    action_settings = dialogs.open_settings
    run_action_now = palette.run_action_now

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's palette commands, less those ours replace, then ours (`palette.py`)."""
        return palette.system_commands(self, super().get_system_commands(screen), self.PANES)

    async def action_quit(self) -> None:
        """Close the backend (no process left behind), then exit."""
        if self.backend is not None:
            await self.backend.close()
        self.exit(0)


def _workspace_of(config: Config) -> Path:
    """The workspace, as `workbench.config.places.workspace_of` finds it (not imported from there:
    that module loads the session log's, some 25 ms before the first paint)."""
    import os

    return Path(config.sandbox.workspace or os.getcwd()).expanduser().resolve()


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
