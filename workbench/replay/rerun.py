"""Re-run: the recorded actions executed again in a fresh sandbox, each new result compared
with the recorded one (`compare.py`: text once `normalise` masked what always differs, images
by content, an imported OpenHands edit by the file it left), with a sentence saying why.

Paths under the recorded workspace (OpenHands: `/workspace`) are moved to the sandbox's own
workspace. Only the agent's actions run: environment events, `finish`, and tools registered
at run time are not re-run (a note says so). Each action goes through the confirmation policy
as a live action does (the same `check`, `set_env` included): an action that needs
confirmation is asked through `confirm` (the TUI's confirmation panel), or, headless, answered
by `--on-confirm` (default reject): a recording from elsewhere is not trusted more than a model.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sandbox.errors import SandboxError
from sandbox.protocol import CmdOutputObservation, FileEditAction, FileEditObservation
from workbench.agent.messages import observation_text
from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    AnyObservation,
    ConfirmationRequestEvent,
    Event,
    FinishAction,
    ObservationEvent,
    RejectedObservation,
    ToolCallAction,
)
from workbench.replay.compare import Judgement, judge_file_effect, judge_text, judge_view
from workbench.replay.normalise import normalise
from workbench.replay.recording import Recording, in_steps
from workbench.security.policy import Decision, check, escalation_decision, headless_decision
from workbench.security.refusal import refusal_text
from workbench.tools.base import ToolContext
from workbench.tools.registry import REGISTRY

ConfirmHook = Callable[[ActionEvent, ConfirmationRequestEvent], Awaitable[Decision]]
"""Asks a person about an action, as `Controller.confirm` does; returns their decision."""
_TEXT_FIELDS = ("command", "path", "code", "file_text", "old_str", "new_str", "action")


@dataclass
class StepResult:
    """One recorded action and what running it again gave."""

    step: int
    action: ActionEvent
    """The action as re-run (paths moved to the new workspace)."""
    recorded: AnyObservation | None
    new: AnyObservation | None
    recorded_text: str = ""
    """The recorded result as compared (normalised)."""
    new_text: str = ""
    skipped: str = ""
    """Why the action was not re-run ("" when it was)."""
    reported: bool = True
    """False for steps before `--from`: run to rebuild the state, not compared."""
    sandbox_s: float = 0.0
    """Time spent in the tool's `execute` (the sandbox's share of the step)."""
    why: str = ""
    """Why the results were judged equal or different (`compare.py`)."""

    @property
    def differs(self) -> bool:
        """True when the action ran, is reported, and its result differs from the recording."""
        return self.reported and not self.skipped and self.recorded_text != self.new_text


def move_paths(text: str, old: str, new: str) -> str:
    """`text` with the path `old` (as a whole path component) replaced by `new`."""
    old = old.rstrip("/")
    if not old or old == new.rstrip("/"):
        return text
    return re.sub(re.escape(old) + r"(?![\w.-])", new.rstrip("/").replace("\\", r"\\"), text)


def moved_action(event: ActionEvent, old: str, new: str) -> ActionEvent:
    """The action with the paths its text fields name moved from workspace `old` to `new`."""
    action = event.action
    update: dict[str, Any] = {}
    for name in _TEXT_FIELDS:
        value = getattr(action, name, None)
        if isinstance(value, str):
            moved = move_paths(value, old, new)
            if moved != value:
                update[name] = moved
    if not update:
        return event
    return event.model_copy(update={"action": action.model_copy(update=update)})


def recorded_results(events: list[Event]) -> dict[int, AnyObservation]:
    """The recorded observation of each action id."""
    return {
        event.cause: event.observation for event in events if isinstance(event, ObservationEvent)
    }


def why_not_rerun(event: ActionEvent) -> str:
    """Why a recorded action is not run again ("" when it is)."""
    if event.source != "agent":
        return f"an event of the {event.source}, not an action of the agent"
    if isinstance(event.action, FinishAction):
        return "finish ends the run; nothing to execute"
    if isinstance(event.action, ToolCallAction) and REGISTRY.get(event.action.tool) is None:
        return f"the tool {event.action.tool!r} was registered at run time and is not here now"
    return ""


def _files(observation: AnyObservation) -> list[str]:
    """The artifacts (images, screenshots) a result names."""
    return REGISTRY.for_observation(observation).files(observation)


def _as_recorded(new: AnyObservation, recorded: AnyObservation | None) -> AnyObservation:
    """`new` without what the recording could not say (older trajectories keep no cwd)."""
    old_has_no_cwd = isinstance(recorded, CmdOutputObservation) and recorded.cwd is None
    if isinstance(new, CmdOutputObservation) and old_has_no_cwd:
        return new.model_copy(update={"cwd": None})
    return new


class Rerunner:
    """Runs a recording's actions in a started runtime and compares the results."""

    def __init__(
        self,
        recording: Recording,
        config: Config,
        context: ToolContext,
        confirm: ConfirmHook | None = None,
    ) -> None:
        self.recording = recording
        self.config = config
        self.context = context
        self.confirm = confirm
        """Who is asked when an action needs confirmation (None: `--on-confirm` answers)."""
        self._ids = itertools.count(max((e.id for e in recording.events), default=0) + 1)
        self.workspaces = (recording.workspace, context.workspace)
        self.stopped = ""
        """Set when the policy's `stop` ended the re-run early (the reason)."""

    def compared(self, observation: AnyObservation | None) -> str:
        """An observation's text as compared: normalised, "(no result recorded)" for none."""
        if observation is None:
            return "(no result recorded)"
        return normalise(observation_text(observation), self.workspaces)

    async def run(self, first: int = 1, last: int | None = None) -> AsyncIterator[StepResult]:
        """Re-run the actions of steps up to `last`; those before `first` run unreported."""
        recorded = recorded_results(self.recording.events)
        for event, step in zip(self.recording.events, self.recording.steps, strict=True):
            if not isinstance(event, ActionEvent):
                continue
            if last is not None and max(step, 1) > last:
                continue  # the actions of one reply come before their results: not `break`
            action = moved_action(event, self.recording.workspace, self.context.workspace)
            old = recorded.get(event.id)
            result = StepResult(step, action, old, None, reported=in_steps(step, first, last))
            result.recorded_text = self.compared(old)
            result.skipped = why_not_rerun(event)
            if not result.skipped:
                result.new, result.sandbox_s = await self._execute(action)
                judged = await self.judge(event.id, action, old, _as_recorded(result.new, old))
                result.recorded_text, result.new_text = judged.recorded_text, judged.new_text
                result.why = judged.why
            yield result
            if self.stopped:
                return

    async def judge(
        self, recorded_id: int, action: ActionEvent, old: AnyObservation | None, new: AnyObservation
    ) -> Judgement:
        """The re-run result `new` of `action` against the recorded `old` (`compare.py`)."""
        if old is None:
            text = self.compared(new)
            return Judgement(self.compared(None), text, False, "differs: no result was recorded")
        edit = action.action
        imported_edit = (
            self.recording.format == "openhands"
            and isinstance(old, FileEditObservation)
            and isinstance(new, FileEditObservation)
            and isinstance(edit, FileEditAction)
        )
        if imported_edit and isinstance(edit, FileEditAction):
            effect = self.recording.effects.get(recorded_id)
            if effect is not None:
                shown = normalise(edit.path, self.workspaces)
                return judge_file_effect(shown, effect, await self._file(edit.path))
            if edit.command == "view":
                return judge_view(observation_text(old), observation_text(new), self.workspaces)
        recorded_images = {name: self._recorded_image(name) for name in _files(old)}
        new_images = {name: await self._new_image(name) for name in _files(new)}
        return judge_text(
            observation_text(old),
            observation_text(new),
            self.workspaces,
            recorded_images,
            new_images,
        )

    def _recorded_image(self, name: str) -> bytes | None:
        """A recorded image's bytes, kept beside the session log (None: not kept)."""
        folder = self.recording.files_dir
        try:
            return (folder / name).read_bytes() if folder and "/" not in name else None
        except OSError:
            return None

    async def _new_image(self, name: str) -> bytes | None:
        """A re-run image's bytes, from the sandbox (None: it cannot give them)."""
        try:
            return await self.context.runtime.download(name)
        except (SandboxError, OSError, ValueError):
            return None

    async def _file(self, path: str) -> bytes | None:
        """A workspace file's bytes after a step (None: unreadable)."""
        download = getattr(self.context.runtime, "download_file", None)
        if download is None:  # every sandbox runtime has it; a stand-in may not
            return None
        try:
            data = await download(path)
            return data if isinstance(data, bytes) else None
        except (SandboxError, OSError, ValueError):
            return None

    async def _execute(self, event: ActionEvent) -> tuple[AnyObservation, float]:
        action = event.action
        verdict = check(action, event.security_risk, self.config.security, self.context.workspace)
        decision = verdict.decision
        if decision is None and verdict.needs_confirmation:
            if self.confirm is None:
                decision = escalation_decision(action, self.config.security) or headless_decision(
                    self.config.security.headless_on_confirm
                )
            else:
                reason = verdict.reason or verdict.rule
                request = ConfirmationRequestEvent(
                    id=next(self._ids),
                    cause=event.id,
                    risk=verdict.risk,
                    reason=reason,
                    always_ask=verdict.always_ask,
                )
                decision = await self.confirm(event, request)
        if decision is not None and not decision.approved:
            if decision.verdict == "stop":
                self.stopped = decision.reason or decision.rule
            return RejectedObservation(content=refusal_text(verdict, decision)), 0.0
        tool = REGISTRY.for_action(action)
        started = time.perf_counter()
        observation: AnyObservation = await tool.execute(action, self.context)
        return observation, time.perf_counter() - started
