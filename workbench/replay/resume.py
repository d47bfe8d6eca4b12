"""`--continue-from N`: the recorded actions of steps 1..N re-run in a fresh sandbox, then the
configured model goes on, headless, in a new session whose log header names the old one
(`parent`: its id, log and N).

The new session starts with the recorded history up to the end of step N, its actions' paths
moved to the new workspace and their results the re-run's (a result that differs is reported,
and the model sees what is true now). Its first LLM request carries exactly that history.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sandbox.runtimes.base import SandboxError
from workbench import exit_codes
from workbench.checkpoints.restore import restore_files
from workbench.config.places import workspace_of
from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    CondensationEvent,
    Event,
    LLMCallEvent,
    LLMRetryEvent,
    LLMWaitEvent,
    ObservationEvent,
)
from workbench.headless.output import HumanPrinter, JsonPrinter, Printer
from workbench.headless.runner import Nudger
from workbench.replay.recording import Recording
from workbench.replay.report import RerunReport
from workbench.replay.rerun import Rerunner, StepResult
from workbench.session.opening import (
    make_llm,
    make_runtime,
    new_log,
    open_controller,
    runtime_warning,
    scrubber_of,
    start_runtime,
)
from workbench.session.steps import is_step
from workbench.tools.base import ToolContext


def history_to(recording: Recording, n: int) -> list[Event]:
    """The recorded events of steps up to `n` (0: the task only), in their order. The later
    actions of the reply that made step `n` are left out with their results."""
    events = recording.events
    first = next((i for i, event in enumerate(events) if is_step(event)), len(events))
    model = (LLMCallEvent, LLMRetryEvent, LLMWaitEvent)  # of a reply left out when n is 0
    return [
        event
        for i, (event, step) in enumerate(zip(events, recording.steps, strict=True))
        if step <= n or (i < first and not isinstance(event, model))
    ]


def rewritten(history: list[Event], results: list[StepResult]) -> list[Event]:
    """`history` renumbered from 1, with the re-run's actions and results in it."""
    by_id = {result.action.id: result for result in results}
    ids: dict[int, int] = {}
    out: list[Event] = []
    for event in history:
        new_id = len(out) + 1
        ids[event.id] = new_id
        update: dict[str, Any] = {"id": new_id}
        if isinstance(event, ActionEvent) and event.id in by_id:
            update["action"] = by_id[event.id].action.action
        elif isinstance(event, ObservationEvent):
            result = by_id.get(event.cause)
            if result is not None and result.new is not None:
                update["observation"] = result.new
        cause = getattr(event, "cause", None)
        if isinstance(cause, int):
            update["cause"] = ids.get(cause, cause)
        if isinstance(event, CondensationEvent):  # what it condensed, by the new ids
            update["elided"] = [ids.get(old, old) for old in event.elided]
            for name in ("summarized_from", "summarized_to"):
                old = getattr(event, name)
                update[name] = ids.get(old, old) if old else 0
        out.append(event.model_copy(update=update))
    return out


async def continue_from(recording: Recording, config: Config, n: int, json_mode: bool) -> int:
    """Re-run steps 1..n, then let the live model go on; returns the exit code."""
    from workbench.llm import LLMError, load_litellm

    started = time.monotonic()
    printer: Printer = (JsonPrinter if json_mode else HumanPrinter)(
        all_events=config.log_all_events, scrub=scrubber_of(config)
    )
    warm = asyncio.ensure_future(asyncio.to_thread(load_litellm))
    try:
        runtime = await start_runtime(make_runtime(config))
    except SandboxError as exc:
        printer.notice(f"the sandbox could not start: {exc}")
        return exit_codes.SANDBOX_ERROR
    session = None
    try:
        if warning := runtime_warning(runtime):
            printer.notice(warning)
        info = await runtime.info()
        history = history_to(recording, n)
        past = replace(recording, events=history)
        rerunner = Rerunner(past, config, ToolContext(runtime, info.workspace))
        results = [result async for result in rerunner.run()]
        _report_differences(results, printer, json_mode)
        # The re-run rebuilt the files; where step n has a checkpoint, they are made exact.
        restored = restore_files(
            history,
            recording.session_id,
            Path(recording.workspace),
            workspace_of(config),
            config.checkpoints,
        )
        if restored:
            printer.notice(restored)
        await warm
        parent = {"session_id": recording.session_id, "log": str(recording.path.absolute())}
        session = new_log(config, link=parent | {"step": n, "how": "continue-from"})
        llm = make_llm(config)  # retries are events: the printer shows them
        controller = await open_controller(config, runtime, llm, session)
        adopted = rewritten(history, results)
        controller.adopt_history(adopted)
        printer.skip(adopted)  # its steps go on from the recording's
        printer.start(
            {
                "session_id": session.session_id,
                "model": config.llm.model,
                "workspace": info.workspace,
                "log": str(session.path),
            }
        )
        controller.subscribe(printer.event)
        controller.subscribe(Nudger(controller))
        result = await controller.run(None)
    except SandboxError as exc:
        printer.notice(f"the sandbox failed: {exc}")
        return exit_codes.SANDBOX_ERROR
    except LLMError as exc:
        printer.notice(str(exc))
        return exit_codes.LLM_ERROR
    finally:
        await asyncio.shield(runtime.close())
        if session is not None:
            session.close()
    summary = {
        "status": result.status,
        "exit_code": result.exit_code,
        "reason": result.reason,
        "steps": result.steps,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "tokens": result.tokens,
        "cost": result.cost,
        "session_id": result.session_id,
        "log": str(session.path),
        "parent": recording.session_id,
        "duration_s": round(time.monotonic() - started, 3),
    }
    printer.summary(summary)
    return result.exit_code


def _report_differences(results: list[StepResult], printer: Printer, json_mode: bool) -> None:
    """Re-run steps whose result differs: told on stderr (JSON) or as the re-run shows them."""
    for result in results:
        if json_mode:
            if result.differs:
                printer.notice(
                    f"step {result.step} differs from the recording; the model sees the new result"
                )
        elif result.differs or result.skipped:
            RerunReport(printer).step(result)
