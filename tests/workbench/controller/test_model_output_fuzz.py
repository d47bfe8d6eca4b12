"""Model output that used to end a session with exit 10, and 100+ further malformed and
oversized tool calls (generated with a fixed seed), through the real `workbench --headless
--json` against the scripted server, whole and streamed: no run ends in an internal error,
every bad call gets an answer the agent can act on, every printed line is strict JSON (no NaN
or Infinity, no lone surrogates), and the session log reads back whole."""

from __future__ import annotations

import io
import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from headless_harness import cli_env, finish, make_config, run_cli

from workbench.events import ActionEvent, AgentErrorEvent, MessageEvent, ObservationEvent
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer

SEED = 20261123
GENERATED = 120
CALLS_PER_REPLY = 12


def _call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "arguments": arguments}
    if call_id is not None:
        call["id"] = call_id
    return call


def _bash_raw(arguments: str) -> dict[str, Any]:
    return _call("execute_bash", arguments)


def _deep(depth: int) -> str:
    return '{"command": ' + "[" * depth + "]" * depth + ', "security_risk": "LOW"}'


def issue_inputs() -> list[dict[str, Any]]:
    """The 12 inputs of issue 12, item 2, one reply each; their calls' ids start "issue"."""
    replies = _issue_replies()
    for number, reply in enumerate(replies, 1):
        for call in reply.get("tool_calls", []):
            call["id"] = f"issue{number}"
    return replies


def _timeout(value: str) -> dict[str, Any]:
    """A reply calling execute_bash with `value` written raw as its timeout."""
    raw = f'{{"command": "ls", "timeout": {value}, "security_risk": "LOW"}}'
    return {"tool_calls": [_bash_raw(raw)]}


def _issue_replies() -> list[dict[str, Any]]:
    zeros = "1" + "0" * 400
    as_string = [
        _call("execute_bash", {"command": "ls", "timeout": value, "security_risk": "LOW"})
        for value in ("NaN", "1e400")
    ]
    return [
        # 1-2: a lone surrogate in the arguments, escaped and as a raw character
        {"tool_calls": [_bash_raw('{"command": "echo \\ud800", "security_risk": "LOW"}')]},
        {"tool_calls": [_bash_raw('{"command": "echo \ud800", "security_risk": "LOW"}')]},
        # 3: in a tool name; 4: in the reply's text
        {"tool_calls": [_call("execute_bash\ud800", {"command": "ls", "security_risk": "LOW"})]},
        {"text": "thinking \ud800 aloud", "tool_calls": [_call("think", {"thought": "t"})]},
        # 5-6: a timeout of 1 followed by 400 zeros, as an integer and as a float
        _timeout(zeros),
        _timeout(zeros + ".0"),
        # 7: a 100 000-deep nested argument
        {"tool_calls": [_bash_raw(_deep(100_000))]},
        # 8-10: NaN, Infinity and -Infinity, which strict JSON parsers refuse
        _timeout("NaN"),
        _timeout("Infinity"),
        _timeout("-Infinity"),
        # 11-12: the same numbers as strings ("number" arguments take strings)
        {"tool_calls": [as_string[0]]},
        {"tool_calls": [as_string[1]]},
    ]


def _text(rng: random.Random, size: int) -> str:
    alphabet = "abcxyz0123456789 _-./\\\"'{}[]:,\t\n\x01\x07\x1b\u00e9\u2603\U0001f600"
    return "".join(rng.choice(alphabet) for _ in range(size))


def _number(rng: random.Random) -> Any:
    return rng.choice(
        [
            "1" + "0" * rng.randint(20, 400),
            "-1e400",
            "1e-400",
            "1e308",
            "-1",
            "-0.0",
            "0",
            "9" * 5000,
            "NaN",
            "-Infinity",
            "1.5",
            '"12abc"',
            '"-5"',
            '"inf"',
            "true",
            "[]",
            "{}",
            "null",
        ]
    )


