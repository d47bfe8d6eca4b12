"""The `browser` executor: BrowserGym in a child process (`browser_worker`), one JSON line a step.

The worker starts on the first browse action (~1 s); a worker that dies or hangs is killed and
started again on the next action, and that observation says the page state was lost.
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
from sandbox.protocol import Action, BrowseAction, BrowseObservation, ErrorObservation, Observation

START_TIMEOUT_S = 60.0
STEP_TIMEOUT_S = 60.0
ACTION_HINT = (
    'Use BrowserGym calls such as goto("http://127.0.0.1:8000"), click("12"), '
    'fill("7", "text"), scroll(0, 300), go_back(), press("7", "Enter").'
)


class BrowserUnavailable(Exception):
    """The worker could not start; the message says why."""


class BrowserExecutor:
    """Runs BrowserGym action strings against a headless Chromium in a child process."""

    name: ClassVar[str] = "browser"
    action_kinds: ClassVar[tuple[str, ...]] = ("browse",)

    def __init__(self, context: ExecutorContext) -> None:
        self._context = context
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._restarted = False
        self._temp: str | None = None
        """The browser's own temp folder (its TMPDIR): Playwright and Chromium leave folders
        there at every start (`playwright-artifacts-*`, profiles); removed at stop."""

    @classmethod
    def from_context(cls, context: ExecutorContext) -> BrowserExecutor:
        """Build the executor; the browser itself starts on the first action."""
        return cls(context)

    def execute(self, action: Action) -> Observation:
        """Run one BrowserGym action string and describe the page after it."""
        if not isinstance(action, BrowseAction):
            return ErrorObservation(content=f"The browser cannot run '{action.kind}' actions.")
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
            return ErrorObservation(
                error_kind="internal",
                content=f"The browser did not answer within {STEP_TIMEOUT_S:.0f} s and was "
                "stopped; the next action starts a fresh browser.",
            )
        except BrowserUnavailable as exc:
            self._stop()
            return ErrorObservation(error_kind="internal", content=str(exc))
        if "fatal" in answer:
            return ErrorObservation(
                error_kind="internal", content=f"{note}The browser failed: {answer['fatal']}"
            )
        error = answer.get("error")
        return BrowseObservation(
            action=action.action,
            url=answer.get("url", ""),
            title=answer.get("title", ""),
            content=note + answer.get("content", ""),
            axtree=answer.get("axtree", ""),
            screenshot=answer.get("screenshot"),
            screenshot_path=answer.get("screenshot_path", ""),
            downloads=answer.get("downloads", []),
            error=error or None,
        )

    def close(self) -> None:
        """Stop the browser process and everything it started."""
        self._stop()

    def _start(self) -> None:
        self._temp = tempfile.mkdtemp(prefix="sandbox-browser-")
        env = {**os.environ, **self._context.env, "TMPDIR": self._temp}
        log = open(self._context.artifacts / "browser-worker.log", "ab")  # noqa: SIM115
        try:
            worker = [sys.executable, "-m", "sandbox.executors.browser_worker"]
            worker += [str(self._context.artifacts), str(self._context.workspace)]
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

register("browser", ("browse",), BrowserExecutor.from_context, browser_missing)
