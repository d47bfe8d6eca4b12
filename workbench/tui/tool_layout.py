"""Where the tool panes sit: beside the conversation or under it (narrow terminals), folded to
one row (small ones), hidden (F2), maximized (F6), wider or narrower (F7/F8)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import TabbedContent

from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.tools_summary import ToolsSummary, fold_tools

if TYPE_CHECKING:
    from workbench.tui.host import Host

NARROW_WIDTH = 110
"""Below this many columns the tool panes sit under the conversation instead of beside it."""


def layout_tools(
    app: Host, width: int | None = None, height: int | None = None, opening: bool = False
) -> None:
    """Lay the tool panes out for a terminal of `width` x `height` (now: the app's size);
    `opening`: a pane is about to take the focus (unfold them)."""
    main, tools = app.query_one("#main"), app.query_one("#tools")
    width = app.size.width if width is None else width
    height = app.size.height if height is None else height
    narrow = width < NARROW_WIDTH
    main.set_class(narrow, "-narrow")
    # Small terminals: the panes fold to one row until one has the focus (issue 23.12).
    folded = fold_tools(width, height, app.tools_size, opening or tools_focused(app), NARROW_WIDTH)
    layout = (narrow, app.tools_size, folded, app.tools_hidden)
    if layout == app.tools_layout:  # a resize that changes nothing costs no restyle
        return
    app.tools_layout = layout
    tools.display = not app.tools_hidden and not folded
    summary = app.query_one(ToolsSummary)
    summary.display = not app.tools_hidden and folded
    summary.follow()
    if narrow:
        tools.styles.width, tools.styles.height = "1fr", f"{app.tools_size}%"
    else:
        tools.styles.width, tools.styles.height = f"{app.tools_size}%", "1fr"


def tools_focused(app: Host) -> bool:
    """Whether the focus is in a tool pane (on the main screen, under any dialog)."""
    tools = app.query_one("#tools")
    focused = tools.screen.focused
    return focused is not None and (focused is tools or tools in focused.ancestors)


def tools_summary(app: Host) -> tuple[str, dict[str, str]]:
    """The pane shown first and what each pane shows now, for the folded panes' row."""
    active = app.query_one("#tools", TabbedContent).active.removeprefix("tab-") or "shell"
    parts = {
        "shell": app.query_one(ShellPane).summary(),
        "jupyter": app.query_one(JupyterPane).summary(),
        "browser": app.query_one(BrowserPane).summary(),
    }
    return active, parts


def toggle_tools(app: Host) -> None:
    """Show or hide the tool panes."""
    app.tools_hidden = not app.tools_hidden
    layout_tools(app)


def show_pane(app: Host, pane: str) -> None:
    """Show the tool pane `pane` and focus it."""
    tools = app.query_one("#tools", TabbedContent)
    app.tools_hidden = False
    layout_tools(app, opening=True)  # unfolded before the focus can go there
    tools.active = f"tab-{pane}"
    target = app.query_one(f"#{pane}")
    if pane == "shell":
        target = app.query_one("#shell-input")
    target.focus()


def maximize_pane(app: Host) -> None:
    """Maximize the focused pane (again: restore)."""
    if app.screen.maximized is not None:
        app.screen.minimize()
        return
    focused = app.focused
    while focused is not None and focused.id not in ("conversation", *app.PANES):
        focused = focused.parent
    target = focused or app.query_one(ConversationView)
    app.screen.maximize(target, container=False)


def resize_tools(app: Host, delta: int) -> None:
    """Give the tool panes more or less room."""
    app.tools_size = max(20, min(80, app.tools_size + delta))
    layout_tools(app)
