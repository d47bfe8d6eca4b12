"""The rules screen (issue 14, friction 5): every rule in effect with its source (default
policy, the person's config file and line, the project's file and line, this session), and a
rule removed there, from what the agent applies and from its file, the file's comments kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.config.load import load_config
from workbench.config.project_trust import trust
from workbench.config.schema import Config
from workbench.security.rule_sources import rules_in_effect
from workbench.tui.app import create_app
from workbench.tui.screens.rules import RulesScreen

USER = """# my own settings
[llm]
model = "openai/test-model"

[security]
# things I trust everywhere
allow = [
    "run:ls*",  # listing is fine
    "run:git status*",
]
deny = ["run:git push*"]
"""
PROJECT = """# the team's rules
[security]
allow = [
    # the test runner
    "run:npm test*",
    "run:make*",
]
"""


def _config(tmp_path: Path, env: dict[str, str] | None = None) -> Config:
    (tmp_path / "cfg").mkdir(exist_ok=True)
    (tmp_path / "cfg" / "config.toml").write_text(USER)
    project = tmp_path / "ws" / ".workbench" / "config.toml"
    project.parent.mkdir(parents=True, exist_ok=True)
    project.write_text(PROJECT)
    trust(project, project.read_bytes())  # the person reviewed it (records: the test's data dir)
    data_dir = os.environ["WORKBENCH_DATA_DIR"]
    environ = {"WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"), "WORKBENCH_DATA_DIR": data_dir}
    environ |= env or {}
    return load_config(env=environ, overrides={"sandbox.workspace": str(tmp_path / "ws")})


def test_each_rule_names_its_source_and_line(tmp_path: Path) -> None:
    config = _config(tmp_path)
    config.security.allow.append("run:echo hi")  # added for this session only
    rows = {(r.kind, r.rule): (r.source, r.path, r.line) for r in rules_in_effect(config, env={})}
    user, project = tmp_path / "cfg" / "config.toml", tmp_path / "ws" / ".workbench" / "config.toml"
    policy = next(key for key in rows if key[0] == "policy")
    assert policy == ("policy", "confirmation = risky: ask at risk HIGH and above")
    assert rows[policy] == ("default policy", None, None)
    assert rows[("allow", "run:ls*")] == ("user config", user, 8)
    assert rows[("allow", "run:git status*")] == ("user config", user, 9)
    assert rows[("deny", "run:git push*")] == ("user config", user, 11)
    assert rows[("allow", "run:npm test*")] == ("project config", project, 5)
    assert rows[("allow", "run:make*")] == ("project config", project, 6)
    assert rows[("allow", "run:echo hi")] == ("session", None, None)


def test_the_policy_set_in_a_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "config.toml").write_text(
        '[llm]\nmodel = "m"\n[security]\nconfirmation = "always"\n'
    )
    config = load_config(env={"WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg")})
    (policy,) = [r for r in rules_in_effect(config, env={}) if r.kind == "policy"]
    assert (policy.rule, policy.source, policy.line) == ("confirmation = always", "user config", 4)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_removing_a_rule_on_the_screen(tmp_path: Path, size: tuple[int, int]) -> None:
    config = _config(tmp_path)
    app = create_app(config, None, image_mode="halfcell", user_themes=tmp_path / "none")
    project = tmp_path / "ws" / ".workbench" / "config.toml"
    async with app.run_test(size=size) as pilot:
        await pilot.press("ctrl+r")
        screen = app.screen
        assert isinstance(screen, RulesScreen)
        rules = [row.rule for row in screen.rows]
        screen.query_one("#rules-table").move_cursor(row=rules.index("run:npm test*"))  # type: ignore[attr-defined]
        await pilot.press("d")
        assert "run:npm test*" in config.security.allow  # not before y
        await pilot.press("n")
        await pilot.press("d", "y")
        await pilot.pause()
        assert "run:npm test*" not in config.security.allow
        assert "run:npm test*" not in [row.rule for row in screen.rows]
        # The policy row cannot be removed; d says where it is changed.
        screen.query_one("#rules-table").move_cursor(row=0)  # type: ignore[attr-defined]
        await pilot.press("d", "y")
        assert screen.rows[0].kind == "policy"
        await pilot.press("escape")
        assert not isinstance(app.screen, RulesScreen)
    text = project.read_text()
    assert "npm test" not in text
    assert "# the team's rules" in text and "# the test runner" in text and '"run:make*"' in text
    # The next session does not have it either.
    later = _config_keep(tmp_path)
    assert "run:npm test*" not in later.security.allow and "run:make*" in later.security.allow


def _config_keep(tmp_path: Path) -> Config:
    # The person's own removal kept the edited file trusted: its other allow rules still apply.
    data_dir = os.environ["WORKBENCH_DATA_DIR"]
    environ = {"WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"), "WORKBENCH_DATA_DIR": data_dir}
    return load_config(env=environ, overrides={"sandbox.workspace": str(tmp_path / "ws")})


async def test_a_rule_from_the_environment_is_not_removed_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBENCH_SECURITY_DENY", "run:curl*")
    config = _config(tmp_path, {"WORKBENCH_SECURITY_DENY": "run:curl*"})
    app = create_app(config, None, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("ctrl+r")
        screen = app.screen
        assert isinstance(screen, RulesScreen)
        index = [row.rule for row in screen.rows].index("run:curl*")
        screen.query_one("#rules-table").move_cursor(row=index)  # type: ignore[attr-defined]
        await pilot.press("d", "y")
        hint = str(screen.query_one("#rules-hint").render())  # type: ignore[attr-defined]
    assert "WORKBENCH_SECURITY_DENY" in hint
    assert config.security.deny == ["run:curl*"]
