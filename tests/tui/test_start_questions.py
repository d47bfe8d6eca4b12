"""What the TUI asks as a session starts: an untrusted project config's rules (shown verbatim and
escaped; Trust / Not now), a home folder named as the workspace, a resumed session's other
folder. The sandbox does not start before the questions are answered; a no quits with 13."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pilot_wait import holds, is_showing, waiter
from textual.widgets import Static

from workbench.config.load import load_config
from workbench.config.schema import Config
from workbench.exit_codes import WORKSPACE_REFUSED
from workbench.session.start_checks import StartQuestion, home_check, resumed_workspace
from workbench.testing.fake_backend import FakeBackend
from workbench.tui.app import create_app
from workbench.tui.screens.start import StartConfirmScreen, TrustProjectScreen

_until = waiter(10)
PROJECT = (
    "[security]\n"
    'allow = ["run:make*", "run:[bold]x[/bold] \\u001b[2J\\u001b]52;c;aGk=\\u0007"]\n'
    'deny = ["run:curl *"]\n'
)


def _config(tmp_path: Path) -> Config:
    project = tmp_path / "ws" / ".workbench" / "config.toml"
    project.parent.mkdir(parents=True, exist_ok=True)
    if not project.exists():
        project.write_text(PROJECT)
    env = {
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "WORKBENCH_DATA_DIR": os.environ["WORKBENCH_DATA_DIR"],  # the test's own
    }
    return load_config(env=env, overrides={"sandbox.workspace": str(tmp_path / "ws")})


def _shows(app: Any, screen: type, selector: str) -> bool:
    """The question's screen is up with `selector` composed and laid out (a click before the
    layout lands nowhere)."""
    if not isinstance(app.screen, screen):
        return False
    found = app.screen.query(selector)
    return bool(found) and found.first().region.height > 0


async def test_untrusted_project_rules_are_shown_escaped_and_trusted_with_t(
    tmp_path: Path,
) -> None:
    config = _config(tmp_path)
    assert config.security.allow == [] and config.security.deny == ["run:curl *"]
    backend = FakeBackend()
    app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: _shows(app, TrustProjectScreen, "#trust-rules"), "question")
        shown = str(app.screen.query_one("#trust-rules", Static).render())
        assert '"run:make*"' in shown and '"run:curl *"' in shown
        # Verbatim and escaped: markup is text, control characters are written out.
        assert '"run:[bold]x[/bold] \\u001b[2J\\u001b]52;c;aGk=\\u0007"' in shown
        assert "\x1b" not in shown and "\x07" not in shown
        await _until(pilot, lambda: "start" in backend.calls, "the sandbox's start")
        assert config.security.allow == []  # nothing applies before the answer
        await pilot.press("t")
        await _until(pilot, lambda: not isinstance(app.screen, TrustProjectScreen), "closing")
        assert "run:make*" in config.security.allow
    later = _config(tmp_path)  # trusted for later sessions too, until the file changes
    assert "run:make*" in later.security.allow and later.project_trust.trusted
    project = tmp_path / "ws" / ".workbench" / "config.toml"
    project.write_text(PROJECT.replace("make*", "make all*"))
    assert _config(tmp_path).security.allow == []


async def test_not_now_leaves_the_rules_unapplied(tmp_path: Path) -> None:
    config = _config(tmp_path)
    backend = FakeBackend()
    app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: is_showing(app, TrustProjectScreen), "the question")
        await pilot.press("enter")  # the focused button is "Not now"
        await _until(pilot, lambda: not isinstance(app.screen, TrustProjectScreen), "closing")
        assert config.security.allow == []
    assert _config(tmp_path).security.allow == []


async def test_rules_screen_lists_untrusted_rules_and_t_trusts_them(tmp_path: Path) -> None:
    """A user trial: after "Not now", ctrl+r showed only the deny rule; the waiting allow
    rules were nowhere in the TUI, and the way to trust them later was the CLI only."""
    from workbench.tui.screens.rules import RulesScreen

    project = tmp_path / "ws" / ".workbench" / "config.toml"
    project.parent.mkdir(parents=True)
    more = "".join(f', "run:tool{number}*"' for number in range(8))  # more than fit at 80x24
    project.write_text(PROJECT.replace('allow = ["run:make*"', f'allow = ["run:make*"{more}'))
    config = _config(tmp_path)
    app = create_app(config, FakeBackend(), clock=lambda: 0.0, image_mode="halfcell")
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: is_showing(app, TrustProjectScreen), "the question")
        await pilot.press("n")
        await _until(pilot, lambda: not isinstance(app.screen, TrustProjectScreen), "closing")
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: is_showing(app, RulesScreen), "the rules screen")
        screen = app.screen
        assert isinstance(screen, RulesScreen)
        untrusted = [row for row in screen.rows if row.kind == "untrusted"]
        assert (untrusted[0].rule, untrusted[0].line) == ("run:make*", 2)
        hint_widget = screen.query_one("#rules-hint", Static)
        assert "t review and trust" in str(hint_widget.render())
        await _until(pilot, lambda: hint_widget.region.height > 0, "the hint laid out")
        box = screen.query_one("#rules").region
        assert box.contains_region(hint_widget.region), (box, hint_widget.region)  # not cut
        screen.query_one("#rules-table").move_cursor(row=screen.rows.index(untrusted[0]))  # type: ignore[attr-defined]
        await pilot.press("d", "y")  # not removed from the file: it is not applied at all
        assert "not trusted" in str(screen.query_one("#rules-hint", Static).render())
        assert "make*" in (tmp_path / "ws" / ".workbench" / "config.toml").read_text()
        await pilot.press("t")
        await _until(pilot, lambda: is_showing(app, TrustProjectScreen), "trust screen")
        await pilot.press("t")
        await _until(pilot, lambda: not isinstance(app.screen, TrustProjectScreen), "closing")
        assert "run:make*" in config.security.allow
        await pilot.press("ctrl+r")
        await _until(pilot, lambda: is_showing(app, RulesScreen), "the rules screen")
        rows = app.screen.rows  # type: ignore[attr-defined]
        assert ("allow", "run:make*") in [(row.kind, row.rule) for row in rows]
        assert not [row for row in rows if row.kind == "untrusted"]


async def test_the_limits_wait_for_the_trust_question_to_close(tmp_path: Path) -> None:
    """A user trial: the sandbox's limits came as a 3 s notification while the person read the
    trust question, and were gone when it closed."""
    from workbench.tui.messages import ProgressChanged

    def shown() -> list[str]:
        return [n.message for n in app._notifications if "1024 processes" in n.message]

    app = create_app(_config(tmp_path), FakeBackend(), clock=lambda: 0.0, image_mode="halfcell")
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: is_showing(app, TrustProjectScreen), "the question")
        app.post_message(ProgressChanged("sandbox", "ready", "limits: 1024 processes"))
        await pilot.pause()
        assert shown() == []  # held while the question is up
        await pilot.press("n")
        await _until(pilot, lambda: bool(shown()), "the limits shown after the question")
        (note,) = [n for n in app._notifications if "1024 processes" in n.message]
        assert note.timeout >= 8


async def test_a_home_folder_is_asked_about_before_the_sandbox_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    question = home_check(home, named=True, confirmed=False, headless=False)
    assert question is not None
    for answer in ("n", "y"):
        await _answer_home_question(question, home, answer)


async def _answer_home_question(question: StartQuestion, home: Path, answer: str) -> None:
    backend = FakeBackend()
    app = create_app(None, backend, clock=lambda: 0.0, image_mode="halfcell")
    app.start_questions = [question]
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: _shows(app, StartConfirmScreen, "#start-body"), "question")
        body = str(app.screen.query_one("#start-body", Static).render())
        assert str(home) in body and "it holds .ssh/" in body and "read-only" in body
        await holds(pilot, lambda: "start" not in backend.calls, 0.5, "nothing starts unanswered")
        await pilot.press(answer)
        if answer == "y":
            await _until(pilot, lambda: "start" in backend.calls, "the sandbox's start")
            assert app.return_value is None
    if answer == "n":
        assert app.return_value == WORKSPACE_REFUSED and "start" not in backend.calls


async def test_resuming_in_another_folder_names_both(tmp_path: Path) -> None:
    logged, here = tmp_path / "logged", tmp_path / "here"
    logged.mkdir()
    here.mkdir()
    target, question = resumed_workspace(here, logged, "S1", confirmed=False, headless=False)
    assert target == logged.resolve() and question is not None
    backend = FakeBackend()
    app = create_app(None, backend, clock=lambda: 0.0, image_mode="halfcell")
    app.start_questions = [question]
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: _shows(app, StartConfirmScreen, "#start-body"), "question")
        body = str(app.screen.query_one("#start-body", Static).render())
        assert str(logged) in body and str(here) in body
        await pilot.press("escape")
    assert app.return_value == WORKSPACE_REFUSED and "start" not in backend.calls


async def test_a_long_resumed_folder_keeps_both_answers_on_screen(tmp_path: Path) -> None:
    """A user trial: the folder was in the yes button's label, so a long path made it as wide
    as the box and pushed "No, quit" off the screen at 80x24."""
    logged = tmp_path / "projects" / ("a-rather-long-project-folder-name" * 2) / "and-more"
    logged.mkdir(parents=True)
    _, question = resumed_workspace(tmp_path, logged, "S1", confirmed=False, headless=False)
    assert question is not None
    app = create_app(None, FakeBackend(), clock=lambda: 0.0, image_mode="halfcell")
    app.start_questions = [question]
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: _shows(app, StartConfirmScreen, "#start-no"), "question")
        box = app.screen.query_one("#start-confirm")
        yes, no = app.screen.query_one("#start-yes"), app.screen.query_one("#start-no")
        await _until(pilot, lambda: no.region.height > 0, "the buttons laid out")
        for button in (yes, no):
            assert box.region.contains_region(button.region), (button, button.region)
        assert str(logged) in str(app.screen.query_one("#start-body", Static).render())
        await pilot.press("n")
    assert app.return_value == WORKSPACE_REFUSED


async def test_a_long_list_scrolls_and_the_buttons_stay_on_screen(tmp_path: Path) -> None:
    project = tmp_path / "ws" / ".workbench" / "config.toml"
    project.parent.mkdir(parents=True)
    rules = ", ".join(f'"run:tool{number} --flag*"' for number in range(40))
    project.write_text(f"[security]\nallow = [{rules}]\n")
    config = _config(tmp_path)
    app = create_app(config, FakeBackend(), clock=lambda: 0.0, image_mode="halfcell")
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: _shows(app, TrustProjectScreen, "#trust-yes"), "question")
        button = app.screen.query_one("#trust-yes")
        await _until(pilot, lambda: button.region.height > 0, "the button laid out")
        assert button.region.bottom <= 24  # reachable at 80x24
        await pilot.click("#trust-yes")
        await _until(pilot, lambda: not isinstance(app.screen, TrustProjectScreen), "closing")
        assert len(config.security.allow) == 40
