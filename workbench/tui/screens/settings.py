"""The settings screen: model, base URL and API key; the confirmation policy and its risk
threshold; streaming; the theme (ours first); the step limit. Written to the config file (0600,
its comments kept) and applied to the running app at once (the step limit to the running
session too)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

if TYPE_CHECKING:
    from workbench.config.schema import Config


_FIELDS = ("llm.model", "llm.base_url", "llm.api_key")
"""The fields an environment variable may override (said on the screen)."""
CONFIRMATION = (
    ("always: before every action", "always"),
    ("risky: at the threshold and above", "risky"),
    ("never (deny rules still apply)", "never"),
)
RISKS = (("LOW", "LOW"), ("MEDIUM", "MEDIUM"), ("HIGH", "HIGH"))


def theme_choices(ours: list[str], others: list[str]) -> list[str]:
    """Theme names for the list: workbench's own (shipped and the person's) first, sorted,
    then Textual's."""
    first = sorted(ours)
    return first + sorted(name for name in others if name not in first)


def environment_overrides(environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables set in the environment that override a field of this screen."""
    from workbench.config.keys import env_names

    environ = os.environ if environ is None else environ
    return [name for key in _FIELDS for name in env_names(key) if environ.get(name, "").strip()]


class SettingsScreen(ModalScreen[bool]):
    """Edit the settings; ctrl+s saves, escape closes."""

    DEFAULT_CSS = """
    #settings-form { height: auto; max-height: 60vh; }
    .settings-row { height: 1; }
    .settings-label { width: 16; color: $text-muted; }
    .settings-row Select, .settings-row Input { width: 1fr; }
    #settings .settings-row Input { margin-bottom: 0; }
    #settings-error { display: none; }
    #settings-error.-shown { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(False)", "Close"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(self, config: Config | None, path: Path | None = None) -> None:
        super().__init__()
        self.config = config
        self.path = path

    def target(self) -> Path:
        """The config file that will be written."""
        from workbench.paths import default_config_file

        if self.path is not None:
            return self.path
        if self.config is not None and self.config.source_file is not None:
            return self.config.source_file
        return default_config_file()

    def compose(self) -> ComposeResult:
        """The form."""
        config = self.config
        llm = config.llm if config is not None else None
        has_key = bool(llm and llm.api_key.get_secret_value())
        with Vertical(id="settings"):
            yield Static("Settings", id="settings-title")
            with VerticalScroll(id="settings-form"):
                yield Label("Model (provider/name, e.g. openai/gpt-4o)")
                yield Input(
                    llm.model if llm else "", id="model", placeholder="openai/gpt-4o", compact=True
                )
                yield Label("Base URL (empty: the provider's default)")
                yield Input(
                    llm.base_url if llm else "",
                    id="base_url",
                    placeholder="http://127.0.0.1:8000/v1",
                    compact=True,
                )
                yield Label("API key (stored in the config file, readable only by you)")
                yield Input(
                    "",
                    id="api_key",
                    password=True,
                    placeholder="•••••• set; type to replace" if has_key else "not set",
                    compact=True,
                )
                yield from self._policy_fields()
            if overridden := environment_overrides():
                names = ", ".join(overridden)
                yield Static(
                    f"Set in your environment: {names}. It wins over the file at the next start.",
                    id="settings-env",
                    markup=False,
                )
            yield Static(f"File: {self.target()}", id="settings-file", markup=False)
            yield Static("", id="settings-error", markup=False)
            with Horizontal(id="settings-buttons"):
                yield Button("Save (ctrl+s)", id="save", variant="primary", compact=True)
                yield Button("Cancel (esc)", id="cancel", compact=True)

    def _policy_fields(self) -> ComposeResult:
        """Confirmation, risk threshold, streaming, theme, step limit: one row each."""
        from workbench.config.schema import Config

        config = self.config or Config()
        rows: list[tuple[str, Select[str] | Checkbox | Input]] = [
            (
                "Confirmation",
                Select(
                    CONFIRMATION,
                    value=config.security.confirmation,
                    id="confirmation",
                    allow_blank=False,
                    compact=True,
                ),
            ),
            (
                "Risk threshold",
                Select(
                    RISKS,
                    value=config.security.risk_threshold,
                    id="risk_threshold",
                    allow_blank=False,
                    compact=True,
                ),
            ),
            (
                "Streaming",
                Checkbox(
                    "show replies as they are written",
                    config.llm.stream,
                    id="stream",
                    compact=True,
                ),
            ),
            (
                "Theme",
                Select(
                    self._themes(), value=self._theme(), id="theme", allow_blank=False, compact=True
                ),
            ),
            (
                "Step limit",
                Input(
                    str(config.agent.max_iterations),
                    id="max_iterations",
                    type="integer",
                    compact=True,
                ),
            ),
        ]
        for label, control in rows:
            with Horizontal(classes="settings-row"):
                yield Label(label, classes="settings-label")
                yield control

    def _themes(self) -> list[tuple[str, str]]:
        app = self.app
        loaded = getattr(app, "loaded_themes", None)
        ours = list(loaded.themes) if loaded is not None else []
        names = theme_choices(ours, list(app.available_themes))
        return [(f"{name}  (workbench)" if name in ours else name, name) for name in names]

    def _theme(self) -> str:
        wanted = self.config.ui.theme if self.config is not None else self.app.theme
        return wanted if wanted in self.app.available_themes else self.app.theme

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Save or cancel."""
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(False)

    def changes(self) -> dict[str, str | bool | int]:
        """Dotted key -> new value, for the fields that changed (an empty key field: unchanged)."""
        from workbench.config.schema import Config

        config = self.config or Config()
        llm = config.llm
        out: dict[str, str | bool | int] = {}
        model = self.query_one("#model", Input).value.strip()
        base_url = self.query_one("#base_url", Input).value.strip()
        key = self.query_one("#api_key", Input).value.strip()
        if self.config is None or model != llm.model:
            out["llm.model"] = model
        if self.config is None or base_url != llm.base_url:
            out["llm.base_url"] = base_url
        if key:
            out["llm.api_key"] = key
        chosen: dict[str, str | bool | int] = {
            "security.confirmation": str(self.query_one("#confirmation", Select).value),
            "security.risk_threshold": str(self.query_one("#risk_threshold", Select).value),
            "llm.stream": self.query_one("#stream", Checkbox).value,
            "ui.theme": str(self.query_one("#theme", Select).value),
        }
        steps = self.query_one("#max_iterations", Input).value.strip()
        chosen["agent.max_iterations"] = int(steps) if steps.lstrip("-").isdigit() else steps
        for dotted, value in chosen.items():
            section, field = dotted.split(".")
            if value != getattr(getattr(config, section), field):
                out[dotted] = value
        return out

    def action_save(self) -> None:
        """Write the changed settings; on a bad value say which and stay open."""
        from pydantic import SecretStr, ValidationError

        from workbench.config.edit import check_setting, save_setting
        from workbench.config.load import ConfigError

        error = self.query_one("#settings-error", Static)
        path = self.target()
        changes = self.changes()
        try:
            for key, value in changes.items():  # all checked before any is written
                check_setting(path, key, value)
            for key, value in changes.items():
                save_setting(path, key, value)
                if self.config is not None:
                    section, field = key.split(".", 1)
                    stored = SecretStr(str(value)) if field == "api_key" else value
                    setattr(getattr(self.config, section), field, stored)
        except (ConfigError, ValidationError, OSError) as exc:
            error.update(f"Not saved: {exc}")
            error.add_class("-shown")
            return
        if "ui.theme" in changes:
            self.app.theme = str(changes["ui.theme"])
        if changes:
            names = ", ".join(key.split(".", 1)[1] for key in changes)
            self.notify(f"Saved {names} to {path}", timeout=4, markup=False)
        self.dismiss(bool(changes))
