"""Settings written to the config file (0600, comments kept); a bad theme file is reported."""

from __future__ import annotations

import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from tui_support import make_config

from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.screens.settings import SettingsScreen


async def test_settings_save_keeps_comments_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# my notes\n[llm]\nmodel = "openai/old"  # the old one\n')
    config = make_config()
    app = create_app(
        config,
        None,
        clock=lambda: 0.0,
        image_mode="halfcell",
        user_themes=tmp_path / "none",
        config_path=path,
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, SettingsScreen)
        app.screen.query_one("#model").value = "openai/new-model"  # type: ignore[attr-defined]
        app.screen.query_one("#api_key").value = "sk-secret-123456"  # type: ignore[attr-defined]
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, SettingsScreen)
    text = path.read_text()
    assert "# my notes" in text and 'model = "openai/new-model"' in text
    assert 'api_key = "sk-secret-123456"' in text
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert config.llm.model == "openai/new-model"


async def test_settings_say_when_the_environment_wins_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from textual.widgets import Static

    app = create_app(make_config(), None, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        assert not app.screen.query("#settings-env")  # nothing set: no note
        await pilot.press("escape")
        monkeypatch.setenv("LLM_MODEL", "openai/from-env")
        monkeypatch.setenv("LLM_API_KEY", "sk-env")
        monkeypatch.setenv("LLM_BASE_URL", "  ")  # blank counts as unset
        await pilot.press("ctrl+s")
        note = str(app.screen.query_one("#settings-env", Static).render())
    assert note.startswith("Set in your environment: LLM_MODEL, LLM_API_KEY.")
    assert "wins over the file" in note


async def test_bad_theme_file_gives_one_notification(
    tmp_path: Path, app_factory: Callable[..., WorkbenchApp]
) -> None:
    themes = tmp_path / "themes"
    themes.mkdir()
    (themes / "broken.toml").write_text("name = 'broken'\n[colors]\nprimary = 'not-a-colour'\n")
    (themes / "mine.toml").write_text("name = 'mine'\n[colors]\nprimary = '#123456'\n")
    config = make_config()
    config.ui.theme = "missing-theme"
    app = create_app(config, None, clock=lambda: 0.0, image_mode="halfcell", user_themes=themes)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        notes = list(app._notifications)
        assert len(notes) == 1
        assert "broken.toml" in notes[0].message and "not a colour" in notes[0].message
        assert "missing-theme" in notes[0].message
        assert app.theme == "workbench-dark"
        assert "mine" in app.available_themes
