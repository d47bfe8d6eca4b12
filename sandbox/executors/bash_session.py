"""One bash process on a pty: start-up with our own rc, a reader thread, prompt detection, kill.

Bash runs interactive without readline (`--noediting`) and with tty echo off, so the pty carries
only what programs print. Our prompt is the only thing that ends a command: PS1 is a marker with
a per-session nonce carrying `$?` and `$PWD`; PROMPT_COMMAND puts PS1 back if a command changed
it. The reader thread drains the pty all the time, strips the markers and hands output to the
owner (`on_output`) and the end of a command (`on_prompt`), so streaming never waits for the end.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import secrets
import select
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sandbox import confine
from sandbox.child_signals import defaults_for_child
from sandbox.executors.bash_procs import kill_session
from sandbox.truncate import HeadTailBuffer

SHELL_ENV = {
    "TERM": "dumb",
    "NO_COLOR": "1",
    "CLICOLOR": "0",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "AWS_PAGER": "",
    "LESS": "-FRX",
    "VIRTUAL_ENV_DISABLE_PROMPT": "1",
}
"""Added to the shell's environment: no colours, no pager that waits for a key."""

_DROPPED_ENV = ("PS0", "PS1", "PS2", "PS4", "PROMPT_COMMAND", "SANDBOX_TOKEN", "HISTFILE")

_RC = r"""
set +o history +H -o ignoreeof
unset HISTFILE PROMPT_COMMAND
stty -echo -onlcr erase undef kill undef werase undef lnext undef rprnt undef 2>/dev/null
__wb_ps1='\036{nonce}:$?;$PWD:{nonce}\036'
PROMPT_COMMAND=('PS1=$__wb_ps1')
PROMPT_COMMAND[99]='PS1=$__wb_ps1'
__wb_cat() {{
    local a files=()
    for a in "$@"; do case $a in -*|+*) ;; *) files+=("$a") ;; esac; done
    command cat -- "${{files[@]}}"
}}
less() {{ __wb_cat "$@"; }}
more() {{ __wb_cat "$@"; }}
git() {{
    if [ "${{1-}}" = init ] && __wb_reinit "${{@:2}}"; then return 0; fi
    command git "$@"
}}
__wb_reinit() {{
    local a dir= quiet=
    for a in "$@"; do
        case $a in
            -q|--quiet) quiet=1 ;;
            -*) return 1 ;;
            *) [ -z "$dir" ] || return 1; dir=$a ;;
        esac
    done
    dir=${{dir:-.}}
    [ -d "$dir/.git" ] && [ -e "$dir/.git/HEAD" ] && [ -f "$dir/.git/config" ] || return 1
    ! [ -w "$dir/.git/config" ] || return 1
    [ -n "$quiet" ] || echo "Reinitialized existing Git repository in $(cd "$dir/.git" && pwd -P)/"
    echo "(sandbox: $dir/.git/config is protected, so git init left the repository as it was)" >&2
}}
PS1=$__wb_ps1 PS2='' PS0=''
"""
# `git init` in a repository whose config the sandbox protects (read-only, see profile.py) would
# fail rewriting the same core.* values; `__wb_reinit` answers as git does and changes nothing.
# PS1 holds the prompt escape `\036`, not the character: printing the variable (`set`, `set -x`)
# never looks like a prompt. Lines that name the nonce (such traces) are dropped from output.
# PROMPT_COMMAND puts PS1 back before each prompt (a sourced ~/.bashrc may change it); bash >= 5.1
# runs every element of the array, and `PROMPT_COMMAND=...` in someone's rc only replaces [0].

ReaderCallback = Callable[[str], None]
PromptCallback = Callable[[int, str], None]


class ShellStartError(Exception):
    """Bash could not be started or did not show its first prompt."""


