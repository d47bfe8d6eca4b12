"""Letters typed where they do nothing reach the input box: with the Jupyter pane focused (F4,
or after Ctrl-N left the focus there) "Show me streaming" was lost (user trial)."""

from __future__ import annotations

from collections.abc import Callable

from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.prompt import PromptInput


async def test_letters_typed_in_the_jupyter_pane_go_to_the_input_box(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        prompt = app.query_one(PromptInput)
        await pilot.press("f4")
        await pilot.pause()
        app.query_one(JupyterPane).focus()
        await pilot.pause()
        await pilot.press("h", "i", "space", "t", "h", "e", "r", "e")
        await pilot.pause()
        assert prompt.text == "hi there" and prompt.has_focus


async def test_a_new_session_starts_in_the_input_box(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(JupyterPane).focus()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.query_one(PromptInput).has_focus
