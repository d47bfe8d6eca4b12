"""A re-run (`workbench replay --rerun`) judges every recorded action like a live one, `set_env`
included: a log anyone could have written that sets `PROMPT_COMMAND`, `BASH_ENV` or
`LD_PRELOAD` before an innocent command must not get them into the agent's shell.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from attack_support import DOCUMENTED, Cli, Host

from sandbox.protocol import CmdOutputObservation, CmdRunAction, SetEnvAction, SetEnvObservation
from workbench.events import (
    ActionEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)
from workbench.session.log import SessionLog, make_header, new_session_id


def craft(folder: Path, workspace: Path, env: dict[str, str], command: str) -> Path:
    """A session log whose first step sets `env` and whose second runs `command`."""
    folder.mkdir(parents=True, exist_ok=True)
    log = SessionLog.create(folder, make_header(new_session_id(), workspace, "openai/m", {}))
    call = {"model": "openai/m", "prompt_tokens": 1, "completion_tokens": 1, "cost": 0.0}
    events: list[Event] = [
        MessageEvent(id=1, source="user", text="set up and look"),
        LLMCallEvent(id=2, latency_ms=1.0, **call),
        ActionEvent(id=3, tool_name="set_env", tool_call_id="c1", action=SetEnvAction(env=env)),
        ObservationEvent(
            id=4, cause=3, tool_call_id="c1", observation=SetEnvObservation(names=sorted(env))
        ),
        LLMCallEvent(id=5, latency_ms=1.0, **call),
        ActionEvent(
            id=6,
            tool_name="execute_bash",
            tool_call_id="c2",
            action=CmdRunAction(command=command),
            security_risk="LOW",
        ),
        ObservationEvent(
            id=7,
            cause=6,
            tool_call_id="c2",
            observation=CmdOutputObservation(command=command, content="ok\n", exit_code=0),
        ),
        StateChangedEvent(id=8, state="finished", reason="success: done"),
    ]
    for event in events:
        log.append(event)
    log.close()
    return log.path


CASES = {
    "PROMPT_COMMAND": ({"PROMPT_COMMAND": "touch {ws}/ran"}, "true; echo ok"),
    "BASH_ENV": ({"BASH_ENV": "{ws}/env.sh"}, "bash -c true; echo ok"),
    "LD_PRELOAD": ({"LD_PRELOAD": "{ws}/missing.so"}, "ls >/dev/null; echo ok"),
    "PATH": ({"PATH": "{ws}/bin:/usr/bin:/bin"}, "ls; echo ok"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_rerun_judges_set_env(cli: Cli, host: Host, name: str) -> None:
    values, command = CASES[name]
    env = {key: value.format(ws=host.ws) for key, value in values.items()}
    (host.ws / "env.sh").write_text(f"touch {host.ws}/ran\n")
    (host.ws / "bin").mkdir()
    (host.ws / "bin/ls").write_text(f"#!/bin/sh\ntouch {host.ws}/ran\n")
    (host.ws / "bin/ls").chmod(0o755)
    log = craft(host.root / "downloads", host.ws, env, command)
    args = ["replay", str(log), "--rerun", "--headless", "--workspace", str(host.ws)]
    run = cli.run(args, host.env(), host.ws, timeout=90)
    assert not run.timed_out and run.code in DOCUMENTED, f"exit {run.code}:\n{run.text[-3000:]}"
    assert not (host.ws / "ran").exists(), f"{name} from a re-run log reached the agent's shell"
    assert b"cannot be preloaded" not in run.stdout + run.stderr
    assert b"not run" in run.stdout.lower(), f"the re-run did not say what it refused:\n{run.text}"
