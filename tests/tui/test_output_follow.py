"""The shell's output view keeps its last line in view while it follows the output, whatever
order the layout and the scrolls come in (under load they come in any order)."""

from __future__ import annotations

from typing import Any

from pilot_wait import holds, waiter
from textual.app import App, ComposeResult

from workbench.tui.widgets.output_view import OutputView

_until = waiter(30)


class _OneView(App[None]):
    def compose(self) -> ComposeResult:
        yield OutputView(id="out")


async def _scrolled_to_the_end(pilot: Any) -> OutputView:
    """The view, once 30 lines (more than it shows) are in and it has followed them down."""
    view = pilot.app.query_one(OutputView)
    view.append("".join(f"line {n}\n" for n in range(30)))
    await _until(pilot, lambda: view.scroll_y == view.max_scroll_y > 0, "the end")
    return view


async def test_a_following_view_drawn_above_its_end_goes_to_the_end() -> None:
    app = _OneView()
    async with app.run_test(size=(40, 6)) as pilot:
        view = await _scrolled_to_the_end(pilot)
        # What a late layout left behind in a loaded run: following, but drawn at the top
        # (seen: scroll 0.0 of 4, follow True, nothing more pending).
        view.scroll_to(y=0, animate=False, immediate=True)
        view.follow = True
        view.refresh()
        await _until(
            pilot,
            lambda: view.scroll_y == view.max_scroll_y,
            "the view back at its end",
            state=lambda: f"{view.scroll_y}/{view.max_scroll_y}",
        )


async def test_a_view_scrolled_up_by_a_person_stays_where_they_put_it() -> None:
    app = _OneView()
    async with app.run_test(size=(40, 6)) as pilot:
        view = await _scrolled_to_the_end(pilot)
        view.scroll_to(y=3, animate=False, immediate=True)  # scrolled up: not following
        assert not view.follow
        view.refresh()
        await holds(pilot, lambda: view.scroll_y == 3, 0.5, "the person's scroll position")
