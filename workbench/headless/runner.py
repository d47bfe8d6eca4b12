"""Headless mode: run one task with no one watching, print progress, exit with a status code.

Start-up overlaps the slow parts: litellm is imported in a worker thread while the sandbox
starts and the session log is opened, so the first request leaves about when the import ends.
With no one to ask, confirmations follow `security.headless_on_confirm` (`--on-confirm`), and
an agent that replies without a tool call is nudged `MAX_NUDGES` times, then the run ends as
"no_finish" (exit code 1, like giving up). Ctrl-C (SIGINT) or SIGTERM stops the run, writes the
final state event naming the signal, closes the sandbox and exits with 130. A session log that
cannot be written (a full disk) stops the run with `log_error` (exit code 12); the summary line
is still printed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from sandbox.runtimes.base import Runtime, SandboxError
from workbench import exit_codes
from workbench.config.places import workspace_of
from workbench.config.schema import Config, LLMConfig
from workbench.controller.loop import Controller, RunResult
from workbench.events import ActionEvent, ErrorEvent, Event, StateChangedEvent
from workbench.exit_codes import Status
from workbench.headless.output import HumanPrinter, JsonPrinter, Printer
from workbench.session.log import SessionLog, SessionLogWriteError
from workbench.session.opening import (
    make_llm,
    make_runtime,
    new_log,
    open_controller,
    runtime_warning,
    scrubber_of,
    start_mcp,
    start_runtime,
)

if TYPE_CHECKING:
    from workbench.session.resume import History
    from workbench.tools.mcp import McpConnection

MAX_NUDGES = 2
NUDGE = (
    "(automatic reply: nobody is watching this headless session.) Continue with the task on "
    "your own. When it is done, call `finish`; if you cannot complete it, call `finish` with "
    'outcome "gave_up" and say why.'
)


class Nudger:
    """Answers an agent that stopped without `finish`, then gives up on it."""

    def __init__(self, controller: Controller) -> None:
        self.controller = controller
        self.nudges = 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, ActionEvent):
            self.nudges = 0
        elif isinstance(event, StateChangedEvent) and event.state == "awaiting_user":
            if self.nudges < MAX_NUDGES:
                self.nudges += 1
                self.controller.send_message(NUDGE)
            else:
                self.controller.stop(
                    f"the agent stopped without calling finish ({MAX_NUDGES} reminders)",
                    status="no_finish",
                )


def _import_litellm_in_background(config: LLMConfig) -> asyncio.Future[None]:
    """Import litellm in a daemon thread (an early exit does not wait for it), then prime it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def work() -> None:
        from workbench.llm import load_litellm, prime_litellm
        from workbench.tools.registry import REGISTRY, schemas

        error: BaseException | None = None
        try:
            load_litellm()
        except BaseException as exc:
            error = exc
        else:
            prime_litellm(config, schemas(REGISTRY.callable()))
        with contextlib.suppress(RuntimeError):  # the loop may be closed by now
            loop.call_soon_threadsafe(_settle, done, error)

    threading.Thread(target=work, name="import-litellm", daemon=True).start()
    return done


def _settle(future: asyncio.Future[None], exc: BaseException | None) -> None:
    if future.done():
        return
    if exc is None:
        future.set_result(None)
    else:
        future.set_exception(exc)


