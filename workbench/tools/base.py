"""What a tool is: everything about one tool the agent can call, in one object.

A `Tool` holds its function schema and prompt line, turns checked arguments into an action and
an action back into arguments, runs the action, words the result for the model, gives the line
headless prints and the cells the TUI shows, and says what the confirmation policy matches and
how risky the action looks. The rest of the app asks the registry (`registry.py`) for the tool
of an action or observation and never branches on the kind of action itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from workbench.display import Cell, Role, Section, first_line
from workbench.security.analyzer import Assessment

if TYPE_CHECKING:
    from sandbox.runtimes.base import Runtime
    from workbench.config.schema import Config
    from workbench.exit_codes import Status

A = TypeVar("A")
Obs = TypeVar("Obs")

RISK_LEVELS = ("LOW", "MEDIUM", "HIGH")
SECURITY_RISK_PARAMETER: dict[str, Any] = {
    "type": "string",
    "enum": list(RISK_LEVELS),
    "description": (
        "How much harm this call could do if it went wrong. LOW: reads or changes only files "
        "in the workspace. MEDIUM: installs packages, talks to the network, or changes many "
        "files. HIGH: deletes data, touches files outside the workspace, needs root, or "
        "publishes something (git push, uploads)."
    ),
}


class ToolCallError(Exception):
    """The tool call cannot become an action; `str(error)` is the answer for the agent."""


@dataclass(frozen=True)
class RuleSubject:
    """What allow and deny rules match for one action: `kind:glob` against `text`."""

    kind: str
    """The rule prefix (`run`, `edit`, `ipython`, `browse`, or a run-time tool's name)."""
    text: str
    shell: bool = False
    """True when `text` is a shell line, judged command by command."""


@dataclass(frozen=True)
class ParseOptions:
    """Settings that shape the actions parsed from tool calls."""

    soft_timeout: float = 10.0
    """The quiet limit a shell command gets when the model gives no `timeout`."""


@dataclass(frozen=True)
class ToolContext:
    """What a tool may use while its action runs."""

    runtime: Runtime
    workspace: str
    host_workspace: str | None = None
    """The workspace folder on the host (where an escalated command runs); None: `workspace`."""


def clip(text: str, limit: int = 200) -> str:
    """`text` cut to `limit` characters for an error message that repeats it."""
    return text if len(text) <= limit else text[:limit] + "..."


class Tool(Generic[A, Obs]):
    """One tool: its schema, parsing, execution, texts, cells and policy subject.

    `A` is the type of its actions and `Obs` of its observations. Subclasses set the class
    attributes and override what differs from the defaults.
    """

    name: str = ""
    """The function name the model calls (empty for action kinds no model is offered)."""
    description: str = ""
    parameters: dict[str, Any] = {}
    required: tuple[str, ...] = ()
    declares_risk: bool = True
    """Whether the schema offers the model a `security_risk` argument."""
    risk_required: bool = False
    """Whether `security_risk` is a required argument."""
    action_kinds: tuple[str, ...] = ()
    """The `kind`s of the actions (and observations) this tool owns."""
    prompt_line: str = ""
    """Its line under "Your tools" in the system prompt."""
    rule_kind: str = ""
    """The `kind:` prefix of the allow and deny rules for its actions (default: its name)."""
    shares_rule_kind: bool = False
    """Whether other tools may use the same `rule_kind` (every MCP tool matches `mcp:`)."""
    rule_text_is_shell: bool = False
    """Whether the text rules match is a shell line, judged command by command."""
    executor: str | None = None
    """The sandbox executor it needs; offered only when the sandbox has it."""
    pane: str | None = None
    """The TUI tool pane that shows its actions (`shell`, `jupyter`, `browser`), if any."""
    changes_files: bool = False
    """Whether its actions can change the workspace (each is followed by a checkpoint)."""
    reply_text_cell: bool = True
    """Whether the text the model wrote beside the call gets a conversation cell of its own."""

    # ------------------------------------------------------------------ offering it

    def enabled(self, config: Config) -> bool:
        """Whether the config offers this tool."""
        return bool(self.name)

    def schema(self) -> dict[str, Any]:
        """The OpenAI-style function schema the model is given."""
        properties = dict(self.parameters)
        required = list(self.required)
        if self.declares_risk:
            properties["security_risk"] = SECURITY_RISK_PARAMETER
        if self.declares_risk and self.risk_required:
            required.append("security_risk")
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {"type": "object", "properties": properties, "required": required},
            },
        }

    def prompt_extra(self) -> str:
        """A section of its own for the system prompt (empty for most tools)."""
        return ""

    # ------------------------------------------------------------------ calls and actions

    def parse(self, args: dict[str, Any], options: ParseOptions) -> A:
        """Checked arguments (types and enums as in the schema) -> the action."""
        raise ToolCallError(f"The tool {self.name!r} is offered but cannot be called.")

    def parse_call(self, args: dict[str, Any], options: ParseOptions) -> Any:
        """The action a call makes: `parse`'s, unless the call asks for another tool's kind
        of action (the bash tool's `escalate`)."""
        return self.parse(args, options)

    escalates: bool = False
    """Whether its actions run outside the sandbox: always asked, never approved by a rule."""

    def arguments(self, action: A) -> dict[str, Any]:
        """The arguments of the call that made `action` (without `security_risk`)."""
        raise NotImplementedError

    async def execute(self, action: A, context: ToolContext) -> Obs:
        """Run the action; the default sends it to the sandbox."""
        return await context.runtime.execute(action)  # type: ignore[arg-type,return-value]

    async def interrupt(self, context: ToolContext) -> None:
        """Stop what the action left running after a stop cut it short (default: nothing)."""

    def ends_run(self, action: A) -> tuple[Status, str] | None:
        """The status and message the run ends with when this action is taken, else None."""
        return None

    def ends_run_after(self, observation: Any) -> tuple[Status, str] | None:
        """The status and message the run ends with once this action's result is seen (an
        evaluation task that ended its episode), else None."""
        return None

    # ------------------------------------------------------------------ results

    def observation_text(self, observation: Obs) -> str:
        """What the model reads as the result."""
        return str(getattr(observation, "content", ""))

    def human_text(self, observation: Obs, files: Path | None = None) -> str:
        """What headless output prints as the result for a person (the model's text unless
        the tool says otherwise); `files` is the session's folder of kept images."""
        return self.observation_text(observation)

    def failed(self, observation: Obs) -> bool:
        """True when the result reports a failure (stuck detection compares those)."""
        return False

    def files(self, observation: Obs) -> list[str]:
        """Sandbox artifacts the result names, kept with the session (images, screenshots)."""
        return []

    # ------------------------------------------------------------------ security

    def rule_subject(self, action: A) -> RuleSubject | None:
        """What allow and deny rules match; None when the action runs nothing."""
        text = json.dumps(self.arguments(action), sort_keys=True)
        return RuleSubject(self.rule_kind or self.name, text)

    def assess(self, action: A, workspace: str) -> Assessment:
        """Our own reading of the action's risk."""
        return Assessment("LOW")

    # ------------------------------------------------------------------ for people

    def describe(self, action: A) -> str:
        """One line for headless output."""
        return f"{self.name} {json.dumps(self.arguments(action))}"

    def action_cell(self, key: str, action: A) -> Cell:
        """The conversation cell of the action."""
        args = self.arguments(action)
        title = first_line(f"{self.name} {json.dumps(args, ensure_ascii=False)}")
        body = json.dumps(args, indent=2, ensure_ascii=False)
        return Cell(key, "action", "⚙", title, body, "code", "json")

    def result_cell(self, cell: Cell, action: A, outcome: Cell) -> Cell:
        """One row for the action and its result: the action's `cell` (from `action_cell`,
        changed in place) takes the outcome (`outcome`, the result's own cell) at the right
        end; expanded, it shows the action's text when the title does not show it all, then
        the result's."""
        own = cell.body
        result = Section(outcome.body, outcome.body_format, outcome.lexer)
        if own and own != cell.title and own.strip() != cell.title:  # the title shows less
            cell.more = (result,) if outcome.body else ()
        else:
            cell.body, cell.body_format, cell.lexer = result.text, result.body_format, result.lexer
        cell.summary = outcome.summary or f"{outcome.icon} {outcome.title}"
        cell.summary_role = outcome.role
        if outcome.role == "error":
            cell.role = "error"
        cell.image = outcome.image
        return cell

    def observation_cell(self, key: str, observation: Obs) -> Cell | None:
        """The conversation cell of the result (None: nothing worth showing)."""
        text = self.observation_text(observation)
        role: Role = "error" if self.failed(observation) else "observation"
        return Cell(key, role, "✓", first_line(text) or "(no output)", text, "text")
