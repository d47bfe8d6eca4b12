"""Carrying out a slash command (`slash.py` parses them): each runs the app action its key runs
(`/new` is ctrl+n, `/rules` ctrl+r, ...); only `/cost`, `/diff` and the arguments of `/resume`
and `/model` have a few lines of their own here."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from workbench.config.schema import Config
from workbench.tui.slash import Refused, Run


class SlashTarget(Protocol):
    """What slash commands use of the app (`app.WorkbenchApp`; named here, not imported, so
    that the app, which imports this module, is not imported back)."""

    config: Config | None
    code_style: str

    @property
    def screen(self) -> Any:
        """The screen on top."""

    # Textual's own (their signatures are Textual's; any call here is one Textual takes).
    def notify(self, *args: Any, **kwargs: Any) -> Any:
        """Show a toast."""

    def query_one(self, *args: Any, **kwargs: Any) -> Any:
        """A widget of the app's screen."""

    def call_after_refresh(self, *args: Any, **kwargs: Any) -> Any:
        """Run a callback after the next refresh."""

    def run_worker(self, *args: Any, **kwargs: Any) -> Any:
        """Run work in the background."""

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        """Show a screen over the app."""

    # The workbench app's.
    def run_action_now(self, action: str) -> None:
        """Run an app action as a key binding names it."""

    def action_open_session(self) -> None:
        """The session picker."""

    def action_settings(self) -> None:
        """The settings screen."""

    def open_session_file(self, path: Path) -> None:
        """Show a saved session, read-only until a message continues it."""

    def session_log_shown(self) -> Path | None:
        """The log of the session on screen."""

    def _sessions_dir(self) -> Path: ...


SAME_AS_KEY = {
    "help": "help",
    "new": "new_session",
    "sessions": "open_session",
    "rewind": "rewind_here",
    "rules": "rules",
    "settings": "settings",
    "condense": "condense_now",
    "quit": "request_quit",
}
"""Commands that run the app action of a key binding, by the action's name."""


def run_slash(app: SlashTarget, parsed: Run | Refused) -> None:
    """Carry out `parsed` in `app` (a refused one: say why; nothing is sent)."""
    if isinstance(parsed, Refused):
        app.notify(parsed.why, title="Not a command", severity="warning", timeout=8, markup=False)
        return
    name, arg = parsed.command.name, parsed.arg
    if name in SAME_AS_KEY:
        app.run_action_now(SAME_AS_KEY[name])
    elif name == "resume":
        _resume(app, arg)
    elif name == "model":
        _model(app, arg)
    elif name == "cost":
        app.notify(cost_text(app), title="Cost", timeout=10, markup=False)
    elif name == "diff":
        _diff(app)


def _resume(app: SlashTarget, ref: str) -> None:
    """No id: the session picker (as ctrl+o); an id: that session, ready to continue."""
    if not ref:
        app.action_open_session()
        return
    from workbench.session.find import find_session

    try:
        path = find_session(app._sessions_dir(), ref)
    except ValueError as exc:
        app.notify(f"/resume: {exc}", severity="error", markup=False)
        return
    app.open_session_file(path)


def _model(app: SlashTarget, name: str) -> None:
    """The settings screen, its model field focused (filled with `name` if given)."""
    from textual.widgets import Input

    from workbench.tui.screens.settings import SettingsScreen

    app.action_settings()

    def focus_model() -> None:
        screen = app.screen
        if isinstance(screen, SettingsScreen):
            field = screen.query_one("#model", Input)
            if name:
                field.value = name
            field.focus()

    app.call_after_refresh(focus_model)


def cost_text(app: SlashTarget) -> str:
    """The session's steps, tokens and cost so far (as the status bar counts them)."""
    from workbench.tui.widgets.status import StatusBar

    data = app.query_one(StatusBar).data
    model = data.model or "no model"
    limit = ""
    if app.config is not None and app.config.budget.max_cost_usd:
        limit = f" of ${app.config.budget.max_cost_usd:.2f} allowed"
    return (
        f"{data.steps} step(s) with {model}: {data.prompt_tokens:,} prompt + "
        f"{data.completion_tokens:,} completion tokens, ${data.cost:.4f}{limit}."
    )


def session_diff(log: Path) -> tuple[str, str]:
    """(a title, the unified diff) of what the session at `log` changed in its workspace, from
    its first checkpoint to its last. Blocks (git runs): call it from a thread."""
    from sandbox.checkpoints import CheckpointStore
    from workbench.checkpoints.points import CheckpointCommandError, checkpoints_of
    from workbench.session.log import read

    found = checkpoints_of(read(log))
    if not found.steps or not (found.store / "HEAD").is_file():
        raise CheckpointCommandError(
            f"session {found.session_id} has no checkpoints (they were off, or git is "
            "missing in the sandbox): no diff to show."
        )
    store = CheckpointStore(found.store, found.workspace, key="diff")
    first, last = found.steps[0], found.steps[-1]
    title = f"What session {found.session_id} changed"
    return title, store.diff(first.commit, last.commit)


def _diff(app: SlashTarget) -> None:
    """What the session shown changed, on a screen of its own."""
    log = app.session_log_shown()
    if log is None:
        app.notify("No session yet: nothing has changed.", markup=False)
        return

    async def show() -> None:
        import asyncio

        from workbench.tui.screens.diff import DiffScreen

        try:
            title, diff = await asyncio.to_thread(session_diff, log)
        except Exception as exc:  # a log or store that cannot be read: say so
            app.notify(f"/diff: {exc}", severity="error", markup=False)
            return
        await app.push_screen(DiffScreen(title, diff, app.code_style))

    app.run_worker(show(), group="diff", exclusive=True)
