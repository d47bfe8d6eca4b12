"""`execute_bash`: one command at a time in the sandbox's persistent bash shell."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from sandbox.errors import SandboxError
from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.display import Cell, Role, first_line, last_line, strip_ansi, telling_line
from workbench.security.analyzer import Assessment, analyze_command
from workbench.tools.base import ParseOptions, RuleSubject, Tool, ToolCallError, ToolContext, clip
from workbench.tools.host_run import parse_escalation

log = logging.getLogger(__name__)

INTERRUPT_WAIT_S = 5.0
"""How long a stop waits for the C-c that interrupts the command it cut short."""
MAX_COMMAND_CHARS = 100_000
"""The longest command taken (the analyzer reads 100 KB in about 0.1 s; a 5 MB command once
held the session for minutes); a file does the job better."""
MAX_TIMEOUT_S = 86_400.0
"""The longest hard `timeout` taken (a day); past ~1e11 s the shell's clock overflows."""

_CUT = re.compile(r"\[\.\.\. output truncated: [\d,]+ characters \(([\d,]+) lines\)")


def _is_input(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    lowered = str(value).lower()
    if lowered not in ("true", "false"):
        raise ToolCallError(
            f'argument \'is_input\' of execute_bash must be "true" or "false"; '
            f"got {clip(json.dumps(value))}."
        )
    return lowered == "true"


class BashTool(Tool[CmdRunAction, CmdOutputObservation]):
    """The persistent shell: commands, reading more output, typing into a running command."""

    name = "execute_bash"
    description = (
        "Run one command in a persistent bash shell inside the sandbox. The shell keeps its "
        "state between calls: the current directory, exported variables and activated "
        "virtualenvs stay.\n"
        "* Send a single command per call. Join steps with `&&` or `;`, or use pipes, loops and "
        "heredocs; two commands on separate lines are refused.\n"
        "* A command that prints nothing new for a while comes back early with exit code -1 and "
        "is still running. Then you may: send an empty `command` to collect more output, send "
        'text or a key such as `C-c`, `C-d` or `C-z` with `is_input` set to "true", or wait. A '
        "new command is not run while another one is still going.\n"
        "* Long-running servers belong in the background: `python app.py > server.log 2>&1 &`.\n"
        "* Very long output keeps its beginning and its end; redirect to a file and read it in "
        "parts when you need all of it.\n"
        "* Prefer non-interactive flags (`-y`, `--no-pager`); pagers are disabled.\n"
        "* Escalation: only when a command cannot work inside the sandbox (it needs a file or "
        "program the sandbox hides, or the host itself), set `escalate` to true and give a "
        "`justification`. It then runs outside the sandbox, on the person's machine, in the "
        "workspace folder, only if the person says yes; it is asked every time, and a refusal "
        "tells you why. Never escalate to get around a rejection."
    )
    parameters = {
        "command": {
            "type": "string",
            "description": "The bash command to run; empty to read more output of a running "
            'command; with is_input="true", the text or key to send to it.',
        },
        "is_input": {
            "type": "string",
            "enum": ["true", "false"],
            "description": '"true" to send `command` to the process that is running now '
            'instead of starting a new command. Default "false".',
        },
        "timeout": {
            "type": "number",
            "description": "A hard limit in seconds. When it passes, the call returns with the "
            "output so far and exit code -1 (the command keeps running). Without it, the call "
            "returns once the command has been silent for a few seconds.",
        },
        "escalate": {
            "type": "boolean",
            "description": "true to ask the person to run this one command OUTSIDE the "
            "sandbox, on their machine (needs `justification`). Default false.",
        },
        "justification": {
            "type": "string",
            "description": "With escalate: why the command cannot run inside the sandbox, "
            "for the person who decides.",
        },
    }
    required = ("command",)
    risk_required = True
    action_kinds = ("run",)
    rule_kind = "run"
    changes_files = True
    rule_text_is_shell = True
    prompt_line = "`execute_bash`: one command at a time in a persistent bash shell."
    executor = "bash"
    pane = "shell"

    def parse_call(self, args: dict[str, Any], options: ParseOptions) -> Any:
        """A command in the sandbox, or (`escalate`) one outside it."""
        if args.get("escalate"):
            return parse_escalation(args)
        return self.parse(args, options)

    def parse(self, args: dict[str, Any], options: ParseOptions) -> CmdRunAction:
        """A command, more output, or input for the running command."""
        timeout = args.get("timeout")
        if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_S:  # NaN fails too
            raise ToolCallError(
                f"argument 'timeout' of execute_bash must be more than 0 and at most "
                f"{MAX_TIMEOUT_S:g} seconds; got {timeout}."
            )
        if len(args["command"]) > MAX_COMMAND_CHARS:
            raise ToolCallError(
                f"The command is {len(args['command'])} characters long; execute_bash takes at "
                f"most {MAX_COMMAND_CHARS}. Write long scripts or data to a file with "
                "str_replace_editor (create), then run the file."
            )
        return CmdRunAction(
            command=args["command"],
            is_input=_is_input(args.get("is_input", "false")),
            timeout=None if timeout is None else float(timeout),
            soft_timeout=options.soft_timeout if timeout is None else None,  # `timeout` wins
        )

    def arguments(self, action: CmdRunAction) -> dict[str, Any]:
        """The call's arguments."""
        args: dict[str, Any] = {"command": action.command}
        if action.is_input:
            args["is_input"] = "true"
        if action.timeout is not None:
            args["timeout"] = action.timeout
        return args

    async def interrupt(self, context: ToolContext) -> None:
        """Send C-c to the command a stop cut short: the server would run it on (bounded)."""
        try:
            await asyncio.wait_for(context.runtime.send_input("C-c"), INTERRUPT_WAIT_S)
        except (SandboxError, TimeoutError, OSError) as exc:
            log.warning("could not interrupt the running command: %s", exc)

    def observation_text(self, observation: CmdOutputObservation) -> str:
        """The output, then exit code (or still running) and cwd, then the server's note."""
        obs = observation
        state = "still running" if obs.running else f"exit code {obs.exit_code}"
        meta = f"[{state}" + (f", cwd {obs.cwd}" if obs.cwd else "") + "]"
        parts = [obs.content.rstrip("\n"), meta]
        if obs.note:
            parts.append(f"[{obs.note}]")
        return "\n".join(p for p in parts if p)

    def failed(self, observation: CmdOutputObservation) -> bool:
        """A finished command with a non-zero exit code."""
        return observation.exit_code not in (0, -1)

    def rule_subject(self, action: CmdRunAction) -> RuleSubject:
        """`run:` rules, judged command by command."""
        return RuleSubject(self.rule_kind, action.command, shell=self.rule_text_is_shell)

    def assess(self, action: CmdRunAction, workspace: str) -> Assessment:
        """The command line's risk; typing into a running command is LOW."""
        if action.is_input:
            return Assessment("LOW")
        return analyze_command(action.command, workspace)

    def describe(self, action: CmdRunAction) -> str:
        """`$ command`."""
        if action.is_input:
            return f"$ (input) {action.command!r}"
        return f"$ {action.command}" if action.command else "$ (read more output)"

    def action_cell(self, key: str, action: CmdRunAction) -> Cell:
        """The command, highlighted as bash."""
        icon = "⌨" if action.is_input else "$"
        title = first_line(action.command) or "(empty)"
        return Cell(key, "action", icon, title, action.command, "code", "bash")

    def observation_cell(self, key: str, observation: CmdOutputObservation) -> Cell:
        """State, line count and the telling line of the output."""
        obs = observation
        content = strip_ansi(obs.content)
        if obs.note:
            content = f"{content}\n[{obs.note}]" if content else f"[{obs.note}]"
        lines = len(content.splitlines())  # "hi\n" is one line
        if obs.running or obs.exit_code == -1:
            icon, state = "…", "running"
        else:
            icon, state = ("✓" if obs.exit_code == 0 else "✗"), f"exit {obs.exit_code}"
        role: Role = "observation" if obs.exit_code in (0, -1) else "error"
        # A failing command's most telling line (`fatal:`, an error, a traceback's end); other
        # output ends with its summary as often as not (`12 passed`, `Done`).
        shown = telling_line(content, 120) if role == "error" else last_line(content, 120)
        cut = _CUT.search(content)
        count = f"{lines} line{'s' if lines != 1 else ''}"
        if cut:  # the middle was cut: say how many lines the command really printed
            count = f"{lines - 1 + int(cut.group(1).replace(',', ''))} lines, middle cut"
        title = f"{state} · {count} · {shown}"
        return Cell(key, role, icon, title.rstrip(" ·"), content, "text")
