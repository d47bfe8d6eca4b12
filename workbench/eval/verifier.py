"""Running a Harbor task's verifier (`tests/test.sh`) in the sandbox the agent worked in.

The tests are copied in only once the agent is done, so it can neither read nor change them:
to `<workspace>/.verifier/tests/`, with `<workspace>/.verifier/logs/verifier/` made for the
reward. Harbor's scripts name `/tests/...` and `/logs/verifier/...`, absolute paths that a
sandbox cannot have at its root (the local runtime's file system is the host's, read-only
outside the workspace), so those two prefixes are rewritten to the folders above in every text
file of `tests/` as it is copied. The script runs as the agent's user with cwd the workspace,
under coreutils' `timeout` (the verifier's own time limit; a command the agent left running is
interrupted first). Its output goes to a file, read with the reward from the host's copy of the
workspace (local and Docker runtimes).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.eval.types import VerifierResult, sandbox_call

VERIFIER_DIR = ".verifier"
_ABSOLUTE = re.compile(r"(?<![\w./~-])/(tests|logs)(?=/|\b)")
TIMEOUT_EXIT = 124  # coreutils `timeout` when the time ran out


def host_workspace(runtime: Any) -> Path:
    """The host folder that is the sandbox's workspace (local and Docker runtimes)."""
    workspace = getattr(runtime, "workspace", None)
    if workspace is None:
        raise RuntimeError(
            f"the {getattr(runtime, 'name', '?')} runtime has no workspace on this machine: "
            "a Harbor task's verifier needs the local or the Docker runtime"
        )
    return Path(workspace)


def rewrite_paths(text: str, inside: str) -> str:
    """`text` with Harbor's absolute /tests and /logs pointing under `inside`."""
    return _ABSOLUTE.sub(lambda m: f"{inside}/{m.group(1)}", text)


def copy_tests(tests: Path, host: Path, inside: str) -> None:
    """Copy the task's tests/ to the workspace's verifier folder, rewriting paths in text."""
    target = host / VERIFIER_DIR
    shutil.rmtree(target, ignore_errors=True)  # nothing the agent planted there counts
    for source in sorted(tests.rglob("*")):
        dest = target / "tests" / source.relative_to(tests)
        if source.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = source.read_bytes()
        with contextlib.suppress(UnicodeDecodeError):  # binary: as it is
            data = rewrite_paths(data.decode("utf-8"), f"{inside}/{VERIFIER_DIR}").encode()
        dest.write_bytes(data)
        dest.chmod(0o755 if source.stat().st_mode & 0o111 else 0o644)
    for folder in [target, *(p for p in target.rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
    # The agent's uid writes the logs (it runs the script): a folder anyone may write.
    logs = target / "logs"
    for sub in (logs, logs / "verifier", logs / "agent"):
        sub.mkdir(exist_ok=True)
        sub.chmod(0o777)


def run_verifier(runtime: Any, tests: Path, timeout_s: float) -> VerifierResult:
    """Copy `tests` in, run `test.sh` within `timeout_s`, read the reward."""
    if not (tests / "test.sh").is_file():
        return VerifierResult(reward=None, error=f"the task has no verifier: {tests}/test.sh")
    host = host_workspace(runtime)
    inside = sandbox_call(runtime.info()).workspace.rstrip("/")
    copy_tests(tests, host, inside)
    sandbox_call(runtime.send_input("C-c"))  # a command the agent left running
    base = f"{inside}/{VERIFIER_DIR}"
    out = f"{base}/logs/verifier/stdout.txt"
    command = (
        f"cd {shlex.quote(inside)} && timeout -k 5 {timeout_s:g} bash {shlex.quote(base)}"
        f"/tests/test.sh > {shlex.quote(out)} 2>&1; echo VERIFIER-EXIT=$?"
    )
    action = CmdRunAction(command=command, timeout=min(timeout_s + 30, 86_400))
    observation = sandbox_call(runtime.execute(action))
    code = _exit_code(observation)
    logs = host / VERIFIER_DIR / "logs" / "verifier"
    files = {f"verifier/{p.name}": p.read_bytes() for p in sorted(logs.glob("*")) if p.is_file()}
    output = files.get("verifier/stdout.txt", b"").decode("utf-8", "replace")
    timed_out = code == TIMEOUT_EXIT or code is None
    reward, rewards, error = read_reward(logs)
    if timed_out:
        error = f"the verifier did not finish within {timeout_s:g} s"
        reward = 0.0 if reward is None else reward
    elif reward is None:
        error = error or f"the verifier (exit {code}) wrote no /logs/verifier/reward.txt or .json"
    return VerifierResult(reward, rewards, timed_out, output, files, error)


def _exit_code(observation: object) -> int | None:
    """The script's exit code from the wrapper's `VERIFIER-EXIT=N` (None: it never ended)."""
    if not isinstance(observation, CmdOutputObservation):
        return None
    found = re.findall(r"VERIFIER-EXIT=(\d+)", observation.content)
    return int(found[-1]) if found else None


def read_reward(logs: Path) -> tuple[float | None, dict[str, float], str | None]:
    """(reward, rewards by name, error) from reward.txt (one number) or reward.json (name ->
    number: the reward is its "reward" entry, else the mean)."""
    text_file, json_file = logs / "reward.txt", logs / "reward.json"
    if text_file.is_file():
        text = text_file.read_text(encoding="utf-8", errors="replace").strip()
        try:
            value = float(text)
        except ValueError:
            return None, {}, f"reward.txt holds {text[:80]!r}, not a number"
        if not math.isfinite(value):
            return None, {}, f"reward.txt holds {text!r}, not a finite number"
        return value, {"reward": value}, None
    if json_file.is_file():
        try:
            data = json.loads(json_file.read_text(encoding="utf-8", errors="replace"))
        except ValueError as exc:
            return None, {}, f"reward.json is not JSON: {exc}"
        if not isinstance(data, dict) or not data:
            return None, {}, "reward.json must be an object of name -> number"
        rewards: dict[str, float] = {}
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                return None, {}, f"reward.json: {name} is {value!r}, not a number"
            rewards[str(name)] = float(value)
        reward = rewards.get("reward", sum(rewards.values()) / len(rewards))
        return reward, rewards, None
    return None, {}, None
