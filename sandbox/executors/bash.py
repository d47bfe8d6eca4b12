"""`BashExecutor`: the session's persistent shell, with the whole shell contract of DESIGN.md §3.

One command at a time (`bash_split` decides what one command is); a command that is quiet for
its soft timeout, or runs past its hard `timeout`, returns early with exit code -1 and keeps
running: an empty command then fetches more output, `is_input` types text or keys into it, and a
new command is refused until it ends (the refusal carries the output not seen yet). Output
streams to subscribers as it arrives and each reply keeps the head and tail of long output. A
shell that exited is restarted on the next action.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from sandbox import agent_env, limits
from sandbox.executors.base import ExecutorContext, ExecutorUnavailable, StreamListener, register
from sandbox.executors.bash_session import ShellSession, ShellStartError, terminate_signal_name
from sandbox.executors.bash_split import split_commands
from sandbox.profile import refused_write_note
from sandbox.protocol import (
    Action,
    CmdOutputObservation,
    CmdRunAction,
    CommandFinished,
    ErrorObservation,
    Observation,
    OutputChunk,
    SetEnvAction,
    SetEnvObservation,
)
from sandbox.truncate import DEFAULT_LIMIT

MAX_LINE_BYTES = 4000
"""Longer lines go through a file: the pty's line discipline cuts a line at 4095 bytes."""

