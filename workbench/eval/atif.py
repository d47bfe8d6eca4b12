"""Our session log -> an ATIF v1.8 trajectory (Harbor's `trajectory.json`).

How events become steps (`atif_schema` checks the result):
- a user message is a user step; a message workbench sent the model in the user's place (a
  nudge, a resume note, a stuck warning) is a user step too, marked `extra.origin`
  "workbench", since that is how the model read it;
- each LLM call opens an agent step: its model, tokens, cost and latency (`metrics`), the
  reply's text (`message`), its tool calls (function name and the arguments as the model sent
  them) and the results of those calls (`observation`, each naming its call); a malformed
  call is a tool call whose result is the error the model was answered with;
- confirmations, checkpoints and proxied hosts of an action go into its step's `extra`;
- an error and a context condensation are system steps; the project instructions read, the
  final state and what could not be read from the log go into the root `extra` and `notes`;
- steps copied from the session a resumed one continues are `is_copied_context`;
- an image the session kept (`<session id>.files/` beside the log) is an image content part of
  its result, its path relative to the trajectory's folder.
The written file validates, or `AtifError` says why (a bug here, never the agent's doing).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.agent.messages import observation_text, tool_arguments
from workbench.eval.atif_schema import CURRENT_VERSION, validate
from workbench.eval.results import atomic_write_text
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    CheckpointEvent,
    CondensationEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ErrorEvent,
    Event,
    InstructionsEvent,
    LLMCallEvent,
    LLMRetryEvent,
    MessageEvent,
    NetworkEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.session.log import LoadedSession, read
from workbench.tools.registry import REGISTRY

AGENT_NAME = "workbench"
_IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
_IMAGE_TYPES |= {".gif": "image/gif", ".webp": "image/webp"}


class AtifError(ValueError):
    """The trajectory made from a session log does not validate (the errors say where)."""


def iso(timestamp: float) -> str:
    """A Unix time as an ISO 8601 UTC timestamp."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def write_trajectory(
    session_log_path: Path,
    out_path: Path,
    *,
    agent_name: str = AGENT_NAME,
    agent_version: str | None = None,
    model_name: str | None = None,
) -> dict[str, Any]:
    """Convert the session log to ATIF, write it to `out_path` (atomically) and return it;
    the version and model default to the log header's."""
    out_path = Path(out_path)
    loaded = read(Path(session_log_path))
    doc = trajectory(loaded, agent_name, agent_version, model_name, base=out_path.parent)
    errors = validate(doc)
    if errors:
        raise AtifError(f"the trajectory of {session_log_path} is not valid ATIF: {errors[:5]}")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return doc


def trajectory(
    loaded: LoadedSession,
    agent_name: str = AGENT_NAME,
    agent_version: str | None = None,
    model_name: str | None = None,
    base: Path | None = None,
) -> dict[str, Any]:
    """The ATIF document of a session read back with `workbench.session.log.read`; image
    paths are relative to `base` (the trajectory's folder) when given, else absolute."""
    header = loaded.header
    builder = _Builder(loaded, base)
    for event in loaded.events:
        builder.add(event)
    steps = builder.finish()
    totals = builder.totals
    agent: dict[str, Any] = {
        "name": agent_name,
        "version": agent_version or header.workbench_version,
    }
    model = model_name or header.model
    if model:
        agent["model_name"] = model
    doc: dict[str, Any] = {
        "schema_version": CURRENT_VERSION,
        "session_id": header.session_id,
        "agent": agent,
        "steps": steps,
        "final_metrics": {
            "total_prompt_tokens": totals["prompt_tokens"],
            "total_completion_tokens": totals["completion_tokens"],
            "total_cost_usd": round(totals["cost"], 10),
            "total_steps": len(steps),
            "extra": {"llm_calls": totals["llm_calls"], "llm_retries": totals["retries"]},
        },
        "extra": builder.root_extra(),
    }
    notes = builder.notes()
    if notes:
        doc["notes"] = notes
    return doc


