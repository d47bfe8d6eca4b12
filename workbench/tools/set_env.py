"""`set_env`: environment variables for the shell, set by the person (never offered to the
model: values may be secrets). Names that decide what runs are HIGH wherever the action comes
from (a re-run log included), so the policy asks before it runs."""

from __future__ import annotations

from typing import Any

from sandbox.protocol import SetEnvAction, SetEnvObservation
from workbench.display import Cell
from workbench.security.analyzer import Assessment
from workbench.security.risk import Category
from workbench.security.variables import set_env_risks
from workbench.tools.base import Tool


class SetEnvTool(Tool[SetEnvAction, SetEnvObservation]):
    """Exports variables into the agent's shell; only their names are ever shown."""

    action_kinds = ("set_env",)
    declares_risk = False
    executor = "bash"

    def arguments(self, action: SetEnvAction) -> dict[str, Any]:
        """The names only."""
        return {"env": sorted(action.env)}

    def observation_text(self, observation: SetEnvObservation) -> str:
        """What was set."""
        return observation.content or f"Set: {', '.join(observation.names)}"

    def rule_subject(self, action: SetEnvAction) -> None:
        """Set by the person, not the agent: no rule applies."""
        return None

    def assess(self, action: SetEnvAction, workspace: str) -> Assessment:
        """HIGH for names that decide what runs (`PROMPT_COMMAND`, `BASH_ENV`, `LD_*`, `PATH`,
        `PYTHONPATH`, `GIT_*` ...), judged by name alone: a re-run log is anyone's text."""
        reasons = set_env_risks(list(action.env))
        if not reasons:
            return Assessment("LOW")
        kind: Category = "persistence"
        kinds = tuple(kind for _ in reasons)
        return Assessment("HIGH", tuple(reasons), kinds)

    def describe(self, action: SetEnvAction) -> str:
        """`set env NAMES`."""
        return f"set env {', '.join(sorted(action.env))}"

    def action_cell(self, key: str, action: SetEnvAction) -> Cell:
        """The names."""
        return Cell(key, "action", "$", self.describe(action))

    def observation_cell(self, key: str, observation: SetEnvObservation) -> Cell:
        """The names set."""
        return Cell(key, "observation", "✓", f"set {', '.join(observation.names)}")