def generated_calls(rng: random.Random, count: int, depths: list[int]) -> list[dict[str, Any]]:
    """`count` malformed, oversized or odd tool calls of many kinds (seeded), nested as deep
    as `depths` says where they nest."""
    makers = [
        # wrong types
        lambda: _bash_raw(
            f'{{"command": {rng.choice(["1", "[1, 2]", "{}", "true", "null", "1e5"])}, '
            '"security_risk": "LOW"}'
        ),
        lambda: _bash_raw(f'{{"command": "echo t{rng.randint(0, 10**6)}", "is_input": 5}}'),
        lambda: _call("str_replace_editor", {"command": "view", "path": rng.randint(0, 9)}),
        lambda: _call(
            "str_replace_editor",
            {"command": "view", "path": "/tmp", "view_range": rng.choice(["1,2", [1], {}])},
        ),
        # huge strings
        lambda: _call(
            "execute_bash",
            {"command": "echo " + "y" * rng.randint(100_001, 1_200_000), "security_risk": "LOW"},
        ),
        lambda: _call(
            "str_replace_editor",
            {"command": "create", "path": "/tmp/f", "file_text": "z" * 1_000_100},
        ),
        # unknown tools and odd names and ids
        lambda: _call(_text(rng, rng.randint(0, 80)), {"command": "ls"}),
        lambda: _call("x" * rng.randint(65, 5000), {}),
        lambda: _call("execute_bash", {"command": "ls"}, call_id=_text(rng, 3000) + "\ud800"),
        lambda: _call("functions.execute_bash\n", {"command": "ls"}),
        # missing fields
        lambda: _bash_raw(rng.choice(["{}", "", "   ", '{"security_risk": "LOW"}'])),
        lambda: _call("str_replace_editor", {"command": rng.choice(["create", "insert"])}),
        lambda: _call("execute_bash", {"command": f"echo m{rng.randint(0, 10**6)}"}),
        # deep nesting
        lambda: _bash_raw(_deep(rng.choice(depths))),
        lambda: _bash_raw(
            '{"command": "ls", "x": '
            + '{"a": ' * rng.choice(depths)
            + "1"
            + "}" * max(depths)
            + "}"
        ),
        # bad JSON
        lambda: _bash_raw(
            rng.choice(
                [
                    '{"command": "ls",',
                    "{'command': 'ls'}",
                    '["ls"]',
                    '"ls"',
                    "42",
                    "null",
                    '{"command": "ls"} trailing',
                    '\ufeff{"command": "ls"}',
                    '{"command": "\\x41"}',
                    '{"command": "\\u12"}',
                    '{"command": "ls", "security_risk": "LOW",}',
                ]
            )
        ),
        # huge, tiny and impossible numbers
        lambda: _bash_raw(
            f'{{"command": "echo n", "timeout": {_number(rng)}, "security_risk": "LOW"}}'
        ),
        lambda: _call(
            "str_replace_editor",
            {"command": "view", "path": "/tmp", "view_range": [1, json.loads(_pick_int(rng))]},
        ),
        lambda: _call(
            "str_replace_editor",
            {"command": "insert", "path": "/tmp/f", "insert_line": rng.choice(["1e20", -(2**70)])},
        ),
        # negative timeouts
        lambda: _call(
            "execute_bash",
            {
                "command": "echo t",
                "timeout": rng.choice([-1, -0.001, "-5", 0]),
                "security_risk": "LOW",
            },
        ),
        # control characters and surrogates inside strings and keys
        lambda: _call(
            "execute_bash",
            {"command": "echo a\x00b", "security_risk": "LOW"},
        ),
        lambda: _call("str_replace_editor", {"command": "view", "path": "/tmp/a\x00b"}),
        lambda: _bash_raw('{"comm\\udfffand": "ls", "security_risk": "LOW"}'),
        lambda: _call(
            "execute_bash",
            {"command": f"echo c{rng.randint(0, 10**6)} $'\\x1b[31m' \x07", "security_risk": "LOW"},
        ),
        # odd risk declarations
        lambda: _call(
            "execute_bash",
            {"command": "echo r", "security_risk": rng.choice(["low", "EXTREME", 5, None, []])},
        ),
    ]
    return [rng.choice(makers)() for _ in range(count)]


def _pick_int(rng: random.Random) -> str:
    return rng.choice(["10000000000", "9007199254740993", "1" + "0" * 30, "-99999999999"])


def _strictly(line: str) -> Any:
    """`line` read as a strict parser reads it: no NaN or Infinity, valid UTF-8 strings."""

    def refuse(name: str) -> Any:
        raise ValueError(f"not JSON: {name}")

    value = json.loads(line, parse_constant=refuse)
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")  # no lone surrogate
    return value


@dataclass
class Run:
    """One headless --json run through the issue's inputs, then the generated calls."""

    result: subprocess.CompletedProcess[str]
    server: ScriptedLLMServer
    events: list[Any]
    calls: int


