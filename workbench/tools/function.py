"""Tools registered at run time (a test's, an MCP server's): a name, a JSON schema for the
arguments and a coroutine that answers with text. Their calls are recorded as
`ToolCallAction`s and their answers as `ToolResultObservation`s, so a saved session shows them
even where the tool is not registered any more (`UnregisteredTool`)."""

from __future__ import annotations

import json
import logging
from typing import Any

from workbench.display import Cell, first_line
from workbench.events import ToolCallAction, ToolResultObservation
from workbench.tools.base import ParseOptions, RuleSubject, Tool, ToolContext

log = logging.getLogger(__name__)


class ToolFailure(Exception):
    """Raised by `FunctionTool.call`: the call failed; the message is what the agent reads."""


class FunctionTool(Tool[ToolCallAction, ToolResultObservation]):
    """A tool whose work is one `call(arguments, context) -> text` coroutine.

    Subclasses (or instances) set `name`, `description`, `parameters` and `required`, and write
    `call`. Allow and deny rules match `NAME:` against the arguments as sorted JSON.
    """

    action_kinds = ("tool_call",)

    def __init__(
        self,
        name: str | None = None,
        description: str | None = None,
        parameters: dict[str, Any] | None = None,
        required: tuple[str, ...] | None = None,
    ) -> None:
        if name is not None:
            self.name = name
        if description is not None:
            self.description = description
        if parameters is not None:
            self.parameters = parameters
        if required is not None:
            self.required = required
        if not self.prompt_line:
            self.prompt_line = f"`{self.name}`: {first_line(self.description, 120)}"

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """Do the work; return the text the agent reads, or raise `ToolFailure`."""
        raise NotImplementedError

    def parse(self, args: dict[str, Any], options: ParseOptions) -> ToolCallAction:
        """The checked arguments, kept as they are."""
        return ToolCallAction(tool=self.name, arguments=args)

    def arguments(self, action: ToolCallAction) -> dict[str, Any]:
        """The call's arguments."""
        return dict(action.arguments)

    async def execute(self, action: ToolCallAction, context: ToolContext) -> ToolResultObservation:
        """Run `call`; a failure (a `ToolFailure`, or any error of the tool's) is the answer."""
        try:
            text = await self.call(dict(action.arguments), context)
        except ToolFailure as exc:
            return ToolResultObservation(tool=self.name, content=str(exc), error=True)
        except Exception as exc:  # the tool's bug must not end the session
            log.exception("tool %s failed", self.name)
            message = f"The tool {self.name} failed: {type(exc).__name__}: {exc}"
            return ToolResultObservation(tool=self.name, content=message, error=True)
        return ToolResultObservation(tool=self.name, content=str(text))

    def observation_text(self, observation: ToolResultObservation) -> str:
        """The tool's answer (errors marked as such), and the images it saved."""
        saved = "".join(f"\n[image saved: {name}]" for name in observation.images)
        if observation.error:
            return f"ERROR: {observation.content}{saved}"
        return (observation.content + saved).strip("\n") or "[no output]"

    def files(self, observation: ToolResultObservation) -> list[str]:
        """The images the tool returned."""
        return list(observation.images)

    def failed(self, observation: ToolResultObservation) -> bool:
        """The call failed."""
        return observation.error

    def rule_subject(self, action: ToolCallAction) -> RuleSubject | None:
        """`NAME:` rules match the arguments as sorted JSON."""
        return RuleSubject(
            self.rule_kind or self.name, json.dumps(action.arguments, sort_keys=True)
        )

    def observation_cell(self, key: str, observation: ToolResultObservation) -> Cell:
        """The answer; an error cell when the call failed."""
        text = observation.content
        if observation.images:
            text += "".join(f"\n[image saved: {name}]" for name in observation.images)
        if observation.error:
            return Cell(key, "error", "✗", first_line(text) or "failed", text, "text")
        return Cell(key, "observation", "✓", first_line(text) or "(no output)", text, "text")


class UnregisteredTool(FunctionTool):
    """Shows the calls of a run-time tool that is not registered now (an old session's)."""

    def __init__(self, name: str) -> None:
        super().__init__(name, f"(not registered: {name})", {}, ())

    def enabled(self, config: Any) -> bool:
        """Never offered."""
        return False

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> str:
        """It cannot run."""
        raise ToolFailure(f"The tool {self.name!r} is not available in this session.")
