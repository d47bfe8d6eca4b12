"""Typing never answers the confirmation panel: a person typing "okay" into an empty input box
as a HIGH-risk `rm -rf` was shown approved it with the word's "y" (found in a user trial).
Letters that reach the panel soon after it took the focus by itself, and any letter that is no
answer, go on into the input box."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from sandbox.protocol import CmdRunAction
from workbench.events import ActionEvent, ConfirmationRequestEvent
from workbench.testing.fake_backend import FakeBackend
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets import confirm
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.prompt import PromptInput


def _ask(app: WorkbenchApp, id: int) -> None:
    action = CmdRunAction(command=f"rm -rf logs{id}")
    app.feed_event(
        ActionEvent(id=id, tool_name="execute_bash", tool_call_id=f"c{id}", action=action)
    )
    app.feed_event(ConfirmationRequestEvent(id=id + 1, cause=id, risk="HIGH", reason="rm -rf"))


class _Clock:
    """The panel's clock, moved on at will: no test depends on how fast the machine types."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def monotonic(self) -> float:
        return time.monotonic() + self.ahead


def _app(app_factory: Callable[..., WorkbenchApp]) -> tuple[WorkbenchApp, FakeBackend]:
    app = app_factory()
    backend = FakeBackend()
    app.backend = backend
    return app, backend


async def test_a_word_typed_as_the_panel_appears_goes_to_the_input_box(
    app_factory: Callable[..., WorkbenchApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confirm, "ARM_S", 60)  # the typing is within the moment, however slow
    clock = _Clock()
    monkeypatch.setattr(confirm, "time", clock)
    app, backend = _app(app_factory)
    async with app.run_test(size=(80, 24)) as pilot:
        prompt, panel = app.query_one(PromptInput), app.query_one(ConfirmPanel)
        prompt.focus()
        _ask(app, 1)
        await pilot.pause()
        assert panel.has_focus  # nobody was typing: it takes the focus
        await pilot.press("o", "k", "a", "y")
        await pilot.pause()
        assert backend.answers == [] and panel.request is not None
        assert prompt.text == "okay" and prompt.has_focus
        # Reached on purpose, after a moment: y answers.
        clock.ahead = 61
        panel.focus()
        await pilot.press("y")
        await pilot.pause()
        assert backend.answers == ["approve"]


async def test_answer_letters_within_the_moment_are_typing_too(
    app_factory: Callable[..., WorkbenchApp], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(confirm, "ARM_S", 60)  # "within the moment", however slow the machine
    app, backend = _app(app_factory)
    async with app.run_test(size=(80, 24)) as pilot:
        prompt, panel = app.query_one(PromptInput), app.query_one(ConfirmPanel)
        prompt.focus()
        _ask(app, 1)
        await pilot.pause()
        await pilot.press("y", "e", "s")  # "yes" typed a beat too late for the input box
        await pilot.pause()
        assert backend.answers == [] and prompt.text == "yes"
        assert "typing?" in str(panel.query_one("#confirm-keys").render())


async def test_a_letter_that_is_no_answer_goes_to_the_input_box_even_later(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    app, backend = _app(app_factory)  # ARM_S is 0 here: the panel answers at once
    async with app.run_test(size=(80, 24)) as pilot:
        prompt, panel = app.query_one(PromptInput), app.query_one(ConfirmPanel)
        prompt.focus()
        _ask(app, 1)
        await pilot.pause()
        await pilot.press("h", "e", "y")  # the y follows the typing it came with
        await pilot.pause()
        assert backend.answers == [] and prompt.text == "hey"
        panel.focus()
        await pilot.press("n")
        await pilot.pause()
        assert backend.answers == ["reject"]
