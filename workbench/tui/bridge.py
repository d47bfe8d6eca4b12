"""The TUI's backend: starts the sandbox and loads the LLM client in the background, opens the
session (`workbench.session.opening`) on the first task, runs the controller, and answers
confirmations from the panel.

Nothing here imports Textual at import time; the app is reached only through `AppPort`
(`post_message` for events and progress, `notify`, `feed_output` for live shell output). The
first paint never waits for any of it. One session, one controller, one run at a time: a
message sent while the first task waits for start-up or for its session is queued for it.
`continue_session` opens the next session as the continuation of a saved one (resume, branch:
`workbench.session.resume`), in a sandbox no session has used yet, on the saved session's workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.tui.confirmations import Confirmations

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sandbox.protocol import CommandFinished, OutputChunk
    from sandbox.runtimes.base import Runtime
    from workbench.config.schema import Config
    from workbench.controller.loop import Controller
    from workbench.events import Event, LLMActivity
    from workbench.session.log import SessionLog
    from workbench.session.resume import History
    from workbench.tools.mcp import McpConnection
    from workbench.tui.backend import AllowOffer, AppPort

log = logging.getLogger(__name__)

IMPORT_SWITCH_INTERVAL_S = 0.0005
"""Python's GIL switch interval while litellm imports in a thread (the default is 5 ms)."""


def _is_workspace_of(config: Config, workspace: Path) -> bool:
    """Whether `config` already puts the sandbox on `workspace` (which must still exist)."""
    from workbench.config.places import workspace_of

    if not workspace.is_dir():
        raise ValueError(f"the session's workspace {workspace} no longer exists")
    return workspace_of(config) == workspace.resolve()


