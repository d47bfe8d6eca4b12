"""A refused action tells the agent why: the risk and the analyzer's reasons, the rule that
decided, and what it can do instead, in the observation the model reads next (headless
reject, a deny rule, the person's no with or without a reason); headless prints the same.
An incomplete line is not refused: the sandbox's own "incomplete" answer reaches the agent."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path
from typing import Any

from headless_harness import bash, finish, harness, make_config

from workbench.config.schema import SecurityConfig
from workbench.events import (
    ActionEvent,
    CmdRunAction,
    ConfirmationRequestEvent,
    ObservationEvent,
    RejectedObservation,
)
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.security.policy import Decision, check, headless_decision
from workbench.security.refusal import refusal_text
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer


def _tool_messages(request: dict[str, Any]) -> dict[str, str]:
    """The tool results a request to the model carries, by call id."""
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def _repository(ws: Path) -> Path:
    ws.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    (ws / "notes.txt").write_text("keep\n")
    return ws


def _call(call_id: str, command: str) -> dict[str, Any]:
    args = {"command": command, "security_risk": "LOW"}
    return {"id": call_id, "name": "execute_bash", "arguments": args}


async def test_headless_rejections_reach_the_model_with_reasons_rule_and_advice(
    tmp_path: Path,
) -> None:
    ws = _repository(tmp_path / "ws")
    config_before = (ws / ".git" / "config").read_text()
    calls = [
        _call("protected", "git config core.fsmonitor 'touch ran-fsmonitor'"),
        _call("outside", f"cp notes.txt {tmp_path}/elsewhere.txt"),
        _call("denied", "rm notes.txt"),
        _call("incomplete", "cat <<EOF"),
    ]
    script = [{"tool_calls": calls}, finish()]
    out, err = io.StringIO(), io.StringIO()
    async with ScriptedLLMServer(script) as server:
        config = make_config(
            tmp_path,
            server.base_url,
            ws,
            security__headless_on_confirm="reject",
            security__deny=["run:rm *"],
        )
        summary = await run_session(config, "go", HumanPrinter(out, err))
        second = server.requests[1]
    assert summary["status"] == "success", out.getvalue() + err.getvalue()
    told = _tool_messages(second)

    protected = told["protected"]
    assert protected.startswith("This action was not run: rejected: nobody to ask in headless")
    assert "Risk HIGH: changes the repository's git config (.git/config), a protected path" in (
        protected
    )
    assert "makes git run a program later (git config core.fsmonitor)" in protected
    assert "Decided by: confirmation=risky (risk HIGH >= HIGH)" in protected
    assert "headless answers 'reject' (--on-confirm)" in protected
    assert "What you can do: protected paths" in protected
    assert "ask them to make that change on the host" in protected
    assert "finish and tell the person what to run" in protected

    outside = told["outside"]
    assert "copies into" in outside and "outside the workspace" in outside
    assert "use a path inside the workspace instead" in outside

    denied = told["denied"]
    assert denied.startswith("This action was not run: matches the deny rule 'run:rm *'")
    assert "Decided by: the deny rule 'run:rm *'" in denied
    assert "do not send it again" in denied

    # Rated by what parses: not refused, and the sandbox's own answer reaches the agent.
    assert "the command is incomplete" in told["incomplete"]
    assert "was not run" not in told["incomplete"]

    # Nothing ran; headless printed what the model read.
    assert (ws / ".git" / "config").read_text() == config_before
    assert (ws / "notes.txt").exists() and not (tmp_path / "elsewhere.txt").exists()
    printed = out.getvalue()
    for line in protected.splitlines():
        assert line in printed, line


async def test_the_persons_no_reaches_the_model_with_what_they_said(tmp_path: Path) -> None:
    answers = iter(
        [
            Decision("reject", "user", "rejected in the TUI; the person said: use data/copy.txt"),
            Decision("reject", "user", "rejected in the TUI"),
        ]
    )

    async def person(action: ActionEvent, request: ConfirmationRequestEvent) -> Decision:
        return next(answers)

    script = [
        bash("echo x > /tmp/wb-never-written/out.txt", "LOW", call_id="a"),
        bash("unzip -o /nonexistent/x.zip", "LOW", call_id="b"),
        finish(),
    ]
    async with harness(tmp_path, script, confirm=person) as h:
        await h.controller.run("go")
        third = h.server.requests[2]
    told = {**_tool_messages(h.server.requests[1]), **_tool_messages(third)}
    assert "the person said: use data/copy.txt" in told["a"]
    assert (
        "What you can do: use a path inside the workspace instead; do what the person said"
        in (told["a"])
    )
    assert (
        "Decided by: confirmation=risky (risk HIGH >= HIGH), so it needed a yes, and the "
        in (told["b"])
    )
    assert "the person said no" in told["b"]
    assert "unpack into a new folder of its own" in told["b"]
    assert "ask the person (reply without a tool call)" in told["b"]
    events = read(h.session.path).events
    rejected = [
        e.observation.content
        for e in events
        if isinstance(e, ObservationEvent) and isinstance(e.observation, RejectedObservation)
    ]
    assert rejected == [told["a"], told["b"]]  # the log keeps what the model read


def test_the_rule_that_decided_is_named_as_a_person_reads_it() -> None:
    ask = SecurityConfig(ask=["run:git push*"])
    verdict = check(CmdRunAction(command="git push origin main"), None, ask, "/ws")
    text = refusal_text(verdict, headless_decision("reject"))
    assert "Risk HIGH: publishes with git push." in text
    assert "Decided by: the ask rule 'run:git push*', so it needed a yes" in text
    allow = SecurityConfig(allow=["run:npm test*"])
    verdict = check(CmdRunAction(command="npm test > ~/.bashrc"), None, allow, "/ws")
    text = refusal_text(verdict, headless_decision("reject"))
    assert "(the allow rule 'run:npm test*' is a pattern, and a pattern does not approve" in text
    assert "do not change files that make things run later" in text