class _Builder:
    """Walks the events once, keeping the open agent step and where each action went."""

    def __init__(self, loaded: LoadedSession, base: Path | None) -> None:
        self.loaded = loaded
        self.base = base
        header = loaded.header
        self.copied_to = header.parent_event if header.parent_id else 0
        self.steps: list[dict[str, Any]] = []
        self.open: dict[str, Any] | None = None
        """The agent step the last LLM call opened (None after a user or system step)."""
        self.by_action: dict[int, dict[str, Any]] = {}
        """The step holding each action's tool call, by the action's event id."""
        self.totals: dict[str, Any] = {
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost": 0.0,
            "llm_calls": 0,
            "retries": 0,
        }
        self.final_state: StateChangedEvent | None = None
        self.instructions: list[str] = []
        self.unplaced: list[dict[str, Any]] = []
        """Checkpoints and network events tied to no action."""
        # `<id>.files/` beside `<id>.jsonl`; in a trial folder, `session.files/` beside
        # `session.jsonl` (the name the log was copied under)
        self.files = loaded.path.with_suffix(".files")

    # ------------------------------------------------------------------ steps

    def _step(self, event: Event, source: str, message: str = "") -> dict[str, Any]:
        step: dict[str, Any] = {
            "step_id": len(self.steps) + 1,
            "timestamp": iso(event.timestamp),
            "source": source,
            "message": message,
        }
        if event.id <= self.copied_to:
            step["is_copied_context"] = True
        self.steps.append(step)
        return step

    def _agent_step(self, event: Event) -> dict[str, Any]:
        if self.open is None:
            self.open = self._step(event, "agent")
        return self.open

    def add(self, event: Event) -> None:
        """Take the next event of the log."""
        if isinstance(event, LLMCallEvent):
            self._llm_call(event)
        elif isinstance(event, MessageEvent):
            self._message(event)
        elif isinstance(event, ActionEvent):
            self._action(event)
        elif isinstance(event, AgentErrorEvent):
            self._malformed(event)
        elif isinstance(event, ObservationEvent):
            self._observation(event)
        elif isinstance(event, ConfirmationRequestEvent | ConfirmationDecisionEvent):
            self._note(event.cause, "confirmations", _confirmation(event))
        elif isinstance(event, CheckpointEvent):
            self._note(event.cause, "checkpoints", _checkpoint(event))
        elif isinstance(event, NetworkEvent):
            self._note(event.cause, "network", _network(event))
        elif isinstance(event, ErrorEvent):
            self.open = None
            self._step(event, "system", f"error ({event.error_kind}): {event.message}")
        elif isinstance(event, CondensationEvent):
            self._condensation(event)
        elif isinstance(event, InstructionsEvent):
            self.instructions.extend(event.files)
        elif isinstance(event, StateChangedEvent):
            self.final_state = event
        elif isinstance(event, LLMRetryEvent):
            self.totals["retries"] += 1
        # LLMWaitEvent: only a notice that a call takes long; the call's step has its latency.

    def _llm_call(self, event: LLMCallEvent) -> None:
        self.open = None
        step = self._agent_step(event)
        step["model_name"] = event.model
        step["llm_call_count"] = 1
        extra: dict[str, Any] = {"latency_ms": round(event.latency_ms, 1)}
        if event.retries:
            extra["retries"] = event.retries
        if event.estimated:
            extra["estimated"] = True  # the provider reported no usage: our estimate
        step["metrics"] = {
            "prompt_tokens": event.prompt_tokens,
            "completion_tokens": event.completion_tokens,
            "cost_usd": event.cost,
            "extra": extra,
        }
        totals = self.totals
        totals["prompt_tokens"] += event.prompt_tokens
        totals["completion_tokens"] += event.completion_tokens
        totals["cost"] += event.cost
        totals["llm_calls"] += 1

    def _message(self, event: MessageEvent) -> None:
        if event.source == "agent":
            step = self.open
            if step is None or step["message"]:
                step = self.open = self._step(event, "agent")
            step["message"] = event.text
            return
        self.open = None
        step = self._step(event, "user", event.text)
        if event.source != "user":
            step["extra"] = {"origin": "workbench"}

    def _action(self, event: ActionEvent) -> None:
        step = self._agent_step(event)
        if event.thought and not step["message"]:
            step["message"] = event.thought
        arguments = tool_arguments(event.action, event.security_risk)
        call = {
            "tool_call_id": event.tool_call_id,
            "function_name": event.tool_name,
            "arguments": arguments,
        }
        step.setdefault("tool_calls", []).append(call)
        self.by_action[event.id] = step

    def _malformed(self, event: AgentErrorEvent) -> None:
        step = self._agent_step(event)
        try:
            parsed = json.loads(event.arguments)
        except ValueError:
            parsed = None
        call: dict[str, Any] = {
            "tool_call_id": event.tool_call_id,
            "function_name": event.tool_name,
            "arguments": parsed if isinstance(parsed, dict) else {},
            "extra": {"malformed": True, "raw_arguments": event.arguments},
        }
        step.setdefault("tool_calls", []).append(call)
        result = {"source_call_id": event.tool_call_id, "content": f"ERROR: {event.content}"}
        step.setdefault("observation", {"results": []})["results"].append(result)

    def _observation(self, event: ObservationEvent) -> None:
        step = self.by_action.get(event.cause)
        result: dict[str, Any] = {"content": self._content(event)}
        if step is None:  # its action is not in this log: a result tied to no call
            step = self._step(event, "system", "the result of an action this log does not hold")
        else:
            result["source_call_id"] = event.tool_call_id
        step.setdefault("observation", {"results": []})["results"].append(result)

    def _content(self, event: ObservationEvent) -> str | list[dict[str, Any]]:
        """The text the model read, with the images the session kept as content parts."""
        text = observation_text(event.observation)
        images = []
        for name in REGISTRY.for_observation(event.observation).files(event.observation):
            path = self.files / Path(name).name
            media = _IMAGE_TYPES.get(path.suffix.lower())
            if media and path.is_file():
                shown = os.path.relpath(path, self.base) if self.base else str(path.resolve())
                images.append({"type": "image", "source": {"media_type": media, "path": shown}})
        return [{"type": "text", "text": text}, *images] if images else text

    def _note(self, cause: int | None, key: str, value: dict[str, Any]) -> None:
        step = self.by_action.get(cause) if cause is not None else None
        if step is None:
            self.unplaced.append({"kind": key, **value})
            return
        step.setdefault("extra", {}).setdefault(key, []).append(value)

    def _condensation(self, event: CondensationEvent) -> None:
        self.open = None
        text = (
            f"context condensed ({event.reason}): {event.tokens_before} -> "
            f"{event.tokens_after} tokens for a window of {event.window}"
        )
        step = self._step(event, "system", text)
        if event.summary:
            step["observation"] = {"results": [{"content": event.summary}]}
        step["extra"] = {
            "elided_events": event.elided,
            "summarized": [event.summarized_from, event.summarized_to],
            "prompt_tokens": event.prompt_tokens,
            "completion_tokens": event.completion_tokens,
            "cost_usd": event.cost,
        }
        if event.note:
            step["extra"]["note"] = event.note
        totals = self.totals  # the summary call is spent by the run too
        totals["prompt_tokens"] += event.prompt_tokens
        totals["completion_tokens"] += event.completion_tokens
        totals["cost"] += event.cost

    # ------------------------------------------------------------------ the end

    def finish(self) -> list[dict[str, Any]]:
        """The steps (one system step when the log holds nothing to show)."""
        if not self.steps:
            self.steps.append(
                {"step_id": 1, "source": "system", "message": "the session log holds no events"}
            )
        return self.steps

    def root_extra(self) -> dict[str, Any]:
        """What belongs to the whole session rather than a step."""
        header = self.loaded.header
        extra: dict[str, Any] = {"session_log": self.loaded.path.name}
        extra["workspace"] = header.workspace
        if self.final_state is not None:
            extra["final_state"] = self.final_state.state
            extra["final_reason"] = self.final_state.reason
        if header.parent_id:
            extra["parent_session_id"] = header.parent_id
            extra["parent_event"] = header.parent_event
        if self.instructions:
            extra["instruction_files"] = self.instructions
        if self.unplaced:
            extra["events_without_action"] = self.unplaced
        return extra

    def notes(self) -> str:
        """What could not be read from the log, for a person reading the trajectory."""
        loaded = self.loaded
        notes = []
        if loaded.truncated:
            notes.append("the session log's last line was cut short and is not included")
        if loaded.bad_lines:
            lines = ", ".join(str(number) for number, _ in loaded.bad_lines)
            notes.append(f"session log lines that did not parse were skipped: {lines}")
        return "; ".join(notes)


def _confirmation(
    event: ConfirmationRequestEvent | ConfirmationDecisionEvent,
) -> dict[str, Any]:
    if isinstance(event, ConfirmationRequestEvent):
        return {"asked": True, "risk": event.risk, "reason": event.reason}
    return {"approved": event.approved, "rule": event.rule, "reason": event.reason}


def _checkpoint(event: CheckpointEvent) -> dict[str, Any]:
    changed = {"added": event.added, "changed": event.changed, "deleted": event.deleted}
    return {"step": event.step, "commit": event.commit, **changed}


def _network(event: NetworkEvent) -> dict[str, Any]:
    return {"host": event.host, "port": event.port, "allowed": event.allowed, "rule": event.rule}
