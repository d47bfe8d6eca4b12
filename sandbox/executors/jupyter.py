"""The `jupyter` executor: IPython cells in one kernel per session, text and image outputs.

The kernel (`jupyter_kernel.Kernel`, imported lazily) starts in a background thread when the
executor is built, so the first cell waits less; it imports the agent skills
(`from sandbox.skills import *`) silently. Before each cell the kernel's cwd follows the shell's
when the shell has moved. Each observation names the kernel's interpreter and its cwd after
the cell (a cell may `os.chdir`), read in the cell's own request as a user expression. A kernel
that died is restarted and the observation says its state was lost; a cell past its timeout is
interrupted and returns what it printed.
"""

from __future__ import annotations

import ast
import base64
import binascii
import contextlib
import itertools
import os
import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from sandbox import agent_env
from sandbox.executors import jupyter_missing
from sandbox.executors.base import ExecutorContext, StreamListener, register
from sandbox.protocol import (
    Action,
    ErrorObservation,
    IPythonAction,
    IPythonObservation,
    Observation,
    OutputChunk,
)
from sandbox.truncate import DEFAULT_LIMIT, truncate_middle

if TYPE_CHECKING:
    from sandbox.executors.jupyter_kernel import CellRun, Kernel

DEFAULT_TIMEOUT_S = 120.0
START_WAIT_S = 90.0
"""How long a cell (or close) waits for a kernel that is still starting."""
CHDIR_TIMEOUT_S = 10.0
MAX_OUTPUT_CHARS = DEFAULT_LIMIT
IMAGE_TYPES = {"image/png": ".png", "image/jpeg": ".jpg", "image/svg+xml": ".svg"}
IMAGE_LINE = "[image saved as "
BLOCK_OUTPUTS = ("execute_result", "display_data", "update_display_data")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_SANDBOX_ROOT = str(Path(__file__).resolve().parents[2])
# The agent's helpers; the folder holding `sandbox` is appended to sys.path only when the
# package is not installed where the kernel's Python finds it.
SETUP_CODE = f"""\
import sys as _wb_sys, importlib.util as _wb_util
if _wb_util.find_spec("sandbox") is None and {_SANDBOX_ROOT!r} not in _wb_sys.path:
    _wb_sys.path.append({_SANDBOX_ROOT!r})
del _wb_sys, _wb_util
try:
    from sandbox.skills import *
except ImportError:
    pass
"""
CWD_EXPRESSION = {"cwd": "__import__('os').getcwd()"}
"""Evaluated by the kernel after each cell, in the same request: no extra round trip."""
_HIDDEN_ENV = ("SANDBOX_TOKEN",)
_ENV_DEFAULTS = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "PIP_NO_INPUT": "1",
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PYDEVD_DISABLE_FILE_VALIDATION": "1",
}


