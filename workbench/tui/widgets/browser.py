"""The browser pane: the page's URL and title, its screenshot drawn in the terminal, and the
page text on demand (`t`).

Screenshots use textual-image's Kitty or Sixel widget where the terminal said at start-up that it
has that protocol (`terminal.py`), our own half-cell blocks elsewhere (`halfcell.py`; in tests,
where `image_mode="halfcell"`), their aspect ratio kept.
"""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from workbench.tui.halfcell import HalfcellImage, open_image
from workbench.tui.widgets.output_view import OutputView

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage
    from rich.console import RenderableType
    from textual.app import ComposeResult

    from sandbox.protocol import BrowseObservation
    from workbench.events import ActionEvent, ObservationEvent

ArtifactLoader = Callable[[str], Awaitable[bytes]]
EMPTY_TEXT = "No page yet. Pages the agent opens show here (t: page text)."


class Picture(Widget):
    """A screenshot in half-cell blocks, as large as the widget allows, its aspect kept
    (textual-image's own widget would ask the terminal about graphics, see `halfcell.py`)."""

    DEFAULT_CSS = """
    Picture { height: 1fr; width: 1fr; }
    """

    def __init__(self, image: PILImage, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.image = image

    def render(self) -> RenderableType:
        """The picture fitted to the widget's size."""
        return HalfcellImage(self.image, max_rows=max(1, self.content_size.height))


class BrowserPane(Vertical, can_focus=True):
    """URL bar, screenshot, page text."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("t", "toggle_text", "Page text")]

    def __init__(self, image_mode: str = "halfcell", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "browser"
        self.image_mode = image_mode
        self.loader: ArtifactLoader | None = None
        self.url = ""
        self.page_text = ""
        self.showing_text = False
        self.headline = ""
        """What the URL bar says (the page, or why it failed)."""

    def compose(self) -> ComposeResult:
        """URL bar, an empty screenshot area and the (hidden) page text."""
        yield Static("about:blank", id="browser-url", markup=False)
        yield Static(EMPTY_TEXT, id="browser-empty", markup=False)
        yield OutputView(id="browser-text", classes="-hidden")

    def summary(self) -> str:
        """One line: the page shown (the folded panes' row)."""
        return self.headline or "no page yet"

    def show_action(self, event: ActionEvent) -> None:
        """The agent acted in the browser (the pane of `browser`): the page comes next."""

    def show_observation(self, event: ObservationEvent) -> None:
        """A browser action's result."""
        from sandbox.protocol import (
            BrowseObservation,  # the protocol's models: after the first paint
        )

        if isinstance(event.observation, BrowseObservation):
            self.show(event.observation)

    def show_confirmation(self, approved: bool | None) -> None:
        """Nothing to show: the conversation has the confirmation."""

    def show(self, obs: BrowseObservation) -> None:
        """A browser observation arrived: new URL, text, screenshot."""
        url = self.query_one("#browser-url", Static)
        if obs.error:
            self.headline = f"{obs.url or self.url or 'about:blank'}  ✗ {obs.error.splitlines()[0]}"
            url.update(self.headline)
            url.add_class("-error")
            return
        url.remove_class("-error")
        self.url = obs.url
        self.headline = f"{obs.url}  {obs.title}".strip()
        url.update(self.headline)
        self.page_text = obs.content
        text_view = self.query_one("#browser-text", OutputView)
        text_view.clear()
        text_view.append(obs.content)
        if obs.screenshot and self.loader is not None:
            self.run_worker(self._fetch(obs.screenshot), group="browser-shot", exclusive=True)
        elif not obs.screenshot:
            self.query_one("#browser-empty", Static).update("(no screenshot; t: page text)")

    async def _fetch(self, name: str) -> None:
        assert self.loader is not None
        try:
            data = await self.loader(name)
        except Exception as exc:
            self.query_one("#browser-empty", Static).update(f"screenshot {name}: {exc}")
            return
        await self.set_screenshot(data)

    async def set_screenshot(self, data: bytes) -> None:
        """Draw a PNG screenshot."""
        widget: Widget
        if self.image_mode in ("kitty", "sixel", "iterm2"):
            # Loaded before Textual started (`terminal.image_mode`): importing asks nothing now.
            from PIL import Image
            from textual_image.widget import SixelImage, TGPImage

            image = Image.open(io.BytesIO(data))
            image.load()
            kind = TGPImage if self.image_mode == "kitty" else SixelImage  # iTerm2 reads Sixel
            widget = kind(image, id="browser-shot")
        else:
            widget = Picture(open_image(data), id="browser-shot")
        for old in self.query("#browser-shot"):
            await old.remove()
        self.query_one("#browser-empty", Static).display = False
        await self.mount(widget, before=self.query_one("#browser-text"))
        widget.set_class(self.showing_text, "-hidden")

    def action_toggle_text(self) -> None:
        """Switch between the screenshot and the page text."""
        self.showing_text = not self.showing_text
        self.query_one("#browser-text").set_class(not self.showing_text, "-hidden")
        for shot in self.query("#browser-shot"):
            shot.set_class(self.showing_text, "-hidden")
        empty = self.query_one("#browser-empty")
        empty.set_class(self.showing_text, "-hidden")
