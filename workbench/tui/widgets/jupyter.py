"""The Jupyter pane: each cell's highlighted code, then its text output, errors and images.

Built on the virtualized cell list (always expanded). What a running cell prints shows as it
comes, in a live "Out" cell that the cell's result then replaces (`feed` only appends to a
buffer, from any thread; a 50 ms timer draws it). Images are fetched by name through the app's
artifact loader and drawn as half-cell blocks, so they work in any terminal.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from workbench.display import Cell, Role, first_line, last_line, strip_ansi
from workbench.tui.widgets.cell_list import CellList

if TYPE_CHECKING:
    from sandbox.protocol import IPythonAction, IPythonObservation
    from workbench.events import ActionEvent, ObservationEvent

ArtifactLoader = Callable[[str], Awaitable[bytes]]
LIVE_FLUSH_S = 0.05


class JupyterPane(CellList):
    """Cells of the session's IPython kernel."""

    empty_text = "No cells yet: Python the agent runs in Jupyter shows here."

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "jupyter"
        self.loader: ArtifactLoader | None = None
        self._count = 0
        self._pending: list[str] = []
        self._live_text = ""
        self._live: int | None = None
        """The index of the live output cell of the running cell, if it printed anything."""

    def on_mount(self) -> None:
        """Draw live output on a timer."""
        self.set_interval(LIVE_FLUSH_S, self.flush)

    def feed(self, text: str) -> None:
        """Text the running cell printed (any thread); drawn at the next flush."""
        self._pending.append(text)

    def flush(self) -> None:
        """Show what the running cell printed since the last flush."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        self._live_text += "".join(pending)
        text = strip_ansi(self._live_text).rstrip("\n")
        cell = Cell(
            f"live{self._count}", "observation", "Out", f"running · {last_line(text)}", text,
            "text", expanded=True,
        )  # fmt: skip
        if self._live is None:
            self._live = len(self.cells)
            self.add_cells([cell])
        else:
            self.replace_cell(self._live, cell)

    def summary(self) -> str:
        """One line: the last cell's title (the folded panes' row)."""
        if not self.cells:
            return "no cell yet"
        last = self.cells[-1]
        return f"{last.icon} {last.title}".strip()

    def show_action(self, event: ActionEvent) -> None:
        """The agent sent a cell (the pane of `execute_ipython_cell`)."""
        from sandbox.protocol import IPythonAction  # the protocol's models: after the first paint

        if isinstance(event.action, IPythonAction):
            self.add_code(event.id, event.action)

    def show_observation(self, event: ObservationEvent) -> None:
        """A cell's result."""
        from sandbox.protocol import IPythonObservation

        if isinstance(event.observation, IPythonObservation):
            self.add_output(event.id, event.observation)

    def show_confirmation(self, approved: bool | None) -> None:
        """Nothing to show: the conversation has the confirmation."""

    def add_code(self, event_id: int, action: IPythonAction) -> None:
        """The agent sent a cell to the kernel."""
        self._pending.clear()
        self._live, self._live_text = None, ""
        self._count += 1
        self.add_cells(
            [
                Cell(
                    f"j{event_id}",
                    "action",
                    f"In [{self._count}]",
                    first_line(action.code),
                    action.code,
                    "code",
                    "python",
                    expanded=True,
                )
            ]
        )

    def add_output(self, event_id: int, obs: IPythonObservation) -> None:
        """The kernel answered; images are fetched in the background."""
        self._pending.clear()
        live, self._live, self._live_text = self._live, None, ""
        output = strip_ansi(obs.content).rstrip("\n")
        content = f"{output}\n[{obs.note}]".strip("\n") if obs.note else output
        role: Role = "error" if obs.error else "observation"
        # As in the conversation: a traceback ends with what went wrong.
        title = last_line(output) if obs.error and output else first_line(content)
        cell = Cell(f"o{event_id}", role, "Out", title, content, "text", expanded=True)
        if live is not None and live < len(self.cells):  # the result takes the live cell's place
            self.replace_cell(live, cell)
        elif content:
            self.add_cells([cell])
        for number, name in enumerate(obs.images):
            key = f"i{event_id}-{number}"
            self.add_cells([Cell(key, "observation", "img", name)])
            if self.loader is not None:
                self.run_worker(self._fetch(key, name), group="jupyter-images")

    async def _fetch(self, key: str, name: str) -> None:
        assert self.loader is not None
        try:
            data = await self.loader(name)
        except Exception as exc:
            self._set_image(key, None, f"{name}: could not be fetched ({exc})")
            return
        self._set_image(key, data, name)

    def _set_image(self, key: str, data: bytes | None, title: str) -> None:
        for index, cell in enumerate(self.cells):
            if cell.key == key:
                role: Role = "observation" if data is not None else "error"
                self.replace_cell(
                    index, Cell(key, role, "img", title, image=data, expanded=data is not None)
                )
                return