class JupyterExecutor:
    """Runs `IPythonAction` cells in a persistent IPython kernel started through jupyter_client."""

    name: ClassVar[str] = "jupyter"
    action_kinds: ClassVar[tuple[str, ...]] = ("ipython",)

    def __init__(self, context: ExecutorContext) -> None:
        self._context = context
        self._lock = threading.Lock()  # held while a cell runs
        self._closed = False
        self._kernel: Kernel | None = None
        self._start_error: str | None = None
        self._starter: threading.Thread | None = None
        self._kernel_cwd = str(context.workspace)
        self._images = 0
        self._listeners: list[StreamListener] = []
        self._seq = itertools.count(1)
        self._begin_start()

    @classmethod
    def from_context(cls, context: ExecutorContext) -> JupyterExecutor:
        """Build the executor; the kernel starts at once in a background thread."""
        return cls(context)

    def subscribe(self, listener: StreamListener) -> Callable[[], None]:
        """Call `listener` (from the thread running the cell; it must not block) with each
        piece of text a cell prints, as it prints it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def _live(self, code: str) -> Callable[[str, dict[str, Any]], None]:
        """What passes a running cell's printed text on to the listeners."""

        def forward(kind: str, content: dict[str, Any]) -> None:
            if kind != "stream" or not self._listeners:
                return
            chunk = OutputChunk(
                seq=next(self._seq),
                command=code,
                data=str(content.get("text", "")),
                source="jupyter",
            )
            for listener in list(self._listeners):
                with contextlib.suppress(Exception):  # a broken listener must not stop the cell
                    listener(chunk)

        return forward

    @property
    def kernel_pid(self) -> int | None:
        """The kernel process id once started (for tests and diagnostics)."""
        self._join_starter()
        return self._kernel.pid if self._kernel is not None else None

    def execute(self, action: Action) -> Observation:
        """Run one cell and describe its output; errors in the code come back with error=True."""
        if not isinstance(action, IPythonAction):
            return ErrorObservation(
                content=f"The Jupyter executor cannot run '{action.kind}' actions."
            )
        timeout = DEFAULT_TIMEOUT_S if action.timeout is None else action.timeout
        if timeout <= 0:
            return ErrorObservation(
                content=f"timeout must be a positive number of seconds, not {action.timeout}."
            )
        with self._lock:
            if self._closed:
                return ErrorObservation(
                    error_kind="internal", content="The Jupyter executor is closed."
                )
            notes: list[str] = []
            kernel = self._ready_kernel(notes)
            if kernel is None:
                return ErrorObservation(error_kind="internal", content=" ".join(notes))
            self._follow_shell(kernel)
            run = kernel.run(
                action.code, timeout, expressions=CWD_EXPRESSION, on_message=self._live(action.code)
            )
            cwd = self._cwd_after(kernel, run)
            after = self._after_run(kernel, run, timeout)
            return self._observe(action, run, notes, after, cwd, kernel.python)

    def close(self) -> None:
        """Shut the kernel down; no process of it is left behind."""
        self._closed = True
        kernel = self._kernel
        if kernel is not None:
            kernel.kill()  # a running cell sees the death and returns promptly
        with self._lock:
            self._join_starter()
            if self._kernel is not None:
                self._kernel.shutdown()
                self._kernel = None

    # ------------------------------------------------------------------ kernel life

    def _begin_start(self) -> None:
        self._kernel = None
        self._start_error = None
        self._starter = threading.Thread(target=self._start, name="jupyter-start", daemon=True)
        self._starter.start()

    def _start(self) -> None:
        try:
            from sandbox.executors.jupyter_kernel import Kernel

            python = self._context.python_env
            kernel = Kernel(
                self._context.workspace,
                self._kernel_env(),
                agent_env.python_of(python) if python is not None else None,
            )
        except Exception as exc:  # reported by the next cell
            self._start_error = str(exc) or type(exc).__name__
            return
        with contextlib.suppress(Exception):  # broken skills must not cost the agent its kernel
            kernel.run(SETUP_CODE, CHDIR_TIMEOUT_S * 3, silent=True)
        self._kernel_cwd = str(self._context.workspace)
        self._kernel = kernel

    def _join_starter(self) -> None:
        if self._starter is not None:
            self._starter.join(START_WAIT_S)

    def _kernel_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _HIDDEN_ENV}
        for key, value in _ENV_DEFAULTS.items():
            env.setdefault(key, value)
        env.update(self._context.env)
        env.update(agent_env.shell_env(self._context.python_env, env))  # `!pip`, subprocesses
        return env

    def _ready_kernel(self, notes: list[str]) -> Kernel | None:
        """The running kernel, restarted first if it died; None (and why in notes) if it can't."""
        self._join_starter()
        kernel = self._kernel
        if kernel is not None and not kernel.alive() and not self._closed:
            notes.append(
                f"The IPython kernel had stopped ({_exit_text(kernel)}) and was restarted: "
                "variables, imports and other state from earlier cells are lost."
            )
            kernel.shutdown()
            self._begin_start()
            self._join_starter()
            kernel = self._kernel
        if self._closed:  # close() came while we waited; it shuts down whatever started
            notes.append("The Jupyter executor was closed.")
            return None
        if kernel is None:
            if self._starter is not None and self._starter.is_alive():
                notes.append(f"The IPython kernel did not start within {START_WAIT_S:.0f} s.")
            else:
                notes.append(self._start_error or "The IPython kernel did not start.")
                self._begin_start()  # the next cell tries again
            return None
        return kernel

    def _follow_shell(self, kernel: Kernel) -> None:
        try:
            cwd = self._context.shell_cwd()
        except Exception:  # the shell being unreachable must not stop the cell
            return
        if not cwd or cwd == self._kernel_cwd or not os.path.isdir(cwd):
            return
        run = kernel.run(f"__import__('os').chdir({cwd!r})", CHDIR_TIMEOUT_S, silent=True)
        if run.status == "ok":
            self._kernel_cwd = cwd

    def _cwd_after(self, kernel: Kernel, run: CellRun) -> str:
        """The kernel's cwd after `run`; "" when the kernel died or is stuck."""
        if run.status != "ok":
            # The kernel skips user expressions after a failed cell: ask again, only then.
            if run.status not in ("error", "aborted") or not kernel.alive():
                return ""
            run = kernel.run("", CHDIR_TIMEOUT_S, silent=True, expressions=CWD_EXPRESSION)
        value = run.expressions.get("cwd") or {}
        if value.get("status") != "ok":
            return ""  # e.g. the directory was removed
        try:
            cwd = ast.literal_eval(str(value.get("data", {}).get("text/plain", "")))
        except (ValueError, SyntaxError):
            return ""
        return cwd if isinstance(cwd, str) else ""

    def _after_run(self, kernel: Kernel, run: CellRun, timeout: float) -> list[str]:
        """Notes on how the cell ended; restarts the kernel if it died or would not stop."""
        if self._closed and run.status in ("died", "timeout"):
            return [
                "The sandbox closed while this cell ran: the kernel was stopped and the cell did "
                "not finish. Its output up to then is shown."
            ]
        if run.status == "died" and not self._closed:
            # A crash can lose the kernel's "busy" message, so "not started" is only a maybe.
            when = "while running this cell" if run.started else "before or while running this cell"
            note = (
                f"The IPython kernel died {when} ({_exit_text(kernel)}) and was restarted: "
                "variables, imports and other state from earlier cells are lost."
            )
        elif run.status == "timeout" and not self._closed:
            note = (
                f"The cell ran past its {timeout:g} s timeout and did not stop when interrupted, "
                "so the kernel was restarted: state from earlier cells is lost."
            )
        elif run.interrupted:
            return [
                f"The cell ran past its {timeout:g} s timeout and was interrupted; its output up "
                "to then is shown. The kernel's state is kept."
            ]
        else:
            return []
        kernel.shutdown()
        self._begin_start()  # in the background: the next cell waits for it
        return [note]

    # ------------------------------------------------------------------ output

    def _observe(
        self,
        action: IPythonAction,
        run: CellRun,
        before: list[str],
        after: list[str],
        cwd: str,
        python: str,
    ) -> IPythonObservation:
        text: list[str] = []
        images: list[str] = []
        error = run.status != "ok"  # error, aborted, or no reply: died / would not stop
        for kind, content in run.messages:
            if kind == "stream":
                text.append(str(content.get("text", "")))
            elif kind in BLOCK_OUTPUTS:
                data: dict[str, Any] = content.get("data") or {}
                saved = self._save_images(data, text)
                images.extend(saved)
                if not saved and "text/plain" in data:
                    _append_block(text, str(data["text/plain"]))
            elif kind == "error":
                error = True
                _append_block(text, "\n".join(str(line) for line in content.get("traceback", [])))
            elif kind == "clear_output":  # progress bars; the image files stay named
                text[:] = [t for t in text if t.startswith(IMAGE_LINE)]
        for payload in run.payloads:  # `obj?` help comes back as a "page" payload
            if payload.get("source") == "page":
                _append_block(text, str(payload.get("data", {}).get("text/plain", "")))
        output = truncate_middle(_ANSI.sub("", "".join(text)).rstrip("\n"), MAX_OUTPUT_CHARS)
        read_only = agent_env.read_only_note(output, self._context.python_env) if error else None
        after = [*after, read_only] if read_only else after
        notes = before + after
        lines = [f"[{n}]" for n in before] + ([output] if output else [])
        return IPythonObservation(
            code=action.code,
            content="\n".join(lines + [f"[{n}]" for n in after]),
            images=images,
            error=error,
            note=" ".join(notes) if notes else None,
            cwd=cwd,
            python=python,
        )

    def _save_images(self, data: dict[str, Any], text: list[str]) -> list[str]:
        """Write a display bundle's image (its first format we keep) to the artifacts folder;
        its name goes in `text` too."""
        saved: list[str] = []
        for mime, suffix in IMAGE_TYPES.items():
            if mime not in data:
                continue
            value = data[mime]
            try:
                if mime == "image/svg+xml":
                    blob = (value if isinstance(value, str) else "".join(value)).encode()
                else:
                    blob = base64.b64decode(value, validate=False)
            except (binascii.Error, TypeError, ValueError) as exc:
                _append_block(text, f"[{mime} output could not be decoded: {exc}]")
                continue
            self._images += 1
            name = f"ipython-{self._images:03d}-{secrets.token_hex(4)}{suffix}"
            try:
                self._context.artifacts.mkdir(parents=True, exist_ok=True)
                (self._context.artifacts / name).write_bytes(blob)
            except OSError as exc:
                _append_block(text, f"[{mime} output could not be saved: {exc}]")
                continue
            saved.append(name)
            _append_block(text, f"{IMAGE_LINE}{name}]")
            break  # one picture in several formats (PIL sends PNG and JPEG): the first is kept
        return saved


def _exit_text(kernel: Kernel) -> str:
    code = kernel.exit_code()
    if code is None:
        return "killed"
    return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


def _append_block(text: list[str], block: str) -> None:
    """Add a whole output (result, traceback, image line) on lines of its own."""
    if text and not text[-1].endswith("\n"):
        text.append("\n")
    text.append(block if block.endswith("\n") else block + "\n")


register("jupyter", ("ipython",), JupyterExecutor.from_context, available=jupyter_missing)