_KEY = re.compile(r"^\s*C-([a-zA-Z@\[\\\]^_])\s*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_OVERWRITTEN = re.compile(r"[^\n]*\r(?=[^\n\r])")
_OVERSTRUCK = re.compile(r"[^\n\x08]\x08")  # bold and underline the way `man` prints them
_WHAT_NEXT = (
    "send an empty command to get more output, send text or keys (C-c, C-d, C-z) with "
    "is_input=true to answer it, or send C-c with is_input=true to interrupt it."
)


@dataclass
class _Running:
    command: str
    started: float = field(default_factory=time.monotonic)
    files: list[Path] = field(default_factory=list)
    limit_counts: tuple[int, int] = field(default_factory=limits.counts)
    """The agent's OOM kills and refused forks when it started (`sandbox/limits.py`)."""


class BashExecutor:
    """A persistent bash in `workspace`: runs `run` and `set_env` actions one at a time."""

    name: ClassVar[str] = "bash"
    action_kinds: ClassVar[tuple[str, ...]] = ("run", "set_env")

    def __init__(
        self,
        workspace: Path,
        env: Mapping[str, str] | None = None,
        *,
        max_output_chars: int = DEFAULT_LIMIT,
        max_wait_s: float = 120.0,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise ExecutorUnavailable(f"the workspace {self.workspace} is not a directory")
        self.max_output_chars = max_output_chars
        self.max_wait_s = max_wait_s
        """Even a command that never stops printing returns after this long (exit code -1)."""
        self._env = dict(env or {})
        self._added_env: dict[str, str] = {}
        self._lock = threading.RLock()
        self._listeners: list[StreamListener] = []
        self._seq = itertools.count(1)
        self._files = itertools.count(1)
        self._running: _Running | None = None
        self._quiet = False
        self._closed = False
        try:
            self._session = self._start()
        except ShellStartError as exc:
            raise ExecutorUnavailable(str(exc)) from exc

    @classmethod
    def from_context(cls, ctx: ExecutorContext) -> BashExecutor:
        """The registry's factory: a shell in the sandbox's workspace with its environment (and
        the agent's Python env first on its PATH)."""
        env = ctx.env | agent_env.shell_env(ctx.python_env, os.environ | ctx.env)
        return cls(ctx.workspace, env)

    # ------------------------------------------------------------------ public interface

    def subscribe(self, listener: StreamListener) -> Callable[[], None]:
        """Call `listener` (from the reader thread; it must not block) with output and ends."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def cwd(self) -> str | None:
        """The shell's working directory as of its latest prompt."""
        return None if self._closed else self._session.cwd

    def send_input(self, text: str) -> bool:
        """Type `text` (a line, or a key such as `C-c`) into the running command at once.

        Unlike an `is_input` action this does not wait for the executor's lock, so a person can
        answer or interrupt a command the agent is waiting on. False if nothing is running.
        """
        session = self._session
        if self._closed or not session.busy or session.exited:
            return False
        key = _KEY.match(text)
        session.send(chr(ord(key.group(1).upper()) & 0x1F) if key else text + "\n")
        return True

    def execute(self, action: Action) -> Observation:
        """Carry out a `run` or `set_env` action; never raises for a bad action."""
        with self._lock:
            if self._closed:
                return ErrorObservation(error_kind="internal", content="The shell was closed.")
            try:
                note = self._ensure_shell()
            except ShellStartError as exc:
                return ErrorObservation(
                    error_kind="internal",
                    content=f"The shell had exited; restarting it failed: {exc}",
                )
            obs: Observation
            if isinstance(action, CmdRunAction):
                obs = self._run(action, note)
            elif isinstance(action, SetEnvAction):
                obs = self._set_env(action, note)
            else:
                obs = ErrorObservation(
                    content=f"The shell runs 'run' and 'set_env' actions, not '{action.kind}'."
                )
            if note and isinstance(obs, ErrorObservation):
                obs = obs.model_copy(update={"content": f"{obs.content}\n({note})"})
            return obs

    def close(self) -> None:
        """Kill the shell and every process it started; the executor cannot be used after."""
        self._closed = True
        self._session.close()  # not under the lock: a waiting `execute` returns as bash dies

    # ------------------------------------------------------------------ commands

    def _run(self, action: CmdRunAction, note: str | None) -> Observation:
        soft, hard = action.soft_timeout, action.timeout
        if (soft is not None and soft <= 0) or (hard is not None and hard <= 0):
            return ErrorObservation(content="timeout and soft_timeout must be more than 0 seconds.")
        session, running = self._session, self._running
        if action.is_input:
            if running is None:
                return ErrorObservation(
                    content="No command is running, so there is nothing to send this input to. "
                    "To run it as a command, send it again with is_input=false."
                )
            if not session.busy:
                return self._observe(
                    action, "finished", note, "Nothing was sent: the command had already finished."
                )
            self.send_input(action.command)
            return self._wait(action, note)
        if not action.command.strip():
            if running is None:
                return ErrorObservation(
                    content="No command is running, so there is no output to fetch: an empty "
                    "command only waits for more output of a running command. Send the "
                    "command you want to run."
                )
            return self._wait(action, note)
        if running is not None and session.busy:
            age = time.monotonic() - running.started
            return ErrorObservation(
                error_kind="busy",
                content=f"Not executed: {_short(action.command)}. The previous command "
                f"{_short(running.command)} is still running ({age:.0f} s so far) and gets "
                f"nothing of yours. Either {_WHAT_NEXT} Then send your command again."
                + self._unseen_output(),
            )
        split = split_commands(action.command)
        if split.incomplete:
            return ErrorObservation(
                content=f"Not executed: the command is incomplete: {split.incomplete}\n"
                "Complete it and send it again."
            )
        if len(split.commands) > 1:
            listing = "\n".join(f"{i}. {_short(c, 300)}" for i, c in enumerate(split.commands, 1))
            return ErrorObservation(
                content=f"Not executed: these are {len(split.commands)} separate commands, and "
                f"the shell runs one at a time. Send them one by one, or join them into one "
                f"with && or ;:\n{listing}"
            )
        if not split.commands:
            return ErrorObservation(content="Not executed: there is no command, only comments.")
        if running is not None:  # it finished while nobody was waiting
            gone = f"The previous command {_short(running.command)} had finished"
            note = _join(
                note, f"{gone} (exit code {session.last_exit}); its unseen output comes first."
            )
            self._finish()
        self._running = _Running(split.commands[0])
        session.run(self._command_line(self._running))
        return self._wait(action, note)

    def _command_line(self, running: _Running) -> str:
        """The text to type for a command: itself, or `source FILE` when a line is too long."""
        command = running.command
        if all(len(line.encode()) < MAX_LINE_BYTES for line in command.split("\n")):
            return command + "\n"
        path = self._session.private_dir / f"cmd-{next(self._files)}.sh"
        path.write_text(command + "\n")
        running.files.append(path)
        return f"source {shlex.quote(str(path))}\n"

    def _wait(self, action: CmdRunAction, note: str | None) -> CmdOutputObservation:
        limit = action.timeout if action.timeout is not None else self.max_wait_s
        reason = self._session.wait(action.idle_limit(), limit)
        return self._observe(action, reason, note)

    def _observe(
        self, action: CmdRunAction, reason: str, note: str | None, extra: str | None = None
    ) -> CmdOutputObservation:
        session = self._session
        content = _clean(session.take_output())
        note = _join(note, extra)
        if reason in ("finished", "exited"):
            if self._running is not None:
                note = _join(note, limits.limit_note(self._running.limit_counts))
            self._finish()
            if reason == "exited":
                code = session.shell_status
                note = _join(
                    note,
                    f"The shell exited (status {code}); the next command starts a new shell in "
                    f"{self.workspace} (variables, functions and the directory are reset).",
                )
            else:
                code = session.last_exit
                note = _join(note, _signal_note(code))
                if code != 0:
                    refused = refused_write_note(content, action.command)
                    env = self._env.get("VIRTUAL_ENV")
                    note = _join(note, refused or agent_env.read_only_note(content, env))
            return CmdOutputObservation(
                command=action.command, content=content, exit_code=code, cwd=session.cwd, note=note
            )
        if reason == "idle":
            why = f"No new output for {action.idle_limit() or 0:g} s; the command is still running."
        elif action.timeout is not None:
            why = f"Returned at the {action.timeout:g} s timeout; the command is still running."
        else:
            why = f"Returned after {self.max_wait_s:g} s of output; the command is still running."
        if self._running is not None:  # a limit reached by a command still running is news too
            note = _join(note, limits.limit_note(self._running.limit_counts))
            self._running.limit_counts = limits.counts()  # said once, not at every look
        return CmdOutputObservation(
            command=action.command,
            content=content,
            exit_code=-1,
            cwd=session.cwd,
            running=True,
            note=_join(note, f"{why} To continue, {_WHAT_NEXT}"),
        )

    def _unseen_output(self) -> str:
        """For a refusal: what the running command printed since the agent last looked.

        Taking it marks it seen, so the next empty command does not repeat it.
        """
        output = _clean(self._session.take_output())
        if not output:
            return "\nIt has printed nothing new since you last looked."
        return f"\nIts new output since you last looked:\n{output}"

    def _finish(self) -> None:
        if self._running is not None:
            for path in self._running.files:
                path.unlink(missing_ok=True)
        self._running = None

    def _set_env(self, action: SetEnvAction, note: str | None) -> Observation:
        if not action.env:
            return SetEnvObservation(names=[], content="No variables were given; nothing was set.")
        bad = [name for name in action.env if not _NAME.match(name)]
        if bad:
            return ErrorObservation(
                content=f"Not set: {', '.join(map(repr, bad))} is not a valid variable name "
                "(letters, digits and _, not starting with a digit)."
            )
        if any("\x00" in value for value in action.env.values()):
            return ErrorObservation(content="Not set: a value contains a NUL character.")
        if self._running is not None and self._session.busy:
            return ErrorObservation(
                error_kind="busy",
                content=f"Not set: the command {_short(self._running.command)} is still running. "
                f"First {_WHAT_NEXT}" + self._unseen_output(),
            )
        self._finish()
        path = self._session.private_dir / f"env-{next(self._files)}.sh"
        path.touch(mode=0o600)
        path.write_text("".join(f"export {k}={shlex.quote(v)}\n" for k, v in action.env.items()))
        # No trace (set -x) or verbose (set -v) output may show the values.
        line = (
            "{ __wb_o=$-; set +xv; } 2>/dev/null; source " + shlex.quote(str(path)) + "; "
            "{ case $__wb_o in *x*) set -x;; esac; case $__wb_o in *v*) set -v;; esac; "
            "unset __wb_o; } 2>/dev/null\n"
        )
        self._quiet = True
        try:
            self._session.run(line)
            reason = self._session.wait(None, 10.0)
        finally:
            self._quiet = False
            path.unlink(missing_ok=True)
        if reason != "finished":
            return ErrorObservation(
                error_kind="internal", content=f"Setting the variables did not finish ({reason})."
            )
        self._added_env.update(action.env)
        names = list(action.env)
        content = f"Set {len(names)} variable(s) in the shell: {', '.join(names)}."
        return SetEnvObservation(names=names, content=_join(content, note) or content)

    # ------------------------------------------------------------------ shell life

    def _start(self) -> ShellSession:
        return ShellSession(
            self.workspace,
            {**self._env, **self._added_env},
            self.max_output_chars,
            self._on_output,
            self._on_prompt,
        )

    def _ensure_shell(self) -> str | None:
        """Restart the shell if it has exited; returns the note that says so."""
        old = self._session
        if not old.exited:
            return None
        old.close()
        self._finish()
        self._session = self._start()
        return (
            f"The shell had exited (status {old.shell_status}), so a new shell was started in "
            f"{self.workspace}: variables, functions and the working directory were reset."
        )

    def _on_output(self, text: str) -> None:
        if not self._quiet:
            command = self._running.command if self._running else ""
            self._publish(OutputChunk(seq=next(self._seq), command=command, data=text))

    def _on_prompt(self, code: int, cwd: str) -> None:
        if not self._quiet:
            command = self._running.command if self._running else ""
            self._publish(
                CommandFinished(seq=next(self._seq), command=command, exit_code=code, cwd=cwd)
            )

    def _publish(self, event: OutputChunk | CommandFinished) -> None:
        for listener in list(self._listeners):
            with contextlib.suppress(Exception):  # a broken listener must not stop the reader
                listener(event)


def _clean(text: str) -> str:
    """Drop colour codes, overstrikes and text a carriage return wrote over (progress bars)."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\x08" in text:
        text = _OVERSTRUCK.sub("", text)
    if "\r" in text:
        text = _OVERWRITTEN.sub("", text.replace("\r\n", "\n")).replace("\r", "")
    return text


def _signal_note(code: int) -> str | None:
    name = terminate_signal_name(code)
    if name is None:
        return None
    if name == "SIGTSTP":
        return "The command was stopped (C-z): `fg` resumes it, `kill %1` ends it."
    return f"Exit code {code}: the command was ended by {name}."


def _short(command: str, limit: int = 120) -> str:
    one = " ".join(command.split())
    return "`" + (one if len(one) <= limit else one[: limit - 3] + "...") + "`"


def _join(*parts: str | None) -> str | None:
    text = " ".join(p for p in parts if p)
    return text or None


register("bash", ("run", "set_env"), BashExecutor.from_context)
