"""Events: the one currency of a session. Each is immutable, has an id, a time and a source.

The controller emits them, the session log stores them (one JSON line each), the headless
printer and the TUI render them, and the TUI shows a saved log again. Actions and observations
that reach the sandbox are the models of `sandbox.protocol`; `think` and `finish` stay in the
agent; a tool registered at run time (`workbench.tools`) records a `ToolCallAction` and answers
with a `ToolResultObservation`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
    SetEnvAction,
    SetEnvObservation,
)

EVENT_SCHEMA_VERSION = 1

EventSource = Literal["user", "agent", "environment"]
RiskLevel = Literal["LOW", "MEDIUM", "HIGH"]
AgentState = Literal[
    "idle",  # nothing to do yet (the TUI before the first task)
    "running",
    "awaiting_confirmation",
    "awaiting_user",
    "paused",
    "finished",
    "error",
    "stopped",
]
ENDED_STATES: frozenset[AgentState] = frozenset({"finished", "error", "stopped"})
"""The states a run ends in."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ThinkAction(_Frozen):
    """The agent writes down a thought; nothing runs."""

    kind: Literal["think"] = "think"
    thought: str


class FinishAction(_Frozen):
    """The agent says it is done (or gives up, with `outcome="gave_up"`)."""

    kind: Literal["finish"] = "finish"
    message: str
    outcome: Literal["success", "gave_up"] = "success"


class HostRunAction(_Frozen):
    """Escalation: one shell command the agent asks to run outside the sandbox, on the host,
    with why; it always needs a person's yes (`tools/host_run.py`)."""

    kind: Literal["host_run"] = "host_run"
    command: str
    justification: str
    timeout: float | None = None
    """Hard limit in seconds (default `tools.host_run.DEFAULT_TIMEOUT_S`)."""


class HostRunObservation(_Frozen):
    """What an escalated command printed on the host, and how it ended."""

    kind: Literal["host_run"] = "host_run"
    command: str
    content: str
    exit_code: int
    """-1 when it was killed at its time limit."""
    cwd: str
    timed_out: bool = False


