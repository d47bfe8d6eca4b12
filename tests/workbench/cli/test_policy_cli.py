"""`workbench policy check` and `workbench policy rules`: the real command, and agreement with
what a headless run does with the same calls (scripted LLM, real local sandbox)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from headless_harness import cli_env, finish, make_config, run_cli

from workbench.cli.policy import check_call
from workbench.events import ConfirmationDecisionEvent, ObservationEvent
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer

CONFIG = """\
# my rules
[security]
allow = [
    "run:make test*",  # tests are fine
]
deny = ['run:curl *']
"""


def _policy(tmp_path: Path, *args: str, config: bool = True) -> tuple[int, str, str]:
    env = cli_env(tmp_path, "http://127.0.0.1:9/v1")
    (tmp_path / "ws").mkdir(exist_ok=True)
    extra = []
    if config:
        (tmp_path / "rules.toml").write_text(CONFIG)
        extra = ["--config", str(tmp_path / "rules.toml")]
    done = run_cli(["policy", *args, *extra, "--workspace", str(tmp_path / "ws")], env, tmp_path)
    return done.returncode, done.stdout, done.stderr


def test_check_prints_risk_reasons_rule_and_decision(tmp_path: Path) -> None:
    code, out, _ = _policy(tmp_path, "check", "rm -rf build")
    assert code == 0
    assert out.splitlines()[0] == "execute_bash: risk HIGH"
    assert "recursive forced delete" in out
    assert "decision: ask (headless: reject)" in out
    code, out, _ = _policy(tmp_path, "check", "--json", "curl -s http://127.0.0.1:9/")
    verdict = json.loads(out)
    assert verdict["decision"] == "reject" and verdict["rule"] == "deny:run:curl *"
    code, out, _ = _policy(tmp_path, "check", "--json", "make test && make test-slow")
    assert json.loads(out)["decision"] == "run"
    code, out, _ = _policy(tmp_path, "check", "--json", "--path", "/etc/hosts")
    assert json.loads(out)["tool"] == "str_replace_editor"
    assert json.loads(out)["decision"] == "ask"
    code, out, _ = _policy(tmp_path, "check", "--json", "--code", "print(1)")
    assert json.loads(out) == {
        "tool": "execute_ipython_cell",
        "risk": "LOW",
        "reasons": [],
        "rule": "confirmation=risky",
        "decision": "run",
        "headless": None,
    }


def test_rules_say_where_each_comes_from(tmp_path: Path) -> None:
    code, out, _ = _policy(tmp_path, "rules", "--json")
    assert code == 0
    rows = json.loads(out)
    file = str(tmp_path / "rules.toml")
    assert rows == [
        {"kind": "allow", "rule": "run:make test*", "source": file, "line": 4},
        {"kind": "deny", "rule": "run:curl *", "source": file, "line": 6},
    ]
    code, out, _ = _policy(tmp_path, "rules", config=False)
    assert code == 0 and "no allow or deny rules" in out


def test_bad_use_is_a_usage_error_with_a_reason(tmp_path: Path) -> None:
    code, _, err = _policy(tmp_path, "check")
    assert code == 2 and "give the command line to check" in err
    code, _, err = _policy(tmp_path, "check", "--tool", "no_such_tool", "--code", "x")
    assert code == 2 and "There is no tool named 'no_such_tool'" in err


CASES: list[tuple[str, dict[str, Any]]] = [
    ("execute_bash", {"command": "touch ran-ls && ls"}),
    ("execute_bash", {"command": "touch ran-rm && rm -rf ./nothing-here"}),
    ("execute_bash", {"command": "touch ran-sudo && sudo true"}),
    ("execute_bash", {"command": "make test; touch ran-make"}),
    ("execute_bash", {"command": "curl -s http://127.0.0.1:9/ ; touch ran-curl"}),
    ("execute_ipython_cell", {"code": "open('ran-cell', 'w').close()"}),
]


async def test_check_agrees_with_what_a_run_does(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "rules.toml").write_text(CONFIG)
    script = [
        {"tool_calls": [{"name": name, "arguments": {**args, "security_risk": "LOW"}}]}
        for name, args in CASES
    ]
    async with ScriptedLLMServer([*script, finish()]) as server:
        config = make_config(
            tmp_path,
            server.base_url,
            workspace,
            security__allow=["run:make test*"],
            security__deny=["run:curl *"],
            agent__enable_jupyter=True,
        )
        expected = [check_call(config, name, dict(args)).decision for name, args in CASES]
        summary = await run_session(config, "go", HumanPrinter(io.StringIO(), io.StringIO()))
    assert expected == ["run", "ask", "ask", "run", "reject", "run"]
    events = read(Path(summary["log"])).events
    rejected = {e.cause for e in events if isinstance(e, ConfirmationDecisionEvent)}
    rejected &= {
        e.cause for e in events if isinstance(e, ConfirmationDecisionEvent) and not e.approved
    }
    ran = [e for e in events if isinstance(e, ObservationEvent) and e.cause not in rejected]
    assert len(ran) == expected.count("run")
    markers = ["ran-ls", "ran-rm", "ran-sudo", "ran-make", "ran-curl", "ran-cell"]
    for marker, decision in zip(markers, expected, strict=True):
        assert (workspace / marker).exists() == (decision == "run"), marker


def test_check_gives_the_reasons_the_run_would(tmp_path: Path) -> None:
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", tmp_path)
    lower = check_call(config, "execute_bash", {"command": "rm -rf build"}, "MEDIUM")
    assert lower.reasons == ["recursive forced delete (rm -rf)"]  # a lower claim adds nothing
    higher = check_call(config, "execute_bash", {"command": "ls"}, "HIGH")
    assert (higher.risk, higher.reasons) == ("HIGH", ["the agent declared HIGH"])