class ControllerBackend:
    """Drives one controller per session for the app (see `workbench.tui.backend.Backend`)."""

    def __init__(self, config: Config, config_path: Path | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.app: AppPort | None = None
        self.runtime: Runtime | None = None
        self.controller: Controller | None = None
        self.session: SessionLog | None = None
        self._llm_ready = asyncio.Event()
        self._sandbox_ready = asyncio.Event()
        self._mcp: tuple[Runtime, asyncio.Future[McpConnection]] | None = None
        """The MCP servers starting in a new sandbox, before the first task needs them."""
        self._failed: dict[str, str] = {}
        self._run: asyncio.Task[Any] | None = None
        self._starting = False
        """A task is waiting for start-up or for its session; later messages queue for it."""
        self._early: list[str] = []
        self._abandoned = False
        """A new session was asked for while a task waited for start-up: it is given back."""
        """Messages sent while `_starting`: they go to the agent right after the task."""
        self.confirmations = Confirmations(config, config_path, lambda: self.app, self._workspace)
        self._history: History | None = None
        """A saved session the next session continues (`continue_session`)."""
        self._runtime_used = False
        """A session ran in the sandbox: its shell state is not a fresh one any more."""
        self._live: Controller | None = None
        """The controller whose events reach the app: none once its session is ending."""
        self._started_with = ""
        self._switching = asyncio.Lock()
        """Held while one session ends and the next one's sandbox starts: a task sent right
        after ctrl+n waits for that sandbox instead of finding none."""
        """The sandbox's settings (`_sandbox_settings`) when it was started."""

    # ------------------------------------------------------------------ start-up

    def _progress(self, part: str, state: str, detail: str = "") -> None:
        from workbench.tui.messages import ProgressChanged

        if self.app is not None:
            self.app.post_message(ProgressChanged(part, state, detail))

    def attach(self, app: AppPort) -> None:
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
        from workbench.session.opening import (
            make_runtime,
            runtime_limits,
            runtime_warning,
            start_mcp,
        )

        self._progress("sandbox", "starting…")
        self._started_with = self._sandbox_settings()
        try:
            # Off the event loop: the runtime walks the workspace once (~1 s per 50k files).
            runtime = await asyncio.to_thread(make_runtime, self.config)
            self.runtime = runtime
            await runtime.start()
        except (SandboxError, OSError, ValueError) as exc:
            self._failed["sandbox"] = f"the sandbox did not start: {exc}"
            self._progress("sandbox", "failed", self._failed["sandbox"])
        else:
            self._progress("sandbox", "ready", runtime_limits(runtime) or "")
            if warning := runtime_warning(runtime):
                self._notify(warning, "warning", timeout=30)
            if self.config.mcp.servers:  # started now, beside litellm's import
                self._mcp = (runtime, asyncio.ensure_future(start_mcp(self.config, runtime)))
        self._sandbox_ready.set()

    # ------------------------------------------------------------------ tasks

    async def submit(self, text: str) -> None:
        """Start a task, or queue `text` for the task that runs or is starting."""
        if self._run is not None and not self._run.done() and self.controller is not None:
            self.controller.send_message(text)
            self._post_queued(text)
            return
        if self._starting:  # the first task still waits: this one goes to it, not to a new run
            self._early.append(text)
            self._post_queued(text)
            return
        if not self.config.llm.model:
            self._notify("No model set: open Settings (ctrl+s) and set one.", "error")
            return
        self._starting = True
        self._abandoned = False
        failure = "start-up failed"
        try:
            async with self._switching:
                controller = await self._open(text)
        except Exception as exc:  # the session could not be opened: say so, keep the messages
            controller, failure = None, f"the session could not be opened ({exc})"
            self._notify(f"The session could not be opened: {exc}", "error")
        finally:
            self._starting = False
        early, self._early = self._early, []
        if controller is None and self._abandoned:
            self._give_back([text, *early], "a new session was started before it began")
            return
        if controller is None:
            self._give_back(early, failure)
            return
        self._start_run(controller, text)
        for message in early:  # read by the agent right after the task
            controller.send_message(message)

    async def _open(self, text: str) -> Controller | None:
        """Wait for start-up, then the session's controller (None if start-up failed)."""
        waiting = not (self._llm_ready.is_set() and self._sandbox_ready.is_set())
        if waiting:
            self._post_waiting(text)
        await self._llm_ready.wait()
        await self._sandbox_ready.wait()
        if waiting:
            self._post_waiting("")
        if self._abandoned:
            return None
        if self._failed:
            self._notify("; ".join(self._failed.values()), "error")
            return None
        return await self._controller()

    def _post_queued(self, text: str) -> None:
        from workbench.tui.messages import MessageQueued

        if self.app is not None:
            self.app.post_message(MessageQueued(text))

    def _give_back(self, texts: list[str], why: str) -> None:
        """Messages no run will read go back into the input box."""
        if not texts:
            return
        from workbench.tui.messages import QueuedMessagesReturned

        if self.app is not None:
            self.app.post_message(QueuedMessagesReturned(texts, why))

    def _start_run(self, controller: Controller, task: str) -> None:
        self._run = asyncio.create_task(controller.run(task))
        self._run.add_done_callback(self._run_done)

    def _run_done(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._notify(f"The agent stopped with an error: {task.exception()}", "error")
        controller = self.controller
        left = controller.take_queued() if controller is not None else []
        if (
            not task.cancelled()
            and task.exception() is None
            and task.result().status == "log_error"
        ):
            self._log_failed(task.result().reason, left)
            return
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
        self._give_back(left, f"the run ended ({ended}) before reading it")

    def _log_failed(self, reason: str, left: list[str]) -> None:
        """The session log could not be written (a full disk): say so and end the session,
        so the next task opens a new log instead of running unrecorded."""
        self._notify(f"The agent was stopped: {reason}", "error", timeout=60)
        self._give_back(left, "the session log could not be written")
        self.controller = None
        if self.session is not None:
            self.session.close()
            self.session = None

    async def _controller(self) -> Controller:
        if self.controller is not None:
            return self.controller
        from workbench.session.opening import make_llm, new_log, open_controller

        assert self.runtime is not None
        history, self._history = self._history, None
        self.session = new_log(self.config, parent=history)
        self._runtime_used = True
        llm = make_llm(self.config)  # retries are events: the conversation shows them
        early, self._mcp = self._mcp, None
        try:
            mcp = await early[1] if early is not None and early[0] is self.runtime else None
            controller = await open_controller(
                self.config,
                self.runtime,
                llm,
                self.session,
                confirm=self.confirmations.confirm,
                mcp=mcp,
                net_ask=self.confirmations.net_ask,
            )
        except BaseException:
            self.session.close()
            self.session = None
            raise
        # Only while it is the session open: a session ended (ctrl+n) says nothing more.
        self._live = controller
        log_path = self.session.path
        controller.subscribe(partial(self._on_event, controller, log_path))
        controller.subscribe_activity(partial(self._on_activity, controller, log_path))
        controller.subscribe_output(partial(self._on_output, controller))
        if history is not None:
            controller.restore(history)  # the note that the shell starts afresh is shown too
            if history.files_restored:
                self._notify(history.files_restored, timeout=10)
        self.controller = controller
        return controller

    def _on_event(self, controller: Controller, log_path: Path, event: Event) -> None:
        from workbench.tui.messages import EventArrived

        if self.app is not None and self._live is controller:
            self.app.post_message(EventArrived(event, log=log_path))

    def _on_activity(self, controller: Controller, log_path: Path, activity: LLMActivity) -> None:
        from workbench.tui.messages import ModelCallChanged

        if self.app is not None and self._live is controller:
            self.app.post_message(ModelCallChanged(activity, log_path))

    def _on_output(self, controller: Controller, event: OutputChunk | CommandFinished) -> None:
        if self.app is not None and self._live is controller:
            self.app.feed_output(event)

    def _post_waiting(self, text: str) -> None:
        from workbench.tui.messages import TaskWaiting

        if self.app is not None:
            self.app.post_message(TaskWaiting(text))

    def _notify(
        self, text: str, severity: str = "information", timeout: float | None = None
    ) -> None:
        if self.app is not None:
            self.app.notify(text, severity=severity, timeout=timeout, markup=False)

    # ------------------------------------------------------------------ confirmations

    def _workspace(self) -> str:
        """The workspace as the policy sees it (the sandbox's path)."""
        from workbench.config.places import workspace_of

        if self.controller is not None:
            return self.controller.workspace
        return str(workspace_of(self.config))

    def allow_offer(self, cause: int) -> AllowOffer | None:
        """The rules "always allow" proposes for the waiting action, and where they can go."""
        return self.confirmations.allow_offer(cause)

    def allow_rule_errors(self, cause: int, rules: Sequence[str]) -> list[str]:
        """What is wrong with rules edited for the waiting action `cause`."""
        return self.confirmations.allow_rule_errors(cause, rules)

    def settings_changed(self) -> None:
        """The settings screen changed the config: the running session's step limit follows
        (the policy, streaming and the model are read from the config at each use)."""
        if self.controller is not None:
            self.controller.max_iterations = self.config.agent.max_iterations

    async def answer(
        self,
        cause: int,
        answer: str,
        rules: Sequence[str] = (),
        target: Path | None = None,
        reason: str = "",
    ) -> None:
        """The person answered the confirmation about action `cause` (with "always": the
        rules to save, and the file; with a rejection, maybe why)."""
        self.confirmations.answer(cause, (answer, tuple(rules), target, reason))

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
        self.confirmations.reject_all()

    def condense_now(self) -> bool:
        """Condense the history before the next LLM call; False when no session is open."""
        if self.controller is None:
            return False
        self.controller.condense_now()
        return True

    async def new_session(self) -> None:
        """End the current session; the next task opens a new log in a fresh sandbox (the
        last session's shell folder, variables and kernel do not carry over)."""
        from workbench.config.places import workspace_of

        self._abandoned = self._starting  # a task waiting for start-up is not begun after this
        async with self._switching:
            await self._end_session()
            await self._fresh_sandbox(workspace_of(self.config))

    async def continue_session(self, path: Path, text: str, upto: int | None = None) -> None:
        """Continue the saved session at `path` (up to event `upto`: a branch) with `text`: a
        new log that copies its history and names it, in a fresh sandbox on its workspace."""
        from workbench.session.resume import load_history

        history = load_history(path, upto)  # a bad log fails here, before anything changes
        async with self._switching:
            await self._end_session()
            await self._fresh_sandbox(Path(history.workspace))
        self._history = history
        await self.submit(text)

    async def _fresh_sandbox(self, workspace: Path) -> None:
        """A sandbox on `workspace` that no session has used yet (restarted if need be)."""
        same = _is_workspace_of(self.config, workspace)
        if same and not self._runtime_used and self._started_with == self._sandbox_settings():
            return  # the sandbox starting or started now is new, on that workspace, as configured
        await self._sandbox_ready.wait()
        old, self.runtime = self.runtime, None
        if self._mcp is not None:  # its servers go with the old sandbox
            self._mcp[1].cancel()
            self._mcp = None
        self._sandbox_ready.clear()
        self._failed.pop("sandbox", None)
        if old is not None:
            try:
                await old.close()
            except Exception as exc:  # the old one's end must not keep the new one from starting
                log.warning("closing the sandbox failed: %s", exc)
        self.config.sandbox.workspace = str(workspace)
        self._runtime_used = False
        await self._start_sandbox()

    def current_log(self) -> Path | None:
        """The log of the session open now (None before the first task)."""
        return self.session.path if self.session is not None else None

    def _sandbox_settings(self) -> str:
        """What a sandbox is made from, but its workspace: a changed one (the config read
        again) needs a new sandbox."""
        import json

        config = self.config
        parts = {
            "sandbox": config.sandbox.model_dump(mode="json", exclude={"workspace"}),
            "mcp": config.mcp.model_dump(mode="json"),
            "mcp_base": str(config.mcp_base),
            "agent": config.agent.model_dump(mode="json"),
        }
        return json.dumps(parts, sort_keys=True)

    async def _end_session(self) -> None:
        self._history = None
        self._live = None  # what it says while it stops is not shown in the next session
        self.stop()
        if self._run is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(self._run, timeout=5)
            self._run = None
        if self.controller is not None:
            from workbench.tools.mcp import close_mcp

            close_mcp()
        self.controller = None
        if self.session is not None:
            self.session.close()
            self.session = None

    async def close(self) -> None:
        """Stop the agent, close the log and the sandbox (no process left behind)."""
        await self._end_session()
        if self._mcp is not None:
            self._mcp[1].cancel()
            self._mcp = None
        if self.runtime is not None:
            try:
                await self.runtime.close()
            except Exception as exc:  # closing must not keep the app from exiting
                log.warning("closing the sandbox failed: %s", exc)
            self.runtime = None