@pytest.fixture(scope="module", params=[False, True], ids=["whole", "streamed"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One session per mode (start-up costs more than all the calls): the 12 inputs of the
    issue, then the generated calls, `CALLS_PER_REPLY` to a reply, then finish."""
    stream: bool = request.param
    tmp_path = tmp_path_factory.mktemp("streamed" if stream else "whole")
    rng = random.Random(SEED + stream)
    # litellm decodes a whole reply itself, and one it cannot decode (past ~1000 levels) costs
    # seconds in its failure logging, the more the larger the reply: the issue's inputs cover
    # that; here whole replies nest below its limit and streamed ones far past it.
    depths = [65, 200, 900] if not stream else [65, 200, 1000, 5000, 100_000]
    calls = generated_calls(rng, GENERATED, depths)
    replies = issue_inputs() + [
        {"text": _text(rng, 40), "tool_calls": calls[i : i + CALLS_PER_REPLY]}
        for i in range(0, len(calls), CALLS_PER_REPLY)
    ]
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\ntwo\n")
    steps = [{"chunk_chars": 1 << 16, **reply} for reply in [*replies, finish()]]
    with ScriptedLLMServer(steps) as server:
        env = cli_env(
            tmp_path,
            server.base_url,
            WORKBENCH_LLM_STREAM="true" if stream else "false",
            WORKBENCH_LLM_NUM_RETRIES="0",
            WORKBENCH_AGENT_MAX_MALFORMED_CALLS="1000",
            WORKBENCH_AGENT_STUCK_THRESHOLD="1000",
            WORKBENCH_LOG_ALL_EVENTS="true",
        )
        result = run_cli(["--headless", "--json", "-t", "go"], env, workspace, timeout=240)
    total = sum(len(reply.get("tool_calls", [])) for reply in replies)
    return Run(result, server, _check_run(result, server, total), total)


def _check_run(
    result: subprocess.CompletedProcess[str], server: ScriptedLLMServer, calls: int
) -> list[Any]:
    assert result.returncode != 10, result.stderr[-3000:]
    lines = [_strictly(line) for line in result.stdout.splitlines()]
    summary = lines[-1]
    assert summary["type"] == "summary", lines[-1]
    assert (summary["status"], result.returncode) == ("success", 0), result.stderr[-3000:]
    assert server.remaining == 0  # every reply was asked for: the run went through them all

    log_path = Path(summary["log"])
    for raw in log_path.read_text(encoding="utf-8").splitlines():
        _strictly(raw)
    loaded = read(log_path)
    assert not loaded.bad_lines and not loaded.truncated
    return list(loaded.events)


def _notes(events: list[Any]) -> list[str]:
    return [e.text for e in events if isinstance(e, MessageEvent) and e.source == "environment"]


def test_every_call_gets_an_answer_and_every_line_is_strict_json(run: Run) -> None:
    # An observation, a malformed-call error, or (for a reply whose calls could not be read
    # at all) a note to the agent; the lines and the log were read strictly by the fixture.
    events = run.events
    answered = sum(isinstance(e, AgentErrorEvent | ObservationEvent) for e in events)
    assert answered + CALLS_PER_REPLY * len(_notes(events)) >= run.calls
    assert run.calls >= 12 + GENERATED


def test_the_inputs_of_the_issue_end_in_answers_not_crashes(run: Run) -> None:
    stream = run.server.requests[0].get("stream") is True
    events = run.events
    errors = [
        e for e in events if isinstance(e, AgentErrorEvent) and e.tool_call_id.startswith("issue")
    ]
    notes = _notes(events)
    if stream:  # the client hands every reply over; the boundary refuses the deep one
        assert len(errors) == 10, [e.content for e in errors]
        assert any("nested" in e.content or "recursion" in e.content for e in errors)
    else:  # litellm cannot decode that reply itself: the agent is told so
        assert len(errors) == 9, [e.content for e in errors]
        assert len(notes) == 1 and "Your last reply could not be read" in notes[0]
        assert "RecursionError" in notes[0]
        sent = [m["content"] for m in run.server.requests[7]["messages"] if m["role"] == "user"]
        assert sent[-1] == notes[0]
    contents = "\n".join(e.content for e in errors)
    for expected in (
        "lone surrogate escape (\\ud800)",
        "There is no tool named 'execute_bash\ufffd'",
        "NaN is not a JSON number",
        "Infinity is not a JSON number",
        "must be at most 9007199254740992 in size",
        "must be a finite number; got nan",
        "must be a finite number; got inf",
    ):
        assert expected in contents, expected
    # The raw lone surrogate (input 2) was replaced, so that command ran.
    ran = [e for e in events if isinstance(e, ObservationEvent) and e.tool_call_id == "issue2"]
    assert len(ran) == 1 and "\ufffd" in str(ran[0].observation)
    thoughts = [e.thought for e in events if isinstance(e, ActionEvent)]
    assert "thinking \ufffd aloud" in thoughts


def test_generated_calls_get_answers_the_agent_can_act_on(run: Run) -> None:
    errors = [
        e
        for e in run.events
        if isinstance(e, AgentErrorEvent) and not e.tool_call_id.startswith("issue")
    ]
    assert len(errors) >= GENERATED // 2  # most of them are malformed on purpose
    for error in errors:  # each says what was wrong; what it quotes is bounded
        assert len(error.content) > 20 and len(error.arguments) <= 10_100, error.content[:200]


async def test_replies_that_cannot_be_read_again_and_again_end_as_malformed(
    tmp_path: Path,
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    unreadable = {"tool_calls": [_bash_raw(_deep(2000))]}  # past litellm's recursion limit
    async with ScriptedLLMServer({"steps": [], "default": unreadable}) as server:
        config = make_config(tmp_path, server.base_url, workspace, agent__max_malformed_calls=3)
        summary = await run_session(config, "go", HumanPrinter(io.StringIO(), io.StringIO()))
    assert (summary["status"], summary["exit_code"]) == ("malformed", 9)
    assert summary["reason"] == "3 malformed tool calls in a row"
    assert len(server.requests) == 3  # each unreadable reply was answered, never retried
    notes = _notes(list(read(Path(summary["log"])).events))
    assert len(notes) == 3 and all("could not be read" in note for note in notes)
