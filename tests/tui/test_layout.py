"""At 80x24 the shell pane is a few rows high: its newest line stays in view when the
confirmation panel takes room, and a rejected command says it did not run."""

from __future__ import annotations

from collections.abc import Callable

from sandbox.protocol import CmdRunAction
from workbench.events import ActionEvent, ConfirmationDecisionEvent, ConfirmationRequestEvent
from workbench.tui.app import WorkbenchApp
from workbench.tui.widgets.shell import ShellPane


def _visible(app: WorkbenchApp) -> list[str]:
    view = app.query_one(ShellPane).output
    top, height = round(view.scroll_y), view.scrollable_content_region.height
    return view.lines[top : top + height]


async def test_the_newest_shell_line_stays_in_view(
    app_factory: Callable[..., WorkbenchApp],
) -> None:
    app = app_factory()
    async with app.run_test(size=(80, 24)) as pilot:
        app.feed_event(
            ActionEvent(
                id=1,
                tool_name="execute_bash",
                tool_call_id="c1",
                action=CmdRunAction(command="seq 20"),
            )
        )
        app.query_one(ShellPane).output.append("".join(f"{n}\n" for n in range(1, 21)))
        await pilot.pause()
        assert "20" in _visible(app)
        rm = ActionEvent(
            id=2,
            tool_name="execute_bash",
            tool_call_id="c2",
            action=CmdRunAction(command="rm -rf b"),
        )
        app.feed_event(rm)
        app.feed_event(ConfirmationRequestEvent(id=3, cause=2, risk="HIGH", reason="rm -rf"))
        await pilot.pause()
        await pilot.pause()
        assert _visible(app)[-1] == "$ rm -rf b"  # the pane shrank; its end is still shown
        app.feed_event(
            ConfirmationDecisionEvent(id=4, cause=2, approved=False, rule="user", reason="no")
        )
        await pilot.pause()
        await pilot.pause()
        assert _visible(app)[-1] == "(rejected: not run)"
        assert app.query_one(ShellPane).state == "rejected"
