"""The app's session actions: a new session, a saved one opened read-only (`SavedView`), and
the message that continues it (a resume, or a branch begun) as a new linked session."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from workbench.tui.host import SavedView
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.prompt import PLACEHOLDER, PromptInput
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.status import StatusBar

if TYPE_CHECKING:
    from workbench.tui.host import Host
    from workbench.tui.messages import PromptSubmitted


def new_session(app: Host) -> None:
    """End the session open now (nothing more of it is shown), read the config again and
    clear the panes; the next message starts a new session."""
    if app.backend is not None and (ended := app.backend.current_log()) is not None:
        app.ended_logs.add(ended)
    app.paused = False
    reread_config(app)
    leave_saved(app)
    app.query_one(ConfirmPanel).hide()  # its question went with the session
    app.query_one(ConversationView).clear()
    app.query_one(ConversationView).show_waiting_task("")  # given back, if one waited
    app.query_one(JupyterPane).clear()
    app.query_one(ShellPane).reset()
    app.actions.clear()
    status = app.query_one(StatusBar)
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
    app.query_one(PromptInput).focus()  # a new session starts with typing
    if app.backend is not None:
        app.background(app.backend.new_session(), "backend")


def reread_config(app: Host) -> None:
    """Read the config again (edited since?); one that does not load: say why, keep the
    one in use."""
    from pydantic import ValidationError

    from workbench.config.load import ConfigError
    from workbench.config.reload import adopt, reread
    from workbench.tui.start_flow import offer_trust

    config = app.config
    if config is None:
        return
    before = config.project_trust
    try:
        fresh = reread(config)
    except (ConfigError, ValidationError, OSError) as exc:
        app.notify(
            f"The configuration was not read again, the one in use stays: {exc}",
            title="Configuration error",
            severity="error",
            timeout=20,
            markup=False,
        )
        return
    if fresh is None or not adopt(config, fresh):
        return
    app.query_one(StatusBar).set(model=config.llm.model, max_steps=config.agent.max_iterations)
    app.query_one(ConversationView).set_welcome(app.workspace_shown(), config.llm.model)
    after = config.project_trust
    if after is not None and (before is None or before.digest != after.digest):
        offer_trust(app, config)  # the project's file changed: its allow rules wait


def sessions_dir(app: Host) -> Path:
    """Where the app's config keeps session logs."""
    from workbench.config.places import sessions_dir_of
    from workbench.paths import sessions_dir as default_dir

    return sessions_dir_of(app.config) if app.config is not None else default_dir()


def pick_session(app: Host) -> None:
    """Pick a saved session and show it."""
    from workbench.tui.screens.sessions import SessionPicker

    def picked(path: Path | None) -> None:
        if path is not None:
            open_session_file(app, path)

    app.push_screen(SessionPicker(sessions_dir(app)), picked)


def open_session_file(app: Host, path: Path) -> None:
    """Load a session log into the panes, read-only until a message continues it."""
    from workbench.session.log import SessionLogError
    from workbench.session.opening import reopen

    try:
        loaded = reopen(path)
    except SessionLogError as exc:
        app.notify(str(exc), severity="error", markup=False)
        return
    app.action_new_session()
    app.load_events(loaded.events)
    app.diffs_from(Path(loaded.header.workspace))
    show_saved(app, SavedView(path, loaded.header.session_id))
    if loaded.bad_lines or loaded.truncated:
        app.notify(f"{len(loaded.bad_lines)} unreadable line(s) skipped", severity="warning")


def show_saved(app: Host, saved: SavedView) -> None:
    """Mark the view read-only (status bar, input box) until a message continues it."""
    app.saved = saved
    prompt = app.query_one(PromptInput)
    status = app.query_one(StatusBar)
    if status.data.state not in ("finished", "error", "stopped"):
        # A history cut mid-run (a branch) or left by a killed app: nothing runs now.
        status.set(state="idle")
    if saved.upto is None:
        status.set(mark="read-only")
        prompt.placeholder = (
            f"Read-only: saved session {saved.session_id} · type a message to resume it"
        )
    else:
        status.set(mark="branch")
        prompt.placeholder = (
            f"Branch of {saved.session_id} at event {saved.upto} · type a message to "
            "continue from here"
        )


def leave_saved(app: Host) -> None:
    """The view is no longer a saved session's."""
    app.saved = None
    app.query_one(StatusBar).set(mark="")
    app.query_one(PromptInput).placeholder = PLACEHOLDER


def submit(app: Host, message: PromptSubmitted) -> None:
    """Send a task or a queued message (continuing the saved session shown, if one is)."""
    text = message.text
    panel = app.query_one(ConfirmPanel)
    if panel.request is not None:  # it waited while this message was being written
        panel.take_focus()
    if app.backend is None:
        app.notify("No agent is connected (viewing a recorded session).", severity="warning")
        return
    saved = app.saved
    if saved is not None:
        leave_saved(app)
        how = "Resuming" if saved.upto is None else f"Branching at event {saved.upto} of"
        app.notify(
            f"{how} session {saved.session_id}: a new session linked to it, in a new "
            "sandbox (the shell and the kernel start afresh).",
            timeout=6,
            markup=False,
        )
        app.background(_continue(app, saved, text), "resume")
        return
    app.background(app.backend.submit(text), "submit")


async def _continue(app: Host, saved: SavedView, text: str) -> None:
    """Continue `saved` with `text`; if that fails, the view and the text are as before."""
    assert app.backend is not None
    try:
        await app.backend.continue_session(saved.path, text, saved.upto)
    except Exception:
        show_saved(app, saved)
        app.query_one(PromptInput).take_back([text])
        raise  # shown as a notification
