"""What the app asks of a tool pane (shell, Jupyter, browser): a tool names its pane
(`Tool.pane`), and the app hands that pane the tool's events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from workbench.events import ActionEvent, ObservationEvent


class ToolPane(Protocol):
    """A pane that shows one tool's actions and results as they happen."""

    def show_action(self, event: ActionEvent) -> None:
        """The agent called the pane's tool."""

    def show_observation(self, event: ObservationEvent) -> None:
        """The result of a call of the pane's tool."""

    def show_confirmation(self, approved: bool | None) -> None:
        """A call waits for confirmation (None), or was approved (True) or rejected (False)."""
