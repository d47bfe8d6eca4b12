"""The settings screen's policy fields (issue 14, friction 7): confirmation policy, risk
threshold, streaming, theme (saved; ours listed first) and the step limit, written to the
config file with its comments kept and applied to the running app and session at once."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Checkbox, Input, Select, Static
from tui_support import make_config

from workbench.config.load import load_config
from workbench.testing.fake_backend import FakeBackend
from workbench.tui.app import create_app
from workbench.tui.screens.settings import SettingsScreen
from workbench.tui.widgets.status import StatusBar

FILE = '# my notes\n[llm]\nmodel = "openai/test-model"  # the one I use\n'


async def test_policy_streaming_theme_and_step_limit_are_saved_and_applied(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FILE)
    config = make_config()
    backend = FakeBackend()
    app = create_app(
        config, backend, image_mode="halfcell", user_themes=tmp_path / "none", config_path=path
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        screen = app.screen
        assert isinstance(screen, SettingsScreen)
        screen.query_one("#confirmation", Select).value = "always"
        screen.query_one("#risk_threshold", Select).value = "MEDIUM"
        screen.query_one("#stream", Checkbox).value = True
        screen.query_one("#theme", Select).value = "workbench-light"
        screen.query_one("#max_iterations", Input).value = "7"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, SettingsScreen)
        assert app.theme == "workbench-light"
        assert app.query_one(StatusBar).data.max_steps == 7
    assert "settings_changed" in backend.calls
    security = config.security
    assert (security.confirmation, security.risk_threshold) == ("always", "MEDIUM")
    assert config.llm.stream and config.agent.max_iterations == 7
    assert config.ui.theme == "workbench-light"
    text = path.read_text()
    assert "# my notes" in text and "# the one I use" in text
    later = load_config(path, env={})
    assert later.security.confirmation == "always" and later.security.risk_threshold == "MEDIUM"
    assert later.llm.stream and later.agent.max_iterations == 7
    assert later.ui.theme == "workbench-light"


async def test_a_bad_step_limit_saves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(FILE)
    app = create_app(
        make_config(), None, image_mode="halfcell", user_themes=tmp_path / "none", config_path=path
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        screen = app.screen
        screen.query_one("#confirmation", Select).value = "never"
        screen.query_one("#max_iterations", Input).value = "0"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen
        error = str(screen.query_one("#settings-error", Static).render())
    assert "max_iterations" in error and ">= 1" in error
    assert path.read_text() == FILE  # not even the valid confirmation change


async def test_the_theme_list_shows_ours_first(tmp_path: Path) -> None:
    user_themes = tmp_path / "themes"
    user_themes.mkdir()
    app = create_app(make_config(), None, image_mode="halfcell", user_themes=user_themes)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+s")
        theme = app.screen.query_one("#theme", Select)
        names = [value for _, value in theme._options if value != Select.BLANK]
    ours = sorted(app.loaded_themes.themes)
    assert len(ours) >= 3 and names[: len(ours)] == ours
    assert "textual-dark" in names[len(ours) :]
