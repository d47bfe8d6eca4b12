"""Escalation: one command run outside the sandbox, on the host, when a person says yes.

The agent asks for it through `execute_bash` with `escalate: true` and a `justification`; the
call becomes a `HostRunAction`, owned by this tool (offered to the model only through the bash
tool's schema). The policy always asks a person (`security/policy.py`): no allow rule, "always
allow" or `--on-confirm approve` approves it, unless a headless run was started with
`--allow-escalation` (`security.allow_escalation`), which lets `--on-confirm approve` do so.
An approved command runs as the person running workbench, in the workspace folder on the host,
under `bash -c`, with no input, a time limit (its process group is killed at the end) and the
bash tool's output limit; variables whose names look like secrets (`*KEY*`, `*TOKEN*`, ...)
are left out of its environment. The session log holds the request (the action, with its
justification), who approved it (the decision's rule) and the output and exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
from typing import Any

from sandbox.truncate import DEFAULT_LIMIT, truncate_middle
from workbench.display import Cell, Role, first_line, last_line, strip_ansi
from workbench.events import HostRunAction, HostRunObservation
from workbench.security.analyzer import Assessment, analyze_command
from workbench.security.risk import Findings
from workbench.tools.base import ParseOptions, RuleSubject, Tool, ToolCallError, ToolContext

DEFAULT_TIMEOUT_S = 120.0
"""How long an escalated command may run when the agent gives no `timeout`."""
MAX_TIMEOUT_S = 3600.0
OUTSIDE = "runs OUTSIDE the sandbox, on the host, as you"
"""What the confirmation says first about an escalated command."""
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)


def parse_escalation(args: dict[str, Any]) -> HostRunAction:
    """`execute_bash` arguments with `escalate: true` -> the action, or why not."""
    why = str(args.get("justification") or "").strip()
    if not why:
        raise ToolCallError(
            "execute_bash with escalate=true needs a 'justification': say why this command "
            "cannot run inside the sandbox. The person reads it before deciding."
        )
    if str(args.get("is_input", "false")).lower() == "true":
        raise ToolCallError("escalate=true runs a new command; it cannot send input.")
    command = str(args["command"]).strip()
    if not command:
        raise ToolCallError("escalate=true needs a command to run.")
    timeout = args.get("timeout")
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_S:
        raise ToolCallError(
            f"argument 'timeout' of an escalated command must be more than 0 and at most "
            f"{MAX_TIMEOUT_S:g} seconds; got {timeout}."
        )
    return HostRunAction(
        command=command, justification=why, timeout=None if timeout is None else float(timeout)
    )


class HostRunTool(Tool[HostRunAction, HostRunObservation]):
    """A command outside the sandbox (escalation): asked every time, run on the host."""

    name = ""  # offered through execute_bash's `escalate` argument
    action_kinds = ("host_run",)
    changes_files = True
    escalates = True

    def parse(self, args: dict[str, Any], options: ParseOptions) -> HostRunAction:
        """The escalated command."""
        return parse_escalation(args)

    def arguments(self, action: HostRunAction) -> dict[str, Any]:
        """The `execute_bash` call's arguments."""
        args: dict[str, Any] = {
            "command": action.command,
            "escalate": True,
            "justification": action.justification,
        }
        if action.timeout is not None:
            args["timeout"] = action.timeout
        return args

    async def execute(self, action: HostRunAction, context: ToolContext) -> HostRunObservation:
        """Run it on the host, in the workspace folder, bounded in time and output."""
        cwd = context.host_workspace or context.workspace
        limit = action.timeout or DEFAULT_TIMEOUT_S
        env = {k: v for k, v in os.environ.items() if not _SECRET_NAME.search(k)}
        process = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            action.command,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        timed_out = False
        try:
            output, _ = await asyncio.wait_for(process.communicate(), limit)
        except TimeoutError:
            timed_out = True
            _kill_group(process.pid)
            output, _ = await process.communicate()
        except asyncio.CancelledError:  # a stop: nothing of it may run on
            _kill_group(process.pid)
            await process.wait()
            raise
        text = truncate_middle(output.decode("utf-8", "replace"), DEFAULT_LIMIT)
        code = -1 if timed_out else (process.returncode if process.returncode is not None else -1)
        return HostRunObservation(
            command=action.command, content=text, exit_code=code, cwd=cwd, timed_out=timed_out
        )

    def observation_text(self, observation: HostRunObservation) -> str:
        """The output, then how it ended, saying it ran on the host."""
        obs = observation
        state = "killed at its time limit" if obs.timed_out else f"exit code {obs.exit_code}"
        meta = f"[{state}; ran OUTSIDE the sandbox, on the host, in {obs.cwd}]"
        return "\n".join(p for p in (obs.content.rstrip("\n"), meta) if p)

    def failed(self, observation: HostRunObservation) -> bool:
        """A non-zero exit, or killed at the limit."""
        return observation.exit_code != 0

    def rule_subject(self, action: HostRunAction) -> RuleSubject:
        """`run:` rules see the command (a deny rule rejects it; no allow rule approves it)."""
        return RuleSubject("run", action.command, shell=True)

    def assess(self, action: HostRunAction, workspace: str) -> Assessment:
        """HIGH, of a kind no rule may approve, on top of what the command itself does."""
        found = analyze_command(action.command, workspace)
        findings = Findings()
        findings.add("HIGH", f"{OUTSIDE}: {action.justification}", "escalation")
        for level, reason, kind in found.kinds():
            findings.add(level, reason, kind)
        return findings.assessment()

    def describe(self, action: HostRunAction) -> str:
        """`$ (outside the sandbox) command`."""
        return f"$ (OUTSIDE the sandbox) {action.command}  (why: {action.justification})"

    def action_cell(self, key: str, action: HostRunAction) -> Cell:
        """The command and why, marked as running outside the sandbox."""
        title = f"OUTSIDE the sandbox: {first_line(action.command)}"
        body = f"# {OUTSIDE}\n# why: {action.justification}\n{action.command}"
        return Cell(key, "action", "⚠", title, body, "code", "bash")

    def observation_cell(self, key: str, observation: HostRunObservation) -> Cell:
        """How it ended on the host, and its last line."""
        obs = observation
        content = strip_ansi(obs.content)
        role: Role = "observation" if obs.exit_code == 0 else "error"
        state = "killed at its time limit" if obs.timed_out else f"exit {obs.exit_code}"
        icon = "✓" if obs.exit_code == 0 else "✗"
        title = f"on the host · {state} · {last_line(content, 100)}".rstrip(" ·")
        return Cell(key, role, icon, title, content, "text")


def _kill_group(pid: int) -> None:
    """Kill the command and what it started (it leads its own process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
