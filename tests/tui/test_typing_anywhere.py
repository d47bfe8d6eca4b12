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


async def test_the_status_bar_says_when_the_provider_does_not_answer(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    """`llm ✓` stayed while every call was refused (it only meant the library was loaded)."""
    from workbench.events import ErrorEvent, LLMCallEvent, LLMRetryEvent
    from workbench.tui.widgets.status import StatusBar

    app = app_factory()
    async with app.run_test(size=(120, 40)) as pilot:
        status = app.query_one(StatusBar)
        status.set(llm="ready")
        app.feed_event(
            LLMRetryEvent(
                id=1, model="m", retry=1, wait_s=2.0, error_kind="server", message="HTTP 503"
            )
        )
        assert status.data.llm == "retrying"
        app.feed_event(ErrorEvent(id=2, error_kind="llm_refused", message="cannot reach it"))
        await pilot.pause()
        assert status.data.llm == "failing" and "llm failing" in status.render().plain
        app.feed_event(
            LLMCallEvent(
                id=3, model="m", prompt_tokens=1, completion_tokens=1, cost=0, latency_ms=1
            )
        )
        assert status.data.llm == "ready"


def test_a_cut_output_counts_the_lines_the_command_printed() -> None:
    """`seq 1 3000` showed "1827 lines": the lines kept, with no hint of the cut."""
    import re

    from sandbox.protocol import CmdOutputObservation
    from sandbox.truncate import truncate_middle
    from workbench.tools.registry import REGISTRY

    content = truncate_middle("".join(f"{n}\n" for n in range(1, 3001)), 10_000)
    observation = CmdOutputObservation(content=content, command="seq 1 3000", exit_code=0)
    cell = REGISTRY.for_observation(observation).observation_cell("e1", observation)
    assert cell is not None
    found = re.search(r"(\d+) lines, middle cut", cell.title)
    assert found and abs(int(found.group(1)) - 3000) <= 2, cell.title
