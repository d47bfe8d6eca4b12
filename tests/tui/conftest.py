"""Fixtures of the TUI tests (their fixed sessions and helpers are in `tui_support.py`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tui_support import make_config

from workbench.tui.app import WorkbenchApp, create_app


@pytest.fixture
def app_factory(tmp_path: Path) -> Callable[..., WorkbenchApp]:
    """Build the app as the CLI does, with a fixed clock and half-cell images."""

    def build(theme: str | None = None, **kwargs: object) -> WorkbenchApp:
        config = make_config()
        config.sandbox.workspace = "/home/me/project"  # shown in the welcome and the border
        if theme is not None:
            config.ui.theme = theme
        app = create_app(
            config,
            None,
            clock=lambda: 0.0,
            image_mode="halfcell",
            user_themes=tmp_path / "no-themes",
            config_path=Path("/home/me/.config/workbench/config.toml"),
            **kwargs,
        )
        return app

    return build


@pytest.fixture(autouse=True)
def _no_cursor_blink_in_snapshots(request: pytest.FixtureRequest) -> Iterator[None]:
    """Snapshot tests draw text cursors steadily: under load a blink could decide the picture."""
    if "snap_compare" not in request.fixturenames:
        yield
        return
    from textual.widgets import Input, TextArea

    saved = [(cls, cls.cursor_blink._default) for cls in (Input, TextArea)]  # type: ignore[attr-defined]
    for cls, _ in saved:
        cls.cursor_blink._default = False  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for cls, default in saved:
            cls.cursor_blink._default = default  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _panel_answers_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pilot tests answer the confirmation panel as soon as it shows, faster than a person
    could; the tests of the typing guard (`test_confirm_typing.py`) set it back themselves."""
    from workbench.tui.widgets import confirm

    monkeypatch.setattr(confirm, "ARM_S", 0.0)
