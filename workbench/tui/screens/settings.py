"""The settings screen: model, base URL and API key, written to the config file (0600, its
comments kept) and applied to the running app at once."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

if TYPE_CHECKING:
    from workbench.config_schema import Config


_FIELDS = ("llm.model", "llm.base_url", "llm.api_key")


def environment_overrides(environ: Mapping[str, str] | None = None) -> list[str]:
    """The variables set in the environment that override a field of this screen."""
    from workbench.config import env_names

    environ = os.environ if environ is None else environ
    return [name for key in _FIELDS for name in env_names(key) if environ.get(name, "").strip()]


class SettingsScreen(ModalScreen[bool]):
    """Edit the LLM settings; ctrl+s saves, escape closes."""

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
        llm = self.config.llm if self.config is not None else None
        has_key = bool(llm and llm.api_key.get_secret_value())
        with Vertical(id="settings"):
            yield Static("Settings", id="settings-title")
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
                yield Button("Save (ctrl+s)", id="save", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Save or cancel."""
        if event.button.id == "save":
            self.action_save()
        else:
            self.dismiss(False)

    def changes(self) -> dict[str, str]:
        """Dotted key -> new value, for the fields that changed (an empty key field: unchanged)."""
        llm = self.config.llm if self.config is not None else None
        out: dict[str, str] = {}
        model = self.query_one("#model", Input).value.strip()
        base_url = self.query_one("#base_url", Input).value.strip()
        key = self.query_one("#api_key", Input).value.strip()
        if llm is None or model != llm.model:
            out["llm.model"] = model
        if llm is None or base_url != llm.base_url:
            out["llm.base_url"] = base_url
        if key:
            out["llm.api_key"] = key
        return out

    def action_save(self) -> None:
        """Write the changed settings; on a bad value say which and stay open."""
        from pydantic import SecretStr, ValidationError

        from workbench.config import ConfigError, save_setting

        error = self.query_one("#settings-error", Static)
        path = self.target()
        changes = self.changes()
        try:
            for key, value in changes.items():
                save_setting(path, key, value)
                if self.config is not None:
                    field = key.split(".", 1)[1]
                    setattr(
                        self.config.llm, field, SecretStr(value) if field == "api_key" else value
                    )
        except (ConfigError, ValidationError, OSError) as exc:
            error.update(f"Not saved: {exc}")
            return
        if changes:
            names = ", ".join(key.split(".", 1)[1] for key in changes)
            self.notify(f"Saved {names} to {path}", timeout=4, markup=False)
        self.dismiss(True)
