"""The TUI's backend: starts the sandbox and loads the LLM client in the background, runs the
controller, and answers confirmations from the panel.

Nothing here imports Textual; the app is reached only through `post_message` (events and
progress) and `feed_output` (live shell output). The first paint never waits for any of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.events import ActionEvent, ConfirmationRequestEvent, Event

if TYPE_CHECKING:
    from sandbox.runtimes.base import Runtime
    from workbench.config_schema import Config
    from workbench.controller import Controller
    from workbench.security.policy import Decision
    from workbench.session_log import SessionLog
    from workbench.tui.app import WorkbenchApp

log = logging.getLogger(__name__)

IMPORT_SWITCH_INTERVAL_S = 0.0005
"""Python's GIL switch interval while litellm imports in a thread (the default is 5 ms)."""


def allow_rule(action_event: ActionEvent) -> str | None:
    """An allow rule that matches exactly this action (glob characters escaped)."""
    from workbench.security.policy import action_text

    kind, text = action_text(action_event.action)
    if not kind:
        return None
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in text.strip())
    return f"{kind}:{escaped}"


class ControllerBackend:
    """Drives one controller per session for the app (see `workbench.tui.backend.Backend`)."""

    def __init__(self, config: Config, config_path: Path | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.app: WorkbenchApp | None = None
        self.runtime: Runtime | None = None
        self.controller: Controller | None = None
        self.session: SessionLog | None = None
        self._llm_ready = asyncio.Event()
        self._sandbox_ready = asyncio.Event()
        self._failed: dict[str, str] = {}
        self._run: asyncio.Task[Any] | None = None
        self._pending: dict[int, asyncio.Future[str]] = {}

    # ------------------------------------------------------------------ start-up

    def _progress(self, part: str, state: str, detail: str = "") -> None:
        from workbench.tui.messages import ProgressChanged

        if self.app is not None:
            self.app.post_message(ProgressChanged(part, state, detail))

    def attach(self, app: WorkbenchApp) -> None:
        """Report to `app` from now on: a task typed before start-up ends is shown waiting."""
        self.app = app

    async def start(self) -> None:
        """Load litellm and start the sandbox, side by side, reporting progress."""
        await asyncio.gather(self._load_llm(), self._start_sandbox())

    async def _load_llm(self) -> None:
        from workbench.llm import warm_up

        self._progress("llm", "loading…")
        # The import runs in a thread and holds the GIL for whole switch intervals; a shorter
        # interval hands it back to the UI's thread sooner (keys, the footer's first frames).
        previous = sys.getswitchinterval()
        sys.setswitchinterval(IMPORT_SWITCH_INTERVAL_S)
        try:
            await warm_up()
        except Exception as exc:
            self._failed["llm"] = f"the LLM library could not be loaded: {exc}"
            self._progress("llm", "failed", self._failed["llm"])
        else:
            self._progress("llm", "ready")
        finally:
            sys.setswitchinterval(previous)
        self._llm_ready.set()

    async def _start_sandbox(self) -> None:
        from sandbox.runtimes.base import SandboxError
        from workbench.headless import make_runtime, workspace_of

        self._progress("sandbox", "starting…")
        try:
            runtime = make_runtime(self.config, workspace_of(self.config))
            self.runtime = runtime
            await runtime.start()
        except (SandboxError, OSError, ValueError) as exc:
            self._failed["sandbox"] = f"the sandbox did not start: {exc}"
            self._progress("sandbox", "failed", self._failed["sandbox"])
        else:
            self._progress("sandbox", "ready")
        self._sandbox_ready.set()

    # ------------------------------------------------------------------ tasks

    async def submit(self, text: str) -> None:
        """Start a task, or queue `text` for the running one."""
        if self._run is not None and not self._run.done() and self.controller is not None:
            from workbench.tui.messages import MessageQueued

            self.controller.send_message(text)
            if self.app is not None:
                self.app.post_message(MessageQueued(text))
            return
        if not self.config.llm.model:
            self._notify("No model set: open Settings (ctrl+s) and set one.", "error")
            return
        waiting = not (self._llm_ready.is_set() and self._sandbox_ready.is_set())
        if waiting:
            self._post_waiting(text)
        await self._llm_ready.wait()
        await self._sandbox_ready.wait()
        if waiting:
            self._post_waiting("")
        if self._failed:
            self._notify("; ".join(self._failed.values()), "error")
            return
        self._start_run(await self._controller(), text)

    def _start_run(self, controller: Controller, task: str) -> None:
        self._run = asyncio.create_task(controller.run(task))
        self._run.add_done_callback(self._run_done)

    def _run_done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._notify(f"The agent stopped with an error: {task.exception()}", "error")
        controller = self.controller
        left = controller.take_queued() if controller is not None else []
        if not left or controller is None:
            return
        # Sent while the agent was ending its run: if it finished, they are the next task (as
        # if typed after the finish); if it was stopped, they go back to the input box.
        if task.cancelled():
            ended = "cancelled"
        else:
            ended = "error" if task.exception() is not None else task.result().status
        if ended in ("success", "gave_up"):
            self._start_run(controller, "\n\n".join(left))
            return
        from workbench.tui.messages import QueuedMessagesReturned

        why = f"the run ended ({ended}) before reading it"
        if self.app is not None:
            self.app.post_message(QueuedMessagesReturned(left, why))

    async def _controller(self) -> Controller:
        if self.controller is not None:
            return self.controller
        from workbench.controller import Controller
        from workbench.headless import secrets_of, sessions_dir_of, workspace_of
        from workbench.llm import LLMClient
        from workbench.session_log import SessionLog, make_header, new_session_id

        assert self.runtime is not None
        workspace = workspace_of(self.config)
        header = make_header(
            new_session_id(), workspace, self.config.llm.model, self.config.redacted_dict()
        )
        self.session = SessionLog.create(
            sessions_dir_of(self.config), header, secrets=secrets_of(self.config)
        )
        info = await self.runtime.info()
        llm = LLMClient(
            self.config.llm,
            # Shown until the next attempt: a wait of 30 s must not look like nothing happening.
            on_retry=lambda err, n, wait: self._notify(
                err.retry_notice(n, wait), "warning", timeout=max(5.0, wait + 1.0)
            ),
        )
        controller = Controller(
            self.config,
            self.runtime,
            llm,
            self.session,
            confirm=self._confirm,
            workspace=info.workspace,
            executors=info.executors,
        )
        controller.subscribe(self._on_event)
        if self.app is not None:
            controller.subscribe_output(self.app.feed_output)
        self.controller = controller
        return controller

    def _on_event(self, event: Event) -> None:
        from workbench.tui.messages import EventArrived

        if self.app is not None:
            self.app.post_message(EventArrived(event))

    def _post_waiting(self, text: str) -> None:
        from workbench.tui.messages import TaskWaiting

        if self.app is not None:
            self.app.post_message(TaskWaiting(text))

    def _notify(
        self, text: str, severity: str = "information", timeout: float | None = None
    ) -> None:
        if self.app is not None:
            self.app.notify(text, severity=severity, timeout=timeout, markup=False)  # type: ignore[arg-type]

    # ------------------------------------------------------------------ confirmations

    async def _confirm(self, action: ActionEvent, request: ConfirmationRequestEvent) -> Decision:
        from workbench.security.policy import Decision

        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[request.cause] = future
        try:
            answer = await future
        finally:
            self._pending.pop(request.cause, None)
        if answer == "reject":
            return Decision("reject", "user", "rejected in the TUI")
        if answer == "always":
            rule = allow_rule(action)
            if rule is not None:
                self._save_allow_rule(rule)
                return Decision("approve", f"allow:{rule}", "always allowed in the TUI")
        return Decision("approve", "user", "approved in the TUI")

    def _save_allow_rule(self, rule: str) -> None:
        from workbench.config import ConfigError, save_setting
        from workbench.paths import default_config_file

        rules = [*self.config.security.allow, rule]
        self.config.security.allow = rules
        path = self.config_path or self.config.source_file or default_config_file()
        try:
            save_setting(path, "security.allow", rules)
        except (ConfigError, OSError) as exc:
            self._notify(f"Allowed for this session only; saving failed: {exc}", "warning")
        else:
            self._notify(f"Saved allow rule {rule!r} to {path}")

    async def answer(self, cause: int, answer: str) -> None:
        """The person answered the confirmation about action `cause`."""
        future = self._pending.get(cause)
        if future is not None and not future.done():
            future.set_result(answer)

    # ------------------------------------------------------------------ the shell and files

    async def shell_input(self, text: str) -> None:
        """Send text or a key to the running command (output comes back on the stream)."""
        if self.runtime is None or not self._sandbox_ready.is_set():
            self._notify("The sandbox is not running yet.", "warning")
            return
        # Typed straight into the command: an is_input action would queue behind the agent's.
        if not await self.runtime.send_input(text):
            self._notify("No command is running in the shell.", "warning")

    async def load_artifact(self, name: str) -> bytes:
        """A screenshot or image by name: from the session folder, else from the sandbox."""
        if self.session is not None:
            stored = self.session.payload_dir / Path(name).name
            if stored.is_file():
                return stored.read_bytes()
        if self.runtime is None:
            raise FileNotFoundError(name)
        return await self.runtime.download(name)

    # ------------------------------------------------------------------ control

    def pause(self) -> None:
        """Pause after the current step."""
        if self.controller is not None:
            self.controller.pause()

    def resume(self) -> None:
        """Continue after `pause`."""
        if self.controller is not None:
            self.controller.resume()

    def stop(self) -> None:
        """Stop the running task."""
        if self.controller is not None:
            self.controller.stop()
        for future in self._pending.values():
            if not future.done():
                future.set_result("reject")

    async def new_session(self) -> None:
        """End the current session; the next task opens a new log."""
        await self._end_session()

    async def _end_session(self) -> None:
        self.stop()
        if self._run is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._run, timeout=5)
            self._run = None
        self.controller = None
        if self.session is not None:
            self.session.close()
            self.session = None

    async def close(self) -> None:
        """Stop the agent, close the log and the sandbox (no process left behind)."""
        await self._end_session()
        if self.runtime is not None:
            try:
                await self.runtime.close()
            except Exception as exc:  # closing must not keep the app from exiting
                log.warning("closing the sandbox failed: %s", exc)
            self.runtime = None
