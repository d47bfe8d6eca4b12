"""Results any tool can get: a sandbox error, or a refusal by the confirmation policy."""

from __future__ import annotations

from sandbox.protocol import ErrorObservation
from workbench.display import Cell, first_line
from workbench.events import RejectedObservation
from workbench.tools.base import Tool


class SharedResults(Tool[None, ErrorObservation | RejectedObservation]):
    """The observation side of every tool: errors and refusals read and look the same."""

    action_kinds = ("error", "rejected")

    def observation_text(self, observation: ErrorObservation | RejectedObservation) -> str:
        """`ERROR: ...` for an error; a refusal says why the action was not run."""
        if isinstance(observation, ErrorObservation):
            return f"ERROR: {observation.content}"
        return observation.content

    def failed(self, observation: ErrorObservation | RejectedObservation) -> bool:
        """An error is; a refusal is the person's choice, not the agent failing."""
        return isinstance(observation, ErrorObservation)

    def observation_cell(
        self, key: str, observation: ErrorObservation | RejectedObservation
    ) -> Cell:
        """An error cell."""
        obs = observation
        if isinstance(obs, ErrorObservation):
            title = f"{obs.error_kind}: {first_line(obs.content)}"
            return Cell(key, "error", "!", title, obs.content, "text")
        return Cell(key, "error", "✗", f"not run: {first_line(obs.content)}", obs.content)
