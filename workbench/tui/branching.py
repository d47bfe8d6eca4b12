"""Branching and rewinding from a cell of the conversation: a new session with the history up
to that cell (`branch_at`), the workspace's files rewound first (`rewind_at`, see
`rewind_flow.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.status import StatusBar

if TYPE_CHECKING:
    from workbench.tui.host import Host
    from workbench.tui.messages import BranchRequested, RewindRequested


def session_log_shown(app: Host) -> Path | None:
    """The log of the session the conversation shows (saved or open now), if any."""
    if app.saved is not None:
        return app.saved.path
    return app.backend.current_log() if app.backend is not None else None


def branch_here(app: Host) -> None:
    """A new session with the history up to the conversation's current cell."""
    event_id = app.query_one(ConversationView).event_id_at_cursor()
    if event_id is None:
        app.notify("No cell to branch from: pick one in the conversation.", markup=False)
        return
    branch_at(app, event_id)


def ask_branch(app: Host, message: BranchRequested) -> None:
    """`b` on a cell of the conversation: asked first (a "b" may begin a word)."""
    from workbench.tui.screens.branch import BranchScreen

    event_id = message.event_id
    cell = app.query_one(ConversationView).current()
    what = cell.title[:60] if cell is not None else f"event {event_id}"
    running = app.query_one(StatusBar).data.state in ("running", "awaiting_confirmation")

    def answered(go: bool | None) -> None:
        if go:
            app.branch_at(event_id)

    app.push_screen(BranchScreen(what, running), answered)


def branch_at(app: Host, event_id: int, source: Path | None = None) -> None:
    """Show the session (the one shown, or the log `source`) up to event `event_id` (its
    running agent stopped): the next message continues it from there as a new session."""
    from workbench.session.log import SessionLogError
    from workbench.session.resume import load_history
    from workbench.tui.host import SavedView
    from workbench.tui.saved_sessions import show_saved

    source = source or session_log_shown(app)
    if source is None:
        app.notify("No session to branch from yet.", severity="warning", markup=False)
        return
    try:
        history = load_history(source, upto=event_id)
    except (SessionLogError, ValueError) as exc:
        app.notify(f"Cannot branch here: {exc}", severity="error", markup=False)
        return
    app.action_new_session()
    app.load_events(history.events)
    app.diffs_from(Path(history.workspace))
    show_saved(app, SavedView(source, history.parent_id, history.upto))
    app.query_one(PromptInput).focus()


def rewind_requested(app: Host, message: RewindRequested) -> None:
    """`r` on a cell of the conversation."""
    rewind_at(app, message.event_id)


def rewind_here(app: Host) -> None:
    """Rewind the files to the conversation's current cell, asking first; then branch."""
    event_id = app.query_one(ConversationView).event_id_at_cursor()
    if event_id is None:
        app.notify("No cell to rewind to: pick one in the conversation.", markup=False)
        return
    rewind_at(app, event_id)


def rewind_at(app: Host, event_id: int) -> None:
    """Rewind the files to event `event_id` (asked first, see `rewind_flow.py`); then
    branch there."""
    from workbench.config.schema import CheckpointsConfig
    from workbench.tui.rewind_flow import rewind_here as flow_of

    source = session_log_shown(app)
    open_now = app.saved is None and app.backend is not None and source is not None
    end_session = app.backend.new_session if open_now and app.backend else None
    checkpoints = app.config.checkpoints if app.config is not None else CheckpointsConfig()
    flow = flow_of(app, event_id, source, checkpoints, end_session, app.branch_at)
    app.run_worker(flow, group="rewind", exclusive=True)
