"""The `browser` executor: BrowserGym in a child process (`browser_worker`), one JSON line a step.

The worker starts on the first browse action (~1 s); a worker that dies or hangs is killed and
started again on the next action, and that observation says the page state was lost.

Evaluation mode: `browse_task_start` restarts the worker on a BrowserGym task's environment
(`browser_task.py`); the browse actions that follow are the episode's steps, each answered with
its reward and done (`task`), and `browse_task_score` answers the episode's score
(`browser_episode.py`). Once the task says done, or the browser stops, the episode is over:
further steps are refused and the score stays as it was.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, ClassVar

from sandbox import confine
from sandbox.executors import browser_missing
from sandbox.executors.base import ExecutorContext, register
from sandbox.executors.browser_episode import Episode, script_url
from sandbox.protocol import (
    Action,
    BrowseAction,
    BrowseObservation,
    BrowseTaskScoreAction,
    BrowseTaskStartAction,
    ErrorObservation,
    Observation,
)

START_TIMEOUT_S = 60.0
STEP_TIMEOUT_S = 60.0
MAX_TEMP_ROOT_CHARS = 30
ACTION_HINT = (
    'Use BrowserGym calls such as goto("http://127.0.0.1:8000"), click("12"), '
    'fill("7", "text"), scroll(0, 300), go_back(), press("7", "Enter").'
)


class BrowserUnavailable(Exception):
    """The worker could not start; the message says why."""


class BrowserExecutor:
    """Runs BrowserGym action strings against a headless Chromium in a child process."""

    name: ClassVar[str] = "browser"
    action_kinds: ClassVar[tuple[str, ...]] = ("browse", "browse_task_start", "browse_task_score")

    def __init__(self, context: ExecutorContext) -> None:
        self._context = context
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._restarted = False
        self._temp: str | None = None
        """The browser's own temp folder (its TMPDIR): Playwright and Chromium leave folders
        there at every start (`playwright-artifacts-*`, profiles); removed at stop."""
        self._episode: Episode | None = None
        """The evaluation episode the browser runs (`browse_task_start`), if any."""

    @classmethod
    def from_context(cls, context: ExecutorContext) -> BrowserExecutor:
        """Build the executor; the browser itself starts on the first action."""
        return cls(context)

    def execute(self, action: Action) -> Observation:
        """Run one BrowserGym action string and describe the page after it; or start an
        evaluation task, or give its score."""
        if isinstance(action, BrowseTaskStartAction):
            return self._start_task(action)
        if isinstance(action, BrowseTaskScoreAction):
            if self._episode is None:
                return ErrorObservation(
                    content="No evaluation task was started in this browser (browse_task_start)."
                )
            return self._episode.score()
        if not isinstance(action, BrowseAction):
            return ErrorObservation(content=f"The browser cannot run '{action.kind}' actions.")
        episode = self._episode
        if episode is not None and episode.done:
            return episode.refusal()
        if episode is not None and (url := script_url(action.action)) is not None:
            return episode.script_refusal(url)
        if not action.action.strip():
            return ErrorObservation(content=f"Empty browser action. {ACTION_HINT}")
        try:
            ast.parse(action.action)
        except SyntaxError as exc:
            return ErrorObservation(
                content=f"The browser action is not valid Python call syntax ({exc.msg}). "
                f"{ACTION_HINT}"
            )
        note = ""
        if self._proc is None or self._proc.poll() is not None:
            if episode is not None:
                episode.end("the browser stopped")
                self._stop()
                return ErrorObservation(
                    error_kind="internal",
                    content="The browser stopped during the evaluation task: its episode is over "
                    f"(score {episode.best:g}). Call finish.",
                )
            if self._proc is not None:
                note = "The browser had stopped and was restarted: open pages were lost. "
                self._stop()
            try:
                self._start()
            except BrowserUnavailable as exc:
                return ErrorObservation(error_kind="unavailable", content=str(exc))
        try:
            answer = self._request({"action": action.action}, STEP_TIMEOUT_S)
        except TimeoutError:
            self._stop()
            if episode is not None:
                episode.end(f"the browser did not answer within {STEP_TIMEOUT_S:.0f} s")
            return ErrorObservation(
                error_kind="internal",
                content=f"The browser did not answer within {STEP_TIMEOUT_S:.0f} s and was "
                "stopped; the next action starts a fresh browser.",
            )
        except BrowserUnavailable as exc:
            self._stop()
            if episode is not None:
                episode.end("the browser stopped")
            return ErrorObservation(error_kind="internal", content=str(exc))
        if "fatal" in answer:
            return ErrorObservation(
                error_kind="internal", content=f"{note}The browser failed: {answer['fatal']}"
            )
        return self._page(action.action, answer, note)

    def _page(self, action: str, answer: dict[str, Any], note: str = "") -> BrowseObservation:
        """The worker's answer as an observation; during an episode, with its task state."""
        task = None
        if self._episode is not None:
            step = answer.get("task")
            if step is None:  # the first page: nothing was done yet
                task = self._episode.state()
            else:
                reward, done = float(step["reward"]), bool(step["done"])
                task = self._episode.record(reward, done, str(step.get("message", "")))
        error = answer.get("error")
        return BrowseObservation(
            action=action,
            url=answer.get("url", ""),
            title=answer.get("title", ""),
            content=note + answer.get("content", ""),
            axtree=answer.get("axtree", ""),
            screenshot=answer.get("screenshot"),
            screenshot_path=answer.get("screenshot_path", ""),
            downloads=answer.get("downloads", []),
            error=error or None,
            task=task,
        )

    def _start_task(self, action: BrowseTaskStartAction) -> Observation:
        """A fresh browser on the task's environment: its first page, with the goal."""
        self._stop()
        self._episode = None
        try:
            self._start(task=True)
            answer = self._request(
                {"task_start": action.task_id, "seed": action.seed}, START_TIMEOUT_S
            )
        except TimeoutError:
            self._stop()
            return ErrorObservation(
                error_kind="internal",
                content=f"The task '{action.task_id}' did not start within "
                f"{START_TIMEOUT_S:.0f} s.",
            )
        except BrowserUnavailable as exc:
            self._stop()
            return ErrorObservation(error_kind="unavailable", content=str(exc))
        if "task_error" in answer or "fatal" in answer:
            self._stop()
            if "task_error" in answer:
                kind = "bad_action" if answer.get("error_kind") == "bad_action" else "unavailable"
                return ErrorObservation(error_kind=kind, content=answer["task_error"])
            return ErrorObservation(
                error_kind="internal",
                content=f"The task '{action.task_id}' could not start: {answer['fatal']}",
            )
        self._episode = Episode(
            action.task_id, str(answer.get("goal", "")), list(answer.get("goal_images", []))
        )
        return self._page("", answer)

    def close(self) -> None:
        """Stop the browser process and everything it started."""
        self._stop()

    def _start(self, task: bool = False) -> None:
        self._temp = tempfile.mkdtemp(prefix="sandbox-browser-", dir=_short_temp_root())
        env = {**os.environ, **self._context.env, "TMPDIR": self._temp}
        log = open(self._context.artifacts / "browser-worker.log", "ab")  # noqa: SIM115
        try:
            worker = [sys.executable, "-m", "sandbox.executors.browser_worker"]
            worker += [str(self._context.artifacts), str(self._context.workspace)]
            worker += ["--task"] if task else []
            self._proc = subprocess.Popen(
                confine.wrap(worker),  # a page's exploit lands where the shell is, no further
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                cwd=self._context.workspace,
                env=env,
                start_new_session=True,
            )
        finally:
            log.close()
        self._buffer = b""
        try:
            ready = self._read_line(START_TIMEOUT_S)
        except TimeoutError as exc:
            self._stop()
            raise BrowserUnavailable(
                f"The browser did not start within {START_TIMEOUT_S:.0f} s."
            ) from exc
        if not ready.get("ready"):
            self._stop()
            raise BrowserUnavailable(f"The browser could not start: {ready.get('error')}")

    def _request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(payload).encode() + b"\n")
            self._proc.stdin.flush()
        except BrokenPipeError as exc:
            raise BrowserUnavailable("The browser process exited unexpectedly.") from exc
        return self._read_line(timeout)

    def _read_line(self, timeout: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                log = self._context.artifacts / "browser-worker.log"
                raise BrowserUnavailable(
                    f"The browser process exited unexpectedly (its log: {log})."
                )
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            self._end(proc)
        temp, self._temp = self._temp, None
        if temp is not None:
            _remove_when_quiet(temp)

    def _end(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=3)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def _short_temp_root() -> str | None:
    """Where the browser's temp folder goes: the usual temp dir, unless its path is so long
    that Chromium's singleton socket (`<it>/sandbox-browser-*/org.chromium.Chromium.*/
    SingletonSocket`, ~75 more characters) would pass the 107 a socket path may have, which
    makes Chromium abort at start; then `/tmp` (None: the usual one)."""
    usual = tempfile.gettempdir()
    if len(usual) <= MAX_TEMP_ROOT_CHARS or not os.access("/tmp", os.W_OK | os.X_OK):
        return None
    return "/tmp"


def _remove_when_quiet(folder: str, limit_s: float = 3.0) -> None:
    """Remove `folder`, again while Chromium's last processes (killed, not yet gone) still
    write into it, for up to `limit_s`."""
    deadline = time.monotonic() + limit_s
    while True:
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder) or time.monotonic() > deadline:
            return
        time.sleep(0.05)


browser_unavailable_reason = browser_missing
"""None when BrowserGym and Chromium are here, otherwise what is missing."""

register("browser", BrowserExecutor.action_kinds, BrowserExecutor.from_context, browser_missing)