class ToolCallAction(_Frozen):
    """A call to a tool registered at run time: the tool's name and its checked arguments."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResultObservation(_Frozen):
    """What a tool registered at run time answered; `error` when the call failed."""

    kind: Literal["tool_result"] = "tool_result"
    tool: str
    content: str
    error: bool = False
    images: list[str] = Field(default_factory=list)
    """Images the tool returned, as sandbox artifact names (kept with the session)."""


class ThinkObservation(_Frozen):
    """The acknowledgement of a thought."""

    kind: Literal["think"] = "think"
    content: str = "Your thought has been logged."


class RejectedObservation(_Frozen):
    """The action was not run because confirmation was refused; `content` tells the agent."""

    kind: Literal["rejected"] = "rejected"
    content: str


AnyAction = Annotated[
    CmdRunAction
    | SetEnvAction
    | FileEditAction
    | IPythonAction
    | BrowseAction
    | ThinkAction
    | FinishAction
    | ToolCallAction
    | HostRunAction,
    Field(discriminator="kind"),
]

AnyObservation = Annotated[
    CmdOutputObservation
    | SetEnvObservation
    | FileEditObservation
    | IPythonObservation
    | BrowseObservation
    | ErrorObservation
    | ThinkObservation
    | RejectedObservation
    | ToolResultObservation
    | HostRunObservation,
    Field(discriminator="kind"),
]


class _Event(_Frozen):
    id: int
    timestamp: float = Field(default_factory=time.time)
    source: EventSource


class MessageEvent(_Event):
    """Text from the user or the agent (a user task, a queued message, the agent's reply)."""

    kind: Literal["message"] = "message"
    text: str


class ActionEvent(_Event):
    """The agent asked for a tool call; `action` says what, `thought` is the text around it."""

    kind: Literal["action"] = "action"
    source: EventSource = "agent"
    tool_name: str
    tool_call_id: str
    action: AnyAction
    thought: str = ""
    security_risk: RiskLevel | None = None
    """What the LLM declared; the analyzer's verdict is in the confirmation events."""


class ObservationEvent(_Event):
    """The result of the action with id `cause`."""

    kind: Literal["observation"] = "observation"
    source: EventSource = "environment"
    cause: int
    tool_call_id: str
    observation: AnyObservation


class AgentErrorEvent(_Event):
    """A tool call the controller could not turn into an action (bad JSON, unknown tool ...).

    It is answered to the LLM as the tool result of `tool_call_id`, so the agent can correct it.
    """

    kind: Literal["agent_error"] = "agent_error"
    source: EventSource = "environment"
    tool_name: str
    tool_call_id: str
    arguments: str
    content: str


class ConfirmationRequestEvent(_Event):
    """The action with id `cause` waits for a person's (or the headless policy's) answer."""

    kind: Literal["confirmation_request"] = "confirmation_request"
    source: EventSource = "environment"
    cause: int
    risk: RiskLevel
    reason: str
    always_ask: tuple[str, ...] = ()
    """The reasons no rule may approve it by pattern ("always allow" is not offered for it:
    `security.risk.ALWAYS_ASK`); empty when a rule may."""


class ConfirmationDecisionEvent(_Event):
    """The answer to a confirmation request, with the rule that decided it."""

    kind: Literal["confirmation_decision"] = "confirmation_decision"
    source: EventSource = "user"
    cause: int
    approved: bool
    rule: str
    reason: str = ""


class StateChangedEvent(_Event):
    """The controller entered `state`; `reason` says why (and carries the stop cause)."""

    kind: Literal["state"] = "state"
    source: EventSource = "environment"
    state: AgentState
    reason: str = ""


class LLMCallEvent(_Event):
    """Accounting for one LLM call: tokens, cost and time (never the key or the prompt)."""

    kind: Literal["llm_call"] = "llm_call"
    source: EventSource = "agent"
    model: str
    prompt_tokens: int
    completion_tokens: int
    cost: float
    latency_ms: float
    retries: int = 0
    estimated: bool = False
    """True when the provider reported no usage and the tokens are workbench's estimate."""


class LLMWaitEvent(_Event):
    """The model has not answered for `waited_s` seconds (retries included); the call goes on
    until `deadline_s` (0: no deadline). Front ends show it so a long wait is not silence."""

    kind: Literal["llm_wait"] = "llm_wait"
    source: EventSource = "environment"
    model: str
    waited_s: float
    deadline_s: float = 0.0


class LLMRetryEvent(_Event):
    """A model call failed and is tried again (`retry`, 1-based) after `wait_s` seconds; the
    failure's kind (`timeout`, `rate_limit`, `server`, `refused` ...) and message."""

    kind: Literal["llm_retry"] = "llm_retry"
    source: EventSource = "environment"
    model: str
    retry: int
    wait_s: float
    error_kind: str
    message: str


class CheckpointEvent(_Event):
    """The workspace as it was after step `step` (the Nth action; 0: before the first) was
    recorded as `commit` in the workspace's checkpoint store, with what that step changed."""

    kind: Literal["checkpoint"] = "checkpoint"
    source: EventSource = "environment"
    step: int
    cause: int | None = None
    """The id of the action that made the step (None for step 0)."""
    commit: str
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    """Files the checkpoint does not cover (over the size limit)."""
    seconds: float = 0.0


class CondensationEvent(_Event):
    """Older history was condensed so requests fit the model's context window. From here on
    the outputs of the observations `elided` are no longer sent; with a `summary`, it stands
    for every event after the task up to `summarized_to` (replacing an earlier summary)."""

    kind: Literal["condensation"] = "condensation"
    source: EventSource = "environment"
    reason: Literal["threshold", "refused", "manual"]
    elided: list[int] = Field(default_factory=list)
    """Ids of the observations whose output was elided by this condensation."""
    summary: str = ""
    summarized_from: int = 0
    """With a summary: the first and last event ids this condensation summarised (the summary
    also carries what an earlier one covered)."""
    summarized_to: int = 0
    tokens_before: int
    tokens_after: int
    window: int
    """The context window (tokens) the request was kept under."""
    prompt_tokens: int = 0
    """Tokens and cost of the summary call, if one was made."""
    completion_tokens: int = 0
    cost: float = 0.0
    note: str = ""
    """What did not go as planned (a failed summary call, nothing left to condense)."""


class InstructionsEvent(_Event):
    """The project instructions put into the system prompt at the start of a session."""

    kind: Literal["instructions"] = "instructions"
    source: EventSource = "environment"
    files: list[str] = Field(default_factory=list)
    """The files read, relative to the workspace."""
    chars: int = 0
    """Characters of instructions in the prompt."""
    notes: list[str] = Field(default_factory=list)
    """What was cut or skipped, and why."""


class ErrorEvent(_Event):
    """Something went wrong outside the agent's control (LLM down, sandbox dead ...)."""

    kind: Literal["error"] = "error"
    source: EventSource = "environment"
    error_kind: str
    message: str


class NetworkEvent(_Event):
    """The sandbox's proxy was asked for `host` (network = "allowlist") while the action with
    id `cause` ran (None: between actions): reached (`allowed`) or refused, by `rule`, or
    `asked` the person first."""

    kind: Literal["network"] = "network"
    source: EventSource = "environment"
    cause: int | None = None
    host: str
    port: int
    allowed: bool
    rule: str = ""
    """The rule or answer that decided (`net:pypi.org`, `session`, `--on-confirm reject` ...)."""
    reason: str = ""
    asked: bool = False


Event = Annotated[
    MessageEvent
    | ActionEvent
    | ObservationEvent
    | AgentErrorEvent
    | ConfirmationRequestEvent
    | ConfirmationDecisionEvent
    | StateChangedEvent
    | LLMCallEvent
    | LLMWaitEvent
    | LLMRetryEvent
    | CheckpointEvent
    | CondensationEvent
    | InstructionsEvent
    | ErrorEvent
    | NetworkEvent,
    Field(discriminator="kind"),
]

_event_adapter: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: str | bytes | dict[str, object]) -> Event:
    """Validate JSON text or a dict as one of the event models."""
    if isinstance(data, dict):
        return _event_adapter.validate_python(data)
    return _event_adapter.validate_json(data)


def event_to_json(event: Event) -> str:
    """One compact JSON line for `event` (no newline inside)."""
    return event.model_dump_json()


@dataclass(frozen=True)
class LLMActivity:
    """A model call in flight, for front ends only (never logged): `phase` "start" when it
    is sent, "text" as the reply streams (`text`: everything so far), "retry" when an attempt
    failed and its streamed text is void, "end" when it is over (answered or not)."""

    phase: Literal["start", "text", "retry", "end"]
    model: str
    started: float
    """`time.monotonic()` when the call was sent."""
    text: str = ""
