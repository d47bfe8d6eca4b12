"""`set_env` is judged by the names it sets, wherever it comes from: the policy rates
`PROMPT_COMMAND`, `BASH_ENV`, `LD_*`, `PATH`, `GIT_*` ... HIGH and ordinary names LOW, and a
headless re-run of a log holding one rejects it, telling why (a log is anyone's text)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from headless_harness import bash, cli_env, finish, json_lines, run_cli

from workbench.config.schema import SecurityConfig
from workbench.events import SetEnvAction
from workbench.security.allow_rules import propose
from workbench.security.policy import check
from workbench.testing.llm_server import ScriptedLLMServer

WS = "/home/me/proj"


@pytest.mark.parametrize(
    "name",
    [
        "PROMPT_COMMAND", "BASH_ENV", "ENV", "PS4", "LD_PRELOAD", "LD_LIBRARY_PATH", "PATH",
        "PYTHONPATH", "PYTHONSTARTUP", "GIT_CONFIG_GLOBAL", "GIT_EXEC_PATH", "GIT_SSH_COMMAND",
        "NODE_OPTIONS", "PERL5OPT", "IFS", "SHELLOPTS", "BASHOPTS", "EDITOR",
    ],
)  # fmt: skip
def test_names_that_decide_what_runs_are_high(name: str) -> None:
    verdict = check(SetEnvAction(env={"OK_NAME": "1", name: "x"}), None, SecurityConfig(), WS)
    assert verdict.risk == "HIGH" and verdict.needs_confirmation
    assert verdict.reason.startswith(f"sets {name}, which ")


def test_always_allow_offers_no_rule_for_a_high_set_env() -> None:
    proposal = propose(SetEnvAction(env={"LD_PRELOAD": "x"}), SecurityConfig(), WS)
    assert proposal.rules == ()
    assert "asked about every time (sets LD_" in proposal.refused


@pytest.mark.parametrize("name", ["API_TOKEN", "DEBUG", "MY_SETTING", "LANG", "TZ"])
def test_ordinary_names_are_low_and_unasked(name: str) -> None:
    verdict = check(SetEnvAction(env={name: "1"}), None, SecurityConfig(confirmation="always"), WS)
    assert verdict.risk == "LOW" and not verdict.needs_confirmation


def test_a_rerun_log_setting_prompt_command_is_rejected_with_the_reason(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = [bash("echo first"), bash("echo second"), bash("echo after"), finish()]
    with ScriptedLLMServer(script) as server:
        proc = run_cli(["--headless", "--json", "-t", "x"], cli_env(tmp_path, server.base_url), ws)
    assert proc.returncode == 0, proc.stderr
    log = Path(json_lines(proc.stdout)[-1]["log"])
    # The log as someone crafted it: the first two actions become set_env.
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    marker = rerun / "prompt-command-ran"
    envs = iter([{"PROMPT_COMMAND": f"touch {marker}"}, {"MY_SETTING": "1"}])
    lines = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event.get("kind") == "action" and event["action"].get("command", "").startswith(
            ("echo first", "echo second")
        ):
            event["action"] = {"kind": "set_env", "env": next(envs)}
            event["tool_name"], event["security_risk"] = "set_env", None
        lines.append(json.dumps(event))
    log.write_text("\n".join(lines) + "\n")

    env = cli_env(tmp_path, "http://127.0.0.1:9", WORKBENCH_SECURITY_HEADLESS_ON_CONFIRM="reject")
    proc = run_cli(["replay", "--rerun", "--json", str(log), "--workspace", str(rerun)], env, rerun)
    out = json_lines(proc.stdout)
    refused = [
        line for line in out if line["type"] == "difference" and "not run" in line.get("new", "")
    ]
    assert len(refused) == 1, proc.stdout + proc.stderr
    assert "sets PROMPT_COMMAND, which changes what the shell runs" in refused[0]["new"]
    assert "What you can do:" in refused[0]["new"]
    assert not marker.exists()
    [ordinary] = [line for line in out if line.get("action") == "set env MY_SETTING"]
    assert ordinary["new"].startswith("Set 1 variable")  # ran unasked
