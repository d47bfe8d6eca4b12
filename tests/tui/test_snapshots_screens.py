"""Snapshots of the screens around the conversation (issue 14, acceptance 2): the welcome, the
help screen and the rules screen, at 80x24 and 160x48. Each docstring says what the picture
should show. Update baselines with `--snapshot-update` and look at the SVGs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tui_support import confirm_events

from workbench.config.load import load_config
from workbench.config.project_trust import trust
from workbench.tui.app import WorkbenchApp, create_app

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]
USER = """# my own settings
[llm]
model = "openai/test-model"

[security]
risk_threshold = "MEDIUM"
allow = [
    "run:ls*",  # listing is fine
    "run:git status*",
]
deny = ["run:git push*"]
"""
PROJECT = """# the team's rules
[security]
allow = [
    "run:npm test*",
    "edit:/home/me/project/src/*",
]
ask = ["run:make deploy*"]
"""


class TestOnboarding:
    """The welcome and the help screen."""

    @pytest.mark.parametrize("size", SIZES)
    def test_welcome(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The empty conversation: "No task yet", the workspace (also in the border title),
        the model, and the three keys: enter, F1, esc esc. F1 Help in the footer."""
        assert snap_compare(app_factory(), terminal_size=size)

    @pytest.mark.parametrize("size", SIZES)
    def test_help(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The help screen over the dimmed app: "Everywhere" first (F2 tools ... ctrl+q quit,
        esc esc, the palette), then the input box's keys; at 160x48 also the conversation's
        and the confirmation panel's."""
        assert snap_compare(app_factory(), terminal_size=size, press=["f1"])

    @pytest.mark.parametrize("size", SIZES)
    def test_confirm_keys(
        self, snap_compare: Any, app_factory: Callable[..., WorkbenchApp], size: tuple[int, int]
    ) -> None:
        """The confirmation panel's keys: y approve, n reject, r reject and say why, a always
        allow."""

        async def before(pilot: Any) -> None:
            for event in confirm_events():
                pilot.app.feed_event(event)
            await pilot.pause()

        assert snap_compare(app_factory(), terminal_size=size, run_before=before)


class TestRules:
    """The rules screen."""

    @pytest.mark.parametrize("size", SIZES)
    def test_rules(
        self,
        snap_compare: Any,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        size: tuple[int, int],
    ) -> None:
        """The policy row (risky, MEDIUM, from ~/cfg/config.toml:6), deny, ask and allow
        rules, each with its source: the user's file and line, the project's file and line;
        the cursor on the first row; the hint "d remove ... esc close"."""
        monkeypatch.setenv("HOME", str(tmp_path))
        (tmp_path / "cfg").mkdir()
        (tmp_path / "cfg" / "config.toml").write_text(USER)
        project = tmp_path / "project" / ".workbench" / "config.toml"
        project.parent.mkdir(parents=True)
        project.write_text(PROJECT)
        trust(project, project.read_bytes())  # reviewed (records: the test's data dir)
        config = load_config(
            env={
                "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
                "WORKBENCH_DATA_DIR": os.environ["WORKBENCH_DATA_DIR"],
            },
            overrides={"sandbox.workspace": str(tmp_path / "project")},
        )
        app = create_app(
            config,
            None,
            clock=lambda: 0.0,
            image_mode="halfcell",
            user_themes=tmp_path / "no-themes",
            config_path=tmp_path / "cfg" / "config.toml",
        )
        assert snap_compare(app, terminal_size=size, press=["ctrl+r"])
