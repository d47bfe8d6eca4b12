"""Opening the app's own screens from a key: help, the rules in effect, settings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import App

from workbench.tui.key_groups import key_groups
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.status import StatusBar

if TYPE_CHECKING:
    from workbench.tui.host import Host


def open_help(app: App[Any]) -> None:
    """Show every key binding, by where it works."""
    from workbench.tui.screens.help import HelpScreen

    if not isinstance(app.screen, HelpScreen):
        app.push_screen(HelpScreen(key_groups(app)))


def open_rules(app: Host) -> None:
    """Show the confirmation rules in effect, where each comes from; remove one there."""
    from workbench.tui.screens.rules import RulesScreen

    if app.config is None:
        app.notify("No configuration loaded: no rules to show.", markup=False)
        return
    if not isinstance(app.screen, RulesScreen):
        app.push_screen(RulesScreen(app.config, app.config_path))


def open_settings(app: Host) -> None:
    """Open the settings screen; saved, the status bar, the welcome and the backend follow."""
    from workbench.tui.screens.settings import SettingsScreen

    def saved(changed: bool | None) -> None:
        if not changed or app.config is None:
            return
        config = app.config
        app.query_one(StatusBar).set(model=config.llm.model, max_steps=config.agent.max_iterations)
        app.query_one(ConversationView).set_welcome(app.workspace_shown(), config.llm.model)
        if app.backend is not None:
            app.backend.settings_changed()

    app.push_screen(SettingsScreen(app.config, app.config_path), saved)