class ShellSession:
    """A running bash on a pty; output and prompts are delivered by a reader thread."""

    def __init__(
        self,
        cwd: Path,
        env: Mapping[str, str],
        output_limit: int,
        on_output: ReaderCallback,
        on_prompt: PromptCallback,
        dimensions: tuple[int, int] = (50, 200),
        start_timeout: float = 10.0,
    ) -> None:
        import pexpect  # the sandbox's only pty dependency; kept off module import

        self._nonce = "wb" + secrets.token_hex(8)
        self._pre = f"\x1e{self._nonce}:"
        self._post = f":{self._nonce}\x1e"
        self._dir: Path | None = None
        handle, rc_name = tempfile.mkstemp(prefix="wb-shell-rc-", suffix=".sh")
        rc = Path(rc_name)
        with os.fdopen(handle, "w") as rc_file:
            rc_file.write(_RC.format(nonce=self._nonce))
        full_env = {k: v for k, v in os.environ.items() if k not in _DROPPED_ENV}
        full_env.update(SHELL_ENV)
        full_env.update(env)
        self._on_output = on_output
        self._on_prompt = on_prompt
        self.cond = threading.Condition()
        self.output = HeadTailBuffer(output_limit)
        self.busy = True  # until the first prompt
        self.exited = False
        self.shell_status = 0
        """Bash's own exit status once `exited`."""
        self.last_exit = 0
        """The exit code of the last command that finished."""
        self.cwd = str(cwd)
        self.last_output = time.monotonic()
        self._started = False
        self._closed = False
        self._hold = ""
        try:
            argv = confine.wrap(["bash", "--norc", "--noprofile", "--noediting", "-i"])
            self._child: Any = pexpect.spawn(
                argv[0],
                argv[1:],
                cwd=str(cwd),
                env=full_env,
                echo=False,
                encoding=None,
                dimensions=dimensions,
                preexec_fn=defaults_for_child(),
            )
        except (OSError, pexpect.ExceptionPexpect) as exc:
            rc.unlink(missing_ok=True)
            raise ShellStartError(f"could not start bash in {cwd}: {exc}") from exc
        self._child.delaybeforesend = None
        self._child.delayafterclose = self._child.ptyproc.delayafterclose = 0
        self._child.delayafterterminate = self._child.ptyproc.delayafterterminate = 0.05
        self.pid: int = self._child.pid
        self._fd: int = self._child.child_fd
        self._reader = threading.Thread(target=self._read_loop, name="bash-reader", daemon=True)
        self._reader.start()
        self.send(f"source '{rc}'\n")
        with self.cond:
            self.cond.wait_for(lambda: not self.busy or self.exited, start_timeout)
            ok = self._started
        rc.unlink(missing_ok=True)
        if not ok:
            self.close()
            raise ShellStartError(f"bash did not show its prompt within {start_timeout:g} s")

    @property
    def private_dir(self) -> Path:
        """A folder only this session uses (mode 0700), made on first use, removed on close."""
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="wb-shell-"))
        return self._dir

    def send(self, text: str) -> None:
        """Write text (or control characters) to the shell's terminal."""
        data = text.encode("utf-8", errors="surrogateescape")
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def run(self, text: str) -> None:
        """Send a command line; the command counts as running until the next prompt."""
        with self.cond:
            self.busy = True
            self.last_output = time.monotonic()
        self.send(text)

    def wait(self, idle: float | None, limit: float) -> str:
        """Wait for "finished", "exited", "idle" (no output for `idle` s) or "limit" (seconds)."""
        start = time.monotonic()
        deadline = start + limit
        with self.cond:
            while True:
                if not self.busy:
                    return "finished"
                if self.exited:
                    return "exited"
                now = time.monotonic()
                if now >= deadline:
                    return "limit"
                until = deadline
                if idle is not None:
                    idle_end = max(self.last_output, start) + idle
                    if now >= idle_end:
                        return "idle"
                    until = min(until, idle_end)
                self.cond.wait(until - now)

    def take_output(self) -> str:
        """The output gathered since the last call (head and tail kept if too long)."""
        with self.cond:
            return self.output.take()

    def close(self) -> None:
        """Kill bash and every process of its session, close the pty, join the reader."""
        with self.cond:
            if self._closed:
                return
            self._closed = True
        kill_session(self.pid)
        if self._reader is not threading.current_thread():
            self._reader.join(timeout=2)
        with contextlib.suppress(Exception):
            self._child.close(force=True)
        self._remove_dir()

    def _remove_dir(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)

    # ------------------------------------------------------------------ reader thread

    def _read_loop(self) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        fd = self._fd
        next_check = time.monotonic() + 0.25
        while True:
            try:
                ready, _, _ = select.select([fd], [], [], 0.25)
                data = os.read(fd, 1 << 16) if ready else b""
                while ready and len(data) < 1 << 17:  # take what is already there, in one go
                    ready, _, _ = select.select([fd], [], [], 0)
                    if ready:
                        more = os.read(fd, 1 << 16)
                        if not more:
                            break
                        data += more
            except (OSError, ValueError):
                break
            if data:
                self._feed(decoder.decode(data))
            now = time.monotonic()
            if (not data or now >= next_check) and not self._alive():
                break
            next_check = now + 0.25
        self._feed(decoder.decode(b"", final=True), final=True)
        self._mark_exited()

    def _alive(self) -> bool:
        try:
            return bool(self._child.isalive())
        except Exception:
            return False

    def _mark_exited(self) -> None:
        deadline = time.monotonic() + 2
        while self._alive() and time.monotonic() < deadline:
            time.sleep(0.005)  # the pty closes a moment before bash is gone
        status = self._child.exitstatus
        if status is None and self._child.signalstatus is not None:
            status = 128 + int(self._child.signalstatus)
        with self.cond:
            self.exited = True
            self.shell_status = int(status) if status is not None else -1
            self.cond.notify_all()

    def _feed(self, text: str, final: bool = False) -> None:
        """Split new text into output and prompts; deliver both in order."""
        s = self._hold + text
        self._hold = ""
        pre, post = self._pre, self._post
        while s:
            i = s.find(pre)
            if i < 0:
                keep = 0 if final else self._partial_marker(s)
                self._emit(s[: len(s) - keep])
                self._hold = s[len(s) - keep :]
                return
            self._emit(s[:i])
            j = s.find(post, i + len(pre))
            if j < 0:
                self._hold = s[i:]
                return
            code, _, cwd = s[i + len(pre) : j].partition(";")
            self._prompt(int(code) if code.lstrip("-").isdigit() else -1, cwd)
            s = s[j + len(post) :]

    def _partial_marker(self, s: str) -> int:
        """How many trailing characters of `s` might start a marker (or a CR LF pair)."""
        k = s.rfind("\x1e", max(0, len(s) - len(self._pre)))
        if k >= 0 and self._pre.startswith(s[k:]):
            return len(s) - k
        return 1 if s.endswith("\r") else 0

    def _emit(self, text: str) -> None:
        if not text:
            return
        if not self._started:
            return  # bash's own start-up prompt
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        if self._nonce in text:
            text = "".join(x for x in text.splitlines(True) if self._nonce not in x)
            if not text:
                return
        with self.cond:
            self.output.append(text)
            self.last_output = time.monotonic()
            self.cond.notify_all()
        self._on_output(text)

    def _prompt(self, code: int, cwd: str) -> None:
        with self.cond:
            was_busy = self.busy and self._started
            self._started = True
            self.busy = False
            self.last_exit = code
            self.cwd = cwd or self.cwd
            self.cond.notify_all()
        if was_busy:
            self._on_prompt(code, cwd)


def terminate_signal_name(code: int) -> str | None:
    """`SIGINT` for exit code 130 and the like; None when the code is not 128 + a signal."""
    if 128 < code < 128 + 65:
        with contextlib.suppress(ValueError):
            return signal.Signals(code - 128).name
    return None
