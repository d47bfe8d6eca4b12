"""What the host-safety attack suite shares: a host laid out in a temp dir, the real `workbench`
command (through `cli_zygote.py`), the scripted model, and the checks every attack ends with.

A `Host` is one test's world: the workspace `ws`, a fake home (HOME and XDG_* point there for
every command run: the real home is never touched), `marks` where a payload that ran on the host
leaves a marker, `decoy` files outside the workspace, and the data and config dirs. Payloads
write their marker with an absolute path under `marks`; inside the sandbox that path does not
exist (its /tmp is private), so a marker only appears when the host ran the payload.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pty
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import exit_codes
from workbench.testing.llm_server import ScriptedLLMServer

ROOT = Path(__file__).resolve().parents[2]
ZYGOTE = Path(__file__).with_name("cli_zygote.py")
MODEL = "openai/test-model"
KEY = "sk-attack-test-KEY"

REFUSED = ("not run", "protected", "read-only", "refus", "reject", "denied", "not permitted")
"""Words one of which a clear error to the agent holds (loosely: the wording is not tested)."""
ESCAPES = (b"\x1b", b"\x9b", b"\x07", b"\x9d")
DOCUMENTED = frozenset(entry.code for entry in exit_codes.TABLE) - {exit_codes.INTERNAL}
"""Exit codes docs/headless.md documents (its table is `exit_codes.TABLE`), less the internal
error (a bug)."""
GIT_ENV = {
    "GIT_AUTHOR_NAME": "person",
    "GIT_AUTHOR_EMAIL": "person@example.invalid",
    "GIT_COMMITTER_NAME": "person",
    "GIT_COMMITTER_EMAIL": "person@example.invalid",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "PAGER": "cat",
    "LESS": "FRX",
}


@dataclass
class Run:
    """One finished `workbench` command."""

    code: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False

    @property
    def text(self) -> str:
        """stdout and stderr as text, for failure messages."""
        return (self.stdout + b"\n--- stderr ---\n" + self.stderr).decode(errors="replace")


class Cli:
    """Runs `workbench ARGS` as its own process: forked from a process that has imported the
    command once (`cli_zygote.py`), or `python -m workbench` with WORKBENCH_ATTACKS_SUBPROCESS=1."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = scratch
        self.count = 0
        self.lock = threading.Lock()
        self.zygote: subprocess.Popen[str] | None = None
        if os.environ.get("WORKBENCH_ATTACKS_SUBPROCESS") != "1":
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
            with (scratch / "zygote.err").open("wb") as err:
                self.zygote = subprocess.Popen(
                    [sys.executable, str(ZYGOTE)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    env=env,
                    cwd=scratch,
                )
            assert self.zygote.stdout is not None
            ready = self.zygote.stdout.readline()
            assert json.loads(ready) == {"ready": True}, ready

    def run(self, args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 90) -> Run:
        """Run `workbench ARGS` in `cwd` with exactly `env`; kills it after `timeout`."""
        with self.lock:
            self.count += 1
            out = self.scratch / f"run{self.count}.out"
            err = self.scratch / f"run{self.count}.err"
            if self.zygote is None:
                return _subprocess_run(args, env, cwd, timeout)
            request = {"argv": list(args), "env": env, "cwd": str(cwd), "timeout": timeout}
            request |= {"stdout": str(out), "stderr": str(err)}
            assert self.zygote.stdin is not None and self.zygote.stdout is not None
            self.zygote.stdin.write(json.dumps(request) + "\n")
            self.zygote.stdin.flush()
            answer = json.loads(self.zygote.stdout.readline())
            return Run(answer["code"], out.read_bytes(), err.read_bytes(), "timeout" in answer)

    def close(self) -> None:
        """End the zygote (it has no child left: each run was waited for)."""
        if self.zygote is not None:
            assert self.zygote.stdin is not None
            self.zygote.stdin.close()
            try:
                self.zygote.wait(10)
            except subprocess.TimeoutExpired:
                self.zygote.kill()
                self.zygote.wait()


def _subprocess_run(args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float) -> Run:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "workbench", *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired as exc:
        return Run(None, exc.stdout or b"", exc.stderr or b"", True)
    return Run(done.returncode, done.stdout, done.stderr)


@dataclass
class Host:
    """One test's host: workspace, fake home, marker folder, decoys, data and config dirs."""

    root: Path
    ws: Path = field(init=False)
    home: Path = field(init=False)
    marks: Path = field(init=False)
    decoy: Path = field(init=False)
    data: Path = field(init=False)
    cfg: Path = field(init=False)

    def __post_init__(self) -> None:
        self.ws = self.root / "ws"
        self.home = self.root / "home"
        self.marks = self.root / "marks"
        self.decoy = self.root / "decoy"
        self.data = self.root / "data"
        self.cfg = self.root / "cfg"
        self.cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        """The app's own cache, shared with the rest of the suite (the Docker runtime's
        wheelhouse, built once): the agent never reaches it."""
        for folder in (self.ws, self.home, self.marks, self.decoy, self.cfg):
            folder.mkdir(parents=True, exist_ok=True)
        (self.decoy / "victim.txt").write_text("decoy\n")
        (self.home / ".gitconfig").write_text("[user]\n\tname = person\n")

    def mark(self, name: str = "hit") -> str:
        """The absolute path a payload touches to show it ran on the host."""
        return str(self.marks / name)

    def payload(self, name: str = "hit") -> str:
        """A shell script that leaves marker `name` and drains its input (a pager, a filter)."""
        return f"#!/bin/sh\ntouch {self.mark(name)}\ncat >/dev/null 2>&1\nexit 0\n"

    def env(self, base_url: str = "http://127.0.0.1:9/v1", **extra: str) -> dict[str, str]:
        """The whole environment of a command run: nothing of the real user's."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_CACHE_HOME": str(self.cache),
            "XDG_STATE_HOME": str(self.home / ".local/state"),
            "LLM_MODEL": MODEL,
            "LLM_BASE_URL": base_url,
            "LLM_API_KEY": KEY,
            "WORKBENCH_DATA_DIR": str(self.data),
            "WORKBENCH_CONFIG_DIR": str(self.cfg),
            "WORKBENCH_LLM_RETRY_MIN_WAIT_S": "0.01",
            "WORKBENCH_LLM_RETRY_MAX_WAIT_S": "0.05",
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
            "WORKBENCH_LLM_MAX_INPUT_TOKENS": "10000000",
        }
        if os.environ.get("PYTHONPATH"):
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        env.update(extra)
        return env

    def git_repo(self, folder: Path | None = None) -> None:
        """Make `folder` (the workspace) a repository with one commit and one changed file."""
        folder = folder or self.ws
        (folder / "a.txt").write_text("one\n")
        host_sh(
            f"git init -q {folder} && git -C {folder} add -A && git -C {folder} commit -qm init"
        )
        (folder / "a.txt").write_text("one\ntwo\n")

    def logs(self) -> list[Path]:
        """The session logs written so far, oldest first."""
        return sorted((self.data / "sessions").glob("*.jsonl"), key=lambda p: p.stat().st_mtime)

    def snapshot(self) -> dict[str, str]:
        """Every path outside the workspace and the app's own dirs, with what it holds."""
        skip = {self.ws, self.data, self.cfg, self.cache}
        return snapshot(self.root, skip)


def snapshot(root: Path, skip: Iterable[Path] = ()) -> dict[str, str]:
    """path -> mode and content digest (link target for symlinks), for all of `root` but `skip`."""
    skipped = set(skip)
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = [d for d in dirs if here / d not in skipped]
        for name in [*dirs, *files]:
            path = here / name
            info = path.lstat()
            if path.is_symlink():
                what = "-> " + os.readlink(path)
            elif path.is_file():
                what = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
            else:
                what = "dir"
            found[str(path.relative_to(root))] = f"{oct(info.st_mode)} {what}"
    return found


def host_sh(command: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """Run a set-up command on the host; fail the test if it fails."""
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env={**os.environ, **GIT_ENV, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"set-up failed: {command}\n{done.stdout}{done.stderr}"
    return done.stdout


# --------------------------------------------------------------------------- scripts


def bash(command: str, risk: str = "LOW", timeout: float | None = None) -> dict[str, Any]:
    """A script step: one execute_bash call (the model declares LOW: it lies)."""
    args: dict[str, Any] = {"command": command, "security_risk": risk}
    if timeout is not None:
        args["timeout"] = timeout  # a hard limit instead of the soft one (10 s)
    return {"tool_calls": [{"name": "execute_bash", "arguments": args}]}


def create(path: Path | str, text: str) -> dict[str, Any]:
    """A script step: the editor creates `path`."""
    args = {"command": "create", "path": str(path), "file_text": text, "security_risk": "LOW"}
    return {"tool_calls": [{"name": "str_replace_editor", "arguments": args}]}


def finish() -> dict[str, Any]:
    """A script step: finish with success."""
    args = {"message": "done", "outcome": "success"}
    return {"tool_calls": [{"name": "finish", "arguments": args}]}


def session(
    cli: Cli,
    host: Host,
    steps: Sequence[dict[str, Any]],
    args: Sequence[str] = (),
    cwd: Path | None = None,
    timeout: float = 90,
    **env: str,
) -> tuple[Run, ScriptedLLMServer]:
    """One headless session (default settings, `--on-confirm reject`) whose model makes
    `steps`, then finishes; the run and the scripted server (its requests)."""
    script = {"steps": [*steps, finish()], "default": finish()}
    with ScriptedLLMServer(script) as server:
        argv = ["--headless", "-t", "do the task", *args]
        run = cli.run(argv, host.env(server.base_url, **env), cwd or host.ws, timeout)
    return run, server


def answers(server: Any) -> list[str]:
    """What the agent was told for each tool call, in order (the last request's history)."""
    if not server.requests:
        return []
    messages = server.requests[-1]["messages"]
    return [str(m.get("content") or "") for m in messages if m["role"] == "tool"]


def shown(text: str, limit: int = 300) -> str:
    """`text` for a failure message, any /etc/shadow-like line masked (test logs are public)."""
    masked = re.sub(r"(?m)^([\w.-]+):[^:\n]*:(\d*:){5,}.*$", r"\1:<masked shadow line>", text)
    return masked[:limit]


def refused(text: str) -> bool:
    """Whether `text` reads as a clear refusal (loosely)."""
    low = text.lower()
    return any(word in low for word in REFUSED)


# --------------------------------------------------------------------------- checks


def check_log_whole(path: Path) -> list[dict[str, Any]]:
    """Every line of the session log is JSON and it ends with a final state; its events."""
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"", f"{path} does not end with a whole line"
    events = [json.loads(line) for line in lines[:-1]]
    assert events[0]["kind"] == "header", path
    last = events[-1]
    assert last["kind"] == "state" and last["state"] in ("finished", "stopped", "error"), last
    return events


def check_survived(host: Host, run: Run, codes: Iterable[int] = (0,)) -> list[dict[str, Any]]:
    """The app ended on its own with an expected, documented code and a whole session log."""
    assert not run.timed_out, f"the run did not end in time:\n{run.text[-3000:]}"
    assert run.code in set(codes) & DOCUMENTED, f"exit code {run.code}:\n{run.text[-3000:]}"
    assert b"NOT isolated" not in run.stderr, "the default isolation (bubblewrap) is not in force"
    logs = host.logs()
    assert logs, "no session log was written"
    return check_log_whole(logs[-1])


TRIGGERS: list[tuple[str, list[str]]] = [
    ("git status", ["git", "status"]),
    ("git diff", ["git", "diff"]),
    ("git log", ["git", "log", "-1"]),
    ("git st (alias)", ["git", "st"]),
    ("git add -A", ["git", "add", "-A"]),
    ("git commit", ["git", "commit", "-qm", "host commit"]),
    ("git checkout -b", ["git", "checkout", "-q", "-b", "host-branch"]),
    ("git submodule status", ["git", "submodule", "status"]),
]
"""What the person does on the host in the workspace after the session."""


def in_pty(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float = 20) -> str:
    """Run `argv` with its output on a terminal (git pages only to one); its output."""
    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        start_new_session=True,
    )
    os.close(secondary)
    output = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(main, 65536)
                except OSError:
                    chunk = b""
                if not chunk and proc.poll() is not None:
                    break
                output += chunk
            elif proc.poll() is not None:
                break
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
    finally:
        proc.wait(5)
        os.close(main)
    return output.decode(errors="replace")


def host_triggers(host: Host, folder: Path | None = None) -> list[str]:
    """Do on the host what a person does in the workspace (git, an interactive bash with its
    home there); the names of those after which a marker appeared."""
    folder = folder or host.ws
    env = host.env() | GIT_ENV
    guilty: list[str] = []
    for name, argv in TRIGGERS:
        in_pty(argv, folder, env)
        if any(host.marks.iterdir()) and not guilty:
            guilty.append(name)
    return guilty


def check_no_marker(host: Host, guilty: Sequence[str] = ()) -> None:
    """No payload ran on the host."""
    found = sorted(p.name for p in host.marks.iterdir())
    assert not found, f"a payload ran on the host (markers {found}, first after {list(guilty)})"


def check_unchanged(before: dict[str, str], after: dict[str, str]) -> None:
    """Nothing outside the workspace changed."""
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"changed outside the workspace: {changed[:20]}"
