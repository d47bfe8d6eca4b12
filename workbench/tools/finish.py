"""`finish`: the agent ends the task, done or given up."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from workbench.display import Cell, plain_line
from workbench.events import FinishAction, ThinkObservation
from workbench.tools.base import ParseOptions, RuleSubject, Tool

if TYPE_CHECKING:
    from workbench.exit_codes import Status


class FinishTool(Tool[FinishAction, ThinkObservation]):
    """Ends the run with the agent's account: outcome `success` or `gave_up`."""

    name = "finish"
    description = (
        "End the task. Call it once the work is done and checked, or when you cannot go "
        "further. Say what you did (or what blocked you) in `message`."
    )
    parameters = {
        "message": {"type": "string", "description": "A short account for the user."},
        "outcome": {
            "type": "string",
            "enum": ["success", "gave_up"],
            "description": '"success" when the task is done; "gave_up" when it is not and '
            'you cannot finish it. Default "success".',
        },
    }
    required = ("message",)
    declares_risk = False
    action_kinds = ("finish",)
    prompt_line = "`finish`: end the task with a message (outcome success or gave_up)."

    def parse(self, args: dict[str, Any], options: ParseOptions) -> FinishAction:
        """The account and the outcome."""
        return FinishAction(message=args["message"], outcome=args.get("outcome", "success"))

    def arguments(self, action: FinishAction) -> dict[str, Any]:
        """The call's arguments."""
        return {"message": action.message, "outcome": action.outcome}

    def ends_run(self, action: FinishAction) -> tuple[Status, str]:
        """The run ends as `success` or `gave_up`, with the agent's message."""
        return ("success" if action.outcome == "success" else "gave_up"), action.message

    def rule_subject(self, action: FinishAction) -> RuleSubject | None:
        """Nothing runs."""
        return None

    def describe(self, action: FinishAction) -> str:
        """`finish (outcome): message`."""
        return f"finish ({action.outcome}): {action.message}"

    def action_cell(self, key: str, action: FinishAction) -> Cell:
        """The agent's account, open."""
        done = action.outcome == "success"
        return Cell(
            key,
            "agent",
            "✔" if done else "✖",
            plain_line(action.message) or "finished",
            action.message,
            "markdown",
            expanded=True,
            inline=True,
        )
