"""Escalation: the bash tool may ask to run one command outside the sandbox, with why.

It is always a person's decision: no allow rule approves it, and headless `--on-confirm
approve` does not either unless the run was started with `--allow-escalation`; a refusal tells
the agent why and what to do. With the flag the command runs on the host, where it sees a file
the sandbox hides; the session log holds the request, its justification, who approved it and
the output. Real headless CLI, scripted LLM server, real local sandbox.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from headless_harness import cli_env, finish, make_config, run_cli

from workbench.agent.world import sandbox_world
from workbench.config.schema import Config, SecurityConfig
from workbench.events import (
    ActionEvent,
    ConfirmationDecisionEvent,
    HostRunAction,
    HostRunObservation,
    ObservationEvent,
)
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.security.allow_rules import propose
from workbench.security.policy import check
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer

WS = "/home/me/proj"
MARK = "host-only-5c1e"


def _call(call_id: str, command: str, why: str = "") -> dict[str, Any]:
    args: dict[str, Any] = {"command": command, "security_risk": "LOW"}
    if why:
        args |= {"escalate": True, "justification": why}
    return {"tool_calls": [{"id": call_id, "name": "execute_bash", "arguments": args}]}


def _told(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _outside(tmp_path: Path) -> Path:
    """A file outside the workspace, in a folder the sandbox does not show."""
    folder = tmp_path / "host-only"
    folder.mkdir()
    (folder / "marker.txt").write_text(MARK + "\n")
    return folder / "marker.txt"


def test_no_rule_and_no_policy_approves_an_escalation() -> None:
    action = HostRunAction(command="cat notes.txt", justification="needs the host's file")
    allowing = SecurityConfig(confirmation="never", allow=["run:cat *", "run:cat notes.txt"])
    verdict = check(action, "LOW", allowing, WS)
    assert verdict.needs_confirmation and verdict.decision is None
    assert verdict.risk == "HIGH" and verdict.rule.startswith("escalation")
    assert any("OUTSIDE the sandbox" in reason for reason in verdict.always_ask)
    assert "run outside the sandbox" in propose(action, allowing, WS).refused
    denying = SecurityConfig(deny=["run:cat *"])  # a deny rule still rejects it
    denied = check(action, None, denying, WS).decision
    assert denied is not None and not denied.approved


def test_the_system_prompt_tells_the_agent_how_to_escalate_and_when_it_is_refused() -> None:
    world = sandbox_world(Config(), object())
    assert "execute_bash with escalate=true and a justification" in world
    assert "OUTSIDE the sandbox" in world and "headless) it is refused" in world
    allowed = sandbox_world(Config(security=SecurityConfig(allow_escalation=True)), object())
    assert "it is refused" not in allowed


async def test_headless_approve_refuses_an_escalation_without_the_flag(tmp_path: Path) -> None:
    marker = _outside(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [_call("up", f"cat {marker}", "the file is on the host"), finish()]
    out, err = io.StringIO(), io.StringIO()
    async with ScriptedLLMServer(script) as server:
        config = make_config(
            tmp_path, server.base_url, workspace, security__headless_on_confirm="approve"
        )
        summary = await run_session(config, "go", HumanPrinter(out, err))
        told = _told(server.requests[1])["up"]
    assert summary["status"] == "success", out.getvalue() + err.getvalue()
    assert MARK not in told and MARK not in out.getvalue()
    assert told.startswith(
        "This action was not run: rejected: running a command outside the sandbox needs a "
        "person's yes, and this headless run was not started with --allow-escalation."
    )
    assert "Risk HIGH: runs OUTSIDE the sandbox, on the host, as you: the file is on the host" in (
        told
    )
    assert "What you can do: do it inside the sandbox if you can" in told


def test_with_allow_escalation_it_runs_on_the_host_and_the_log_says_so(tmp_path: Path) -> None:
    marker = _outside(tmp_path)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [
        _call("inside", f"cat {marker}"),
        _call("up", f"cat {marker} && pwd", "the marker file is only on the host"),
        finish(),
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url)
        args = ["--headless", "--json", "-t", "go", "--workspace", str(workspace)]
        result = run_cli(
            [*args, "--on-confirm", "approve", "--allow-escalation"], env, tmp_path, 120
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stdout + result.stderr
    hidden = _told(requests[1])["inside"]
    assert MARK not in hidden and "No such file" in hidden  # the sandbox does not show it
    ran = _told(requests[2])["up"]
    assert MARK in ran and str(workspace) in ran
    assert "ran OUTSIDE the sandbox, on the host" in ran
    summary = json.loads(result.stdout.splitlines()[-1])
    events = read(Path(env["WORKBENCH_DATA_DIR"]) / "sessions" / f"{summary['session_id']}.jsonl")
    asked = [e for e in events.events if isinstance(e, ActionEvent)]
    assert isinstance(asked[1].action, HostRunAction)
    assert asked[1].action.justification == "the marker file is only on the host"
    decision = next(
        e for e in events.events if isinstance(e, ConfirmationDecisionEvent) and e.approved
    )
    assert decision.cause == asked[1].id and decision.rule == "headless:on-confirm=approve"
    output = next(
        e.observation
        for e in events.events
        if isinstance(e, ObservationEvent) and e.cause == asked[1].id
    )
    assert isinstance(output, HostRunObservation)
    assert output.exit_code == 0 and MARK in output.content and output.cwd == str(workspace)
