"""`think`: the agent writes down reasoning; nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.display import Cell, plain_line
from workbench.events import ThinkAction, ThinkObservation
from workbench.tools.base import ParseOptions, RuleSubject, Tool, ToolContext


class ThinkTool(Tool[ThinkAction, ThinkObservation]):
    """A thought, acknowledged without touching the sandbox."""

    name = "think"
    description = (
        "Write down reasoning, a plan or a hypothesis. Nothing runs and nothing changes; use it "
        "when weighing options or after surprising output."
    )
    parameters = {"thought": {"type": "string", "description": "The thought."}}
    required = ("thought",)
    declares_risk = False
    action_kinds = ("think",)
    prompt_line = "`think`: write down reasoning; nothing runs."
    reply_text_cell = False  # the thought is the cell

    def parse(self, args: dict[str, Any], options: ParseOptions) -> ThinkAction:
        """The thought."""
        return ThinkAction(thought=args["thought"])

    def arguments(self, action: ThinkAction) -> dict[str, Any]:
        """The call's arguments."""
        return {"thought": action.thought}

    async def execute(self, action: ThinkAction, context: ToolContext) -> ThinkObservation:
        """Acknowledge it."""
        return ThinkObservation()

    def rule_subject(self, action: ThinkAction) -> RuleSubject | None:
        """Nothing runs."""
        return None

    def describe(self, action: ThinkAction) -> str:
        """`think: ...`."""
        return f"think: {action.thought}"

    def human_text(self, observation: ThinkObservation, files: Path | None = None) -> str:
        """Nothing: the acknowledgement is for the model."""
        return ""

    def action_cell(self, key: str, action: ThinkAction) -> Cell:
        """The thought, as Markdown."""
        thought = action.thought
        return Cell(key, "agent", "…", plain_line(thought), thought, "markdown", inline=True)

    def observation_cell(self, key: str, observation: ThinkObservation) -> None:
        """The acknowledgement says nothing new."""
        return None
