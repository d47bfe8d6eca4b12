"""The agent loop: ask the LLM, turn its tool calls into actions, run them, record everything.

UI-free: front ends `subscribe` to events (and to live shell output) and call `send_message`,
`pause`, `resume` and `stop`. Every event goes to the session log before subscribers see it.
A run ends with a `RunResult` whose `status` maps to an exit code (`workbench.exit_codes`).
Each request is kept under the model's context window by a `Condenser` (`condenser.py`), which
also condenses and retries after the provider refuses one for its length.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Awaitable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sandbox.runtimes.base import Runtime, SandboxError
from workbench import exit_codes
from workbench.agent.boundary import clean_reply
from workbench.agent.messages import MessageBuilder
from workbench.agent.prompt import system_prompt
from workbench.checkpoints.recorder import Checkpointer
from workbench.config.schema import Config
from workbench.controller.action_output import LiveOutput, cut_short, lost, with_output_so_far
from workbench.controller.budget import Budget
from workbench.controller.condenser import Condenser
from workbench.controller.confirming import ConfirmHook, confirmed
from workbench.controller.event_hub import EventHub
from workbench.controller.llm_turn import LLMTurn
from workbench.controller.run_stop import RunStop
from workbench.controller.stuck_watch import StuckWatch
from workbench.controller.tool_calls import read_tool_calls
from workbench.events import (
    ActionEvent,
    AgentState,
    AnyObservation,
    CondensationEvent,
    ErrorEvent,
    Event,
    InstructionsEvent,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
)
from workbench.exit_codes import RunResult, Status
from workbench.session.log import SessionLog, SessionLogWriteError
from workbench.tools.base import ToolContext
from workbench.tools.registry import REGISTRY, schemas

if TYPE_CHECKING:
    from workbench.agent.instructions import Instructions
    from workbench.llm import ChatModel
    from workbench.security.net_gate import NetGate
    from workbench.session.resume import History

__all__ = ["ConfirmHook", "Controller", "RunResult"]

log = logging.getLogger(__name__)
T = TypeVar("T")

UNREADABLE_REPLY = (
    "Your last reply could not be read, so none of its tool calls ran: {why} Send the call "
    "again with arguments nested at most a few levels deep and numbers of ordinary size."
)
MAX_LENGTH_REFUSALS = 3
"""Refusals for length in one step, each followed by a condensation, before the run fails."""

_FINAL_STATE: dict[Status, AgentState] = {"success": "finished", "gave_up": "finished"}
_ERROR_STATUSES = ("config_error", "llm_error", "sandbox_error", "internal_error", "log_error")


class Controller(EventHub):
    """Runs the agent for one session: LLM calls, actions in the runtime, events out."""

    def __init__(
        self,
        config: Config,
        runtime: Runtime,
        llm: ChatModel,
        session: SessionLog,
        confirm: ConfirmHook | None = None,
        workspace: str | None = None,
        executors: Mapping[str, bool] | None = None,
        instructions: Instructions | None = None,
        world: str = "",
    ) -> None:
        super().__init__(session, runtime)
        self.config = config
        self.llm = llm
        self.confirm = confirm
        self.workspace = workspace or session.header.workspace
        # Offer only the tools the sandbox can run (a Docker image has no browser, for one).
        self.tools = REGISTRY.offered(config, executors)
        self.tool_schemas = schemas(self.tools)
        self.instructions = instructions
        """The project instructions in the system prompt (announced by the first run)."""
        self.system = system_prompt(
            self.workspace, self.tools, instructions.text if instructions else "", world
        )
        host = Path(config.sandbox.workspace or os.getcwd()).expanduser().resolve()
        self._tool_context = ToolContext(runtime, self.workspace, host_workspace=str(host))
        # The conversation sent to the LLM, grown with the events instead of remade each step.
        self._messages = MessageBuilder(
            self.system, config.agent.max_observation_chars, scrub=session.scrub
        )
        self.condenser = Condenser(
            config,
            self._messages,
            self.tool_schemas,
            lambda messages: self._guard(self.llm.complete(messages, None)),
            self._next_id,
            self._condensed,
        )
        """Keeps each request under the model's context window."""
        self.steps = 0
        """LLM calls in the current run (the number `max_iterations` limits)."""
        self.total_steps = 0
        self.max_iterations = config.agent.max_iterations
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost = 0.0
        self.tokens_estimated = False
        """True once a reply's tokens were estimated (the provider reported no usage)."""
        self.budget = Budget.from_config(config.budget)
        self._inbox: deque[str] = deque()
        self._wakeup = asyncio.Event()
        self._resumed = asyncio.Event()
        self._resumed.set()
        self._stop_request: RunStop | None = None
        self._current: asyncio.Future[Any] | None = None
        self._files = Checkpointer(config.checkpoints, runtime, self._next_id, self._emit)
        """Checkpoints of the workspace after each step that can change files."""
        self._stuck = StuckWatch(self, config.agent.stuck_threshold)
        self._malformed_run = 0
        self._llm_turn = LLMTurn(self, config, self._guard)
        self._live = LiveOutput()
        """The running action's streamed output: recorded if a stop or a crash cuts it short."""
        self.subscribe_output(self._live.feed)
        self.acting: ActionEvent | None = None
        """The action running in the sandbox now (the network proxy names it when it asks)."""
        self.net_gate: NetGate | None = None
        """The network policy's side of the proxy (`net_gate.attach`), under "allowlist"."""

    # ------------------------------------------------------------------ front-end API

    @property
    def session_id(self) -> str:
        """The id of the session this controller records."""
        return self.session.session_id

    def send_message(self, text: str) -> None:
        """Queue a user message; the agent reads it before its next LLM call."""
        self._inbox.append(text)
        self._wakeup.set()

    def take_queued(self) -> list[str]:
        """The queued messages no step has read yet (a run that ended left them), removed."""
        texts = list(self._inbox)
        self._inbox.clear()
        return texts

    def condense_now(self) -> None:
        """Condense the history before the next LLM call (the TUI's "condense now")."""
        self.condenser.request_now()

    def pause(self) -> None:
        """Hold the loop before its next LLM call or action (the current one completes)."""
        self._resumed.clear()

    def resume(self) -> None:
        """Continue after `pause`."""
        self._resumed.set()

    def stop(self, reason: str = "stopped by the user", status: Status = "interrupted") -> None:
        """End the run now: the LLM call or action in flight is cancelled."""
        if self._stop_request is None:
            self._stop_request = RunStop(status, reason)
        if self._current is not None:
            self._current.cancel()
        self._wakeup.set()
        self._resumed.set()

    def restore(self, history: History) -> None:
        """Start from a saved session: its events are copied into this log (subscribers do not
        see them), its tokens and cost count towards this session's budget, and the model is
        told, in a message, that the shell and the kernel start afresh."""
        from workbench.session.resume import resume_note

        if self.events:
            raise RuntimeError("restore() must come before any event of this session")
        for event in history.events:
            self.events.append(event)
            self.session.append(event)
        self.total_steps = history.steps
        self.prompt_tokens = history.prompt_tokens
        self.completion_tokens = history.completion_tokens
        self.cost = history.cost
        note = resume_note(history, self.workspace)
        self._emit(MessageEvent(id=self._next_id(), source="environment", text=note))

    # ------------------------------------------------------------------ the loop

    def adopt_history(self, events: Iterable[Event]) -> None:
        """Take an earlier run's events (numbered from 1 on, before any of this controller's)
        as this session's start: logged and shown like new ones, and sent with the next LLM
        call. Then `run(None)` goes on from them."""
        for event in events:
            if event.id != self._next_id():
                raise ValueError(f"event {event.id} comes where {self._next_id()} should")
            self._emit(event)

    async def run(self, task: str | None) -> RunResult:
        """Work on `task` until finished, stopped, failed or out of steps or budget (None: go
        on from the history `adopt_history` gave, with no new message)."""
        if self._running:
            raise RuntimeError("this controller is already running a task")
        self._running = True
        self._stop_request = None
        self.steps = 0
        self._malformed_run = 0
        self._stuck.reset()
        if self._output_subscribers:
            self._start_pump()
        status: Status = "internal_error"
        reason = ""
        try:
            self._announce_instructions()
            if task is not None:
                self._emit(MessageEvent(id=self._next_id(), source="user", text=task))
            self._emit_notices()
            self._set_state("running")
            await self._loop()
        except RunStop as stop:
            status, reason = stop.status, stop.reason
        except SessionLogWriteError:
            pass  # _finish_run reports it
        except asyncio.CancelledError:
            status, reason = "interrupted", "the run was cancelled"
            self._finish_run(status, reason)
            raise
        except Exception as exc:  # a bug: keep the session log complete and say so
            log.exception("controller failed")
            reason = f"{type(exc).__name__}: {exc}"
            with contextlib.suppress(SessionLogWriteError):  # _finish_run reports it
                self._emit(ErrorEvent(id=self._next_id(), error_kind="internal", message=reason))
        return self._finish_run(status, reason)

    def _announce_instructions(self) -> None:
        """Say once, at this controller's first run, which project instructions it read."""
        found = self.instructions
        if found is None:
            return
        if found.files or found.notes:
            event = InstructionsEvent(
                id=self._next_id(), files=found.files, chars=len(found.text), notes=found.notes
            )
            self._emit(event)
        self.instructions = None

    def _condensed(self, event: CondensationEvent) -> None:
        """Record a condensation; its summary call counts like any other."""
        self.prompt_tokens += event.prompt_tokens
        self.completion_tokens += event.completion_tokens
        self.cost += event.cost
        self._emit(event)

    def _finish_run(self, status: Status, reason: str) -> RunResult:
        self._running = False
        self._stop_pump()
        failure = self.session.failure
        if failure is not None:  # the log is not whole: that is how this run ended
            status, reason = "log_error", str(failure)
        state = _FINAL_STATE.get(status, "error" if status in _ERROR_STATUSES else "stopped")
        with contextlib.suppress(SessionLogWriteError):  # shown, not logged; said below
            self._set_state(state, f"{status}: {reason}" if reason else status)
        if failure is None and self.session.failure is not None:
            status, reason = "log_error", str(self.session.failure)
        return RunResult(
            status=status,
            exit_code=exit_codes.exit_code(status),
            steps=self.steps,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cost=self.cost,
            session_id=self.session_id,
            reason=reason,
        )

    async def _loop(self) -> None:
        while True:
            await self._checkpoint()
            if self.state == "awaiting_user" and not self._inbox:
                self._wakeup.clear()
                await self._guard(self._wakeup.wait(), timed=False)
                continue
            while self._inbox:
                text = self._inbox.popleft()
                self._emit(MessageEvent(id=self._next_id(), source="user", text=text))
            if self.state != "running":
                self._set_state("running")
            await self._step()

    async def _step(self) -> None:
        if self.steps >= self.max_iterations:
            raise RunStop("max_iterations", f"reached the limit of {self.max_iterations} steps")
        over = self.budget.exceeded(self.prompt_tokens + self.completion_tokens, self.cost)
        if over:
            if self.tokens_estimated and over.startswith("token"):
                over += "; some estimated: the provider reported no usage"
            raise RunStop("budget", over)
        messages = await self.condenser.messages(self.events)
        from workbench.llm import LLMError

        refusals = 0
        while True:
            try:
                response = await self._llm_turn.ask(self.llm, messages, self.tool_schemas)
                break
            except LLMError as exc:
                error = exc
            if error.kind == "context_window" and refusals < MAX_LENGTH_REFUSALS:
                refusals += 1  # condense and retry; None: nothing left to cut
                retry = await self.condenser.after_refusal(self.events, error)
                if retry is not None:
                    messages = retry
                    continue
            if error.kind == "bad_reply":  # the model's own output: a malformed call to answer
                self.steps += 1
                self.total_steps += 1
                self._malformed(UNREADABLE_REPLY.format(why=error))
                return
            self._emit(
                ErrorEvent(id=self._next_id(), error_kind=f"llm_{error.kind}", message=str(error))
            )
            raise RunStop(error.run_status, str(error)) from None
        response = clean_reply(response)
        self.steps += 1
        self.total_steps += 1
        self.prompt_tokens += response.prompt_tokens
        self.completion_tokens += response.completion_tokens
        self.cost += response.cost
        self.tokens_estimated = self.tokens_estimated or response.estimated
        self._emit(
            LLMCallEvent(
                id=self._next_id(),
                model=response.model,
                prompt_tokens=response.prompt_tokens,
                completion_tokens=response.completion_tokens,
                cost=response.cost,
                latency_ms=response.latency_ms,
                retries=response.retries,
                estimated=response.estimated,
            )
        )
        if not response.tool_calls:
            self._emit(MessageEvent(id=self._next_id(), source="agent", text=response.content))
            self._set_state("awaiting_user", "the agent replied without a tool call")
            return
        soft = self.config.sandbox.soft_timeout_s
        actions, readable = read_tool_calls(
            self, response.content, response.tool_calls, self.tools, soft
        )
        for ok in readable:
            self._malformed_run = 0 if ok else self._malformed_run + 1
        if actions:
            done = sum(isinstance(e, ActionEvent) for e in self.events) - len(actions)
            await self._files.start(done)
        for event in actions:
            await self._checkpoint()
            await self._run_action(event)
            await self._files.after(event)
        self._check_malformed()
        self._stuck.check()

    def _malformed(self, text: str) -> None:
        """Answer a reply none of whose calls could be read, and count it as malformed."""
        self._malformed_run += 1
        self._emit(MessageEvent(id=self._next_id(), source="environment", text=text))
        self._check_malformed()

    def _check_malformed(self) -> None:
        limit = self.config.agent.max_malformed_calls
        if self._malformed_run >= limit:
            raise RunStop("malformed", f"{self._malformed_run} malformed tool calls in a row")

    async def _run_action(self, event: ActionEvent) -> None:
        action = event.action
        tool = REGISTRY.for_action(action)
        ends = tool.ends_run(action)
        if ends is not None:
            raise RunStop(*ends)
        config, workspace = self.config, self.workspace
        if not await confirmed(
            self, event, config, workspace, self.confirm, self._guard, self._observe
        ):
            return
        self._live.begin(action)
        self.acting = event
        try:
            observation = await self._guard(tool.execute(action, self._tool_context))
        except SandboxError as exc:
            self._observe(event, lost(self._live, f"The sandbox failed during this action: {exc}"))
            self._emit(ErrorEvent(id=self._next_id(), error_kind="sandbox", message=str(exc)))
            raise RunStop("sandbox_error", str(exc)) from None
        except RunStop as stop:
            await tool.interrupt(self._tool_context)  # what it started may still be running
            self._observe(event, await cut_short(action, self._live, stop.status, stop.reason))
            raise
        finally:
            self._live.end()
            self.acting = None
        observation = with_output_so_far(observation, self._live)
        if self.net_gate is not None:  # the hosts its commands were refused, and why
            observation = self.net_gate.annotate(event, observation)
        await self._keep_images(observation)
        self._observe(event, observation)
        if (ends := tool.ends_run_after(observation)) is not None:
            raise RunStop(*ends)

    async def _keep_images(self, observation: AnyObservation) -> None:
        """Copy the images an observation names into the session folder, so a reopened
        session shows them after the sandbox is gone. A failed copy costs only the picture."""
        for name in REGISTRY.for_observation(observation).files(observation):
            try:
                self.session.write_payload(name, await self.runtime.download(name))
            except (SandboxError, OSError, ValueError) as exc:
                log.warning("could not keep image %s in the session: %s", name, exc)

    def _observe(self, event: ActionEvent, observation: AnyObservation) -> None:
        self._emit(
            ObservationEvent(
                id=self._next_id(),
                cause=event.id,
                tool_call_id=event.tool_call_id,
                observation=observation,
            )
        )
        self._stuck.record(event, observation)

    async def _checkpoint(self) -> None:
        """Raise the pending stop (or the log's failure), or wait here while paused."""
        if self._stop_request is not None:
            raise self._stop_request
        if self.session.failure is not None:  # nothing more may happen unrecorded
            raise self.session.failure
        if not self._resumed.is_set():
            previous = self.state
            self._set_state("paused")
            await self._guard(self._resumed.wait(), timed=False)
            self._set_state(previous)

    async def _guard(self, awaitable: Awaitable[T], timed: bool = True) -> T:
        """Await `awaitable` so that `stop()` and the wall-time budget can cut it short."""
        if self._stop_request is not None:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise self._stop_request
        task: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        self._current = task
        timeout = self.budget.remaining_wall() if timed else None
        try:
            done, _ = await asyncio.wait({task}, timeout=timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            self._current = None
        if not done:
            task.cancel()
            raise RunStop("budget", f"wall-time budget of {self.budget.max_wall_s:g} s used up")
        if task.cancelled():
            if self._stop_request is not None:
                raise self._stop_request
            raise asyncio.CancelledError()
        return task.result()