async def run_session(
    config: Config,
    task: str,
    printer: Printer,
    started: float | None = None,
    history: History | None = None,
    runtime: Runtime | None = None,
) -> dict[str, Any]:
    """Run `task` once (continuing `history` if given: a new log linked to its session);
    returns the summary (status, exit code, accounting, session id). A started `runtime`
    given by the caller (an eval trial, which verifies in it afterwards) is used and left
    open; otherwise the configured one is started here and closed at the end."""
    from workbench.llm import LLMError

    started = time.monotonic() if started is None else started
    # litellm's import (and priming) in a thread, meanwhile ...
    warm = _import_litellm_in_background(config.llm)
    try:
        session = new_log(config, parent=history)
    except SessionLogWriteError as exc:
        # e.g. a full disk: nothing could be recorded, so nothing runs
        warm.cancel()
        printer.notice(str(exc))
        return _summary("log_error", str(exc), None, None, None, started, history)
    session_id = session.session_id
    start: dict[str, Any] = {
        "session_id": session_id,
        "model": config.llm.model,
        "workspace": str(workspace_of(config)),
        "log": str(session.path),
    }
    on_host = [name for name, server in config.mcp.servers.items() if not server.sandbox]
    if on_host:  # trusted servers the sandbox does not hold: said before anything runs
        start["mcp_on_host"] = on_host
    if history is not None:
        start |= {"resumed_from": history.parent_id, "resumed_events": len(history.events)}
        if history.files_restored:
            printer.notice(history.files_restored)
    printer.start(start)
    controller: Controller | None = None
    result: RunResult | None = None
    status: Status = "internal_error"
    reason = ""
    main = asyncio.current_task()
    loop = asyncio.get_running_loop()
    interrupts = 0
    stopped_by = ""

    def on_signal(sig: signal.Signals) -> None:
        nonlocal interrupts, stopped_by
        interrupts += 1
        stopped_by = stopped_by or _signal_reason(sig)
        if controller is not None and interrupts == 1:
            printer.notice(f"{stopped_by}: stopping (press Ctrl-C again to abort)")
            controller.stop(stopped_by)
        elif main is not None:
            main.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    owned = runtime is None  # closed here at the end
    mcp: asyncio.Future[McpConnection] | None = None
    try:
        if runtime is None:
            runtime = await start_runtime(make_runtime(config))  # ... while the sandbox starts
        if warning := runtime_warning(runtime):
            printer.notice(warning)
        mcp = asyncio.ensure_future(start_mcp(config, runtime))  # ... and the MCP servers
        await warm
        llm = make_llm(config)  # retries are events: the printer shows them
        controller = await open_controller(config, runtime, llm, session, mcp=await mcp)

        controller.subscribe(printer.event)
        controller.subscribe(Nudger(controller))
        if history is not None:
            printer.skip(history.events)  # its steps go on from the earlier session's
            controller.restore(history)
        result = await controller.run(task)
        status, reason = result.status, result.reason
    except SandboxError as exc:
        status, reason = "sandbox_error", str(exc)
        _record_failure(session, controller, "sandbox", reason, status, printer)
    except asyncio.CancelledError:
        status, reason = "interrupted", stopped_by or "cancelled"
        if controller is None:
            _record_failure(session, None, "interrupted", reason, status, printer)
    except LLMError as exc:  # the client could not even be set up
        status, reason = exc.run_status, str(exc)
        _record_failure(session, controller, f"llm_{exc.kind}", reason, status, printer)
    except Exception as exc:  # a bug: say so, keep the log complete, still close the sandbox
        status, reason = "internal_error", f"{type(exc).__name__}: {exc}"
        _record_failure(session, controller, "internal", reason, status, printer)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if not warm.done():
            warm.cancel()
        if mcp is not None and not mcp.done():
            mcp.cancel()
        from workbench.tools.mcp import close_mcp

        close_mcp()
        if runtime is not None and owned:
            try:
                await asyncio.shield(runtime.close())
            except Exception as exc:  # closing must not hide how the run ended
                printer.notice(f"closing the sandbox failed: {exc}")
        session.close()
    if session.failure is not None and status != "log_error":
        status, reason = "log_error", str(session.failure)
    if status == "log_error":
        printer.notice(reason)
    summary = _summary(status, reason, controller, session_id, session, started, history)
    if config.mcp.servers:  # the servers that did not start (the run may still succeed)
        started_mcp = mcp is not None and mcp.done() and not mcp.cancelled()
        if started_mcp and mcp is not None and mcp.exception() is None:
            summary["mcp_failed"] = list(mcp.result().failed)
        else:  # the session ended before they were started
            summary["mcp_failed"] = []
    return summary


def _summary(
    status: Status,
    reason: str,
    controller: Controller | None,
    session_id: str | None,
    session: SessionLog | None,
    started: float,
    history: History | None = None,
) -> dict[str, Any]:
    """The run's summary line (no session id or log when none could be opened)."""
    return {
        "status": status,
        "exit_code": exit_codes.exit_code(status),
        "reason": reason,
        "steps": controller.steps if controller else 0,
        "prompt_tokens": controller.prompt_tokens if controller else 0,
        "completion_tokens": controller.completion_tokens if controller else 0,
        "tokens": (controller.prompt_tokens + controller.completion_tokens) if controller else 0,
        "cost": controller.cost if controller else 0.0,
        "session_id": session_id,
        "log": str(session.path) if session else None,
        **({"resumed_from": history.parent_id} if history is not None else {}),
        "duration_s": round(time.monotonic() - started, 3),
    }


def _signal_reason(sig: signal.Signals) -> str:
    """How a stop by `sig` is reported: Ctrl-C sends SIGINT; SIGTERM comes from another
    process (a service manager, `kill`, or the agent itself)."""
    if sig == signal.SIGINT:
        return "interrupted by Ctrl-C (SIGINT)"
    return f"stopped by {sig.name}, sent by another process"


def _record_failure(
    session: SessionLog,
    controller: Controller | None,
    kind: str,
    message: str,
    status: Status,
    printer: Printer,
) -> None:
    """Log a failure that happened outside the controller's loop (start-up)."""
    if controller is not None and controller.events:
        return  # the controller already wrote its own error and final state
    events: list[Event] = [
        ErrorEvent(id=1, error_kind=kind, message=message),
        StateChangedEvent(
            id=2,
            state="error" if kind != "interrupted" else "stopped",
            reason=f"{status}: {message}",
        ),
    ]
    for event in events:
        if session.failure is None:
            with contextlib.suppress(SessionLogWriteError):  # run_session reports it
                session.append(event)
        printer.event(event)


def run_headless(
    config: Config,
    task: str,
    json_mode: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    started: float | None = None,
    history: History | None = None,
) -> int:
    """Run one task headless (continuing `history` if given) and return the exit code."""
    scrub = scrubber_of(config)
    kind = JsonPrinter if json_mode else HumanPrinter
    printer = kind(out, err, all_events=config.log_all_events, scrub=scrub)
    try:
        summary = asyncio.run(run_session(config, task, printer, started, history))
    except KeyboardInterrupt:  # Ctrl-C before the loop could install its handler
        return exit_codes.INTERRUPTED
    printer.summary(summary)
    code: int = summary["exit_code"]
    if code not in (exit_codes.SUCCESS, exit_codes.INTERRUPTED) and not json_mode:
        printer.line(f"workbench: {exit_codes.DESCRIPTIONS[code]}", err=True)
    sys.stdout.flush()
    return code
