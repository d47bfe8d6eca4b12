"""Adversarial model output through the real headless run: oversized, deeply nested or broken
arguments, lone surrogates, odd numbers and names. Each bad call gets an answer the agent can
act on, the run ends as the script says, and the session log stays whole and readable."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from headless_harness import finish, make_config

from workbench.events import ActionEvent, AgentErrorEvent, MessageEvent, ObservationEvent
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tools.base import ToolContext
from workbench.tools.function import FunctionTool
from workbench.tools.registry import REGISTRY

OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


class Store(FunctionTool):
    """A run-time tool taking free-form JSON: answers with the size of what it got."""

    name = "store"
    description = "Store a JSON document."
    parameters = {
        "data": {"type": "object", "description": "Any object."},
        "items": {"type": "array", "description": "Any list."},
        "count": {"type": "integer", "description": "A number."},
    }

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> str:
        return f"stored {len(json.dumps(arguments))} characters"


@pytest.fixture
def store() -> Iterator[Store]:
    with REGISTRY.registered(Store()) as tool:
        yield tool


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def _bash(arguments: dict[str, Any] | str) -> dict[str, Any]:
    return _call("execute_bash", arguments)


async def _run(tmp_path: Path, script: list[dict[str, Any]]) -> tuple[dict[str, Any], str, Any]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("l1\nl2\nl3\n")
    out, err = io.StringIO(), io.StringIO()
    steps = [{"chunk_chars": 1 << 16, **step} for step in script]  # a 5 MB call: 80 chunks
    async with ScriptedLLMServer(steps) as server:
        # Streamed replies reach our parser unparsed (litellm decodes whole replies itself).
        config = make_config(
            tmp_path, server.base_url, workspace, llm__stream=True, agent__max_malformed_calls=50
        )
        summary = await run_session(config, "go", HumanPrinter(out, err))
    return summary, out.getvalue() + err.getvalue(), server


def _answers(server: ScriptedLLMServer) -> list[str]:
    return [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]


def _names_in_history(server: ScriptedLLMServer) -> list[str]:
    return [
        call["function"]["name"]
        for request in server.requests
        for message in request["messages"]
        for call in message.get("tool_calls") or []
    ]


async def test_bad_arguments_get_answers_and_the_log_stays_whole(
    tmp_path: Path, store: Store
) -> None:
    path = str(tmp_path / "ws" / "a.txt")
    deep = '{"data": ' + '{"a": ' * 150 + "1" + "}" * 150 + "}"
    script = [
        _call("store", deep),  # decodes, but the log could not read it back
        _call("store", '{"items": ' + "[" * 5000 + "]" * 5000 + "}"),  # RecursionError
        _call("store", '{"count": ' + "9" * 5000 + "}"),  # past Python's int digit limit
        _call("store", '{"data": {"k": "\\ud800"}}'),  # a lone surrogate escape
        _bash('{"command": "echo \\udc00", "security_risk": "LOW"}'),
        _call("str_replace_editor", {"command": "insert", "path": path, "insert_line": "²"}),
        _call(
            "str_replace_editor",
            {"command": "insert", "path": path, "insert_line": "--1", "new_str": "x"},
        ),
        _call("str_replace_editor", {"command": "view", "path": path, "view_range": [1, 10**12]}),
        _call("str_replace_editor", {"command": "view", "path": path, "view_range": [1, 10**30]}),
        _bash({"command": "echo " + "x" * 200_000, "security_risk": "LOW"}),
        _bash({"command": "echo " + "x" * 5_000_000, "security_risk": "LOW"}),
        _bash('{"command": "sleep 1", "timeout": NaN, "security_risk": "LOW"}'),
        _bash({"command": "sleep 1", "timeout": 1e308, "security_risk": "LOW"}),
        _call("store", {"items": list(range(100_000)), "data": {"a": {"b": [None, "\u2603"]}}}),
        _call("str_replace_editor", {"command": "view", "path": path, "view_range": ["1", "-1"]}),
        finish(),
    ]
    summary, text, server = await _run(tmp_path, script)
    assert (summary["status"], summary["exit_code"]) == ("success", 0), text

    answers = _answers(server)
    expected = [
        "argument 'data' of store is nested more than 64 levels deep",
        "The arguments of store cannot be read: maximum recursion depth exceeded",
        "The arguments of store cannot be read: Exceeds the limit (4300 digits)",
        "argument 'data' of store holds a lone surrogate escape (\\ud800)",
        "argument 'command' of execute_bash holds a lone surrogate escape (\\udc00)",
        "argument 'insert_line' of str_replace_editor must be an integer, got \"\\u00b2\"",
        "argument 'insert_line' of str_replace_editor must be an integer, got \"--1\"",
        "line numbers of str_replace_editor are at most 1000000000",
        "argument 'view_range' of str_replace_editor must be at most 9007199254740992 in size",
        "The command is 200005 characters long; execute_bash takes at most 100000",
        "The arguments of execute_bash are 5000044 characters long; at most 1000000 are read",
        "The arguments of execute_bash cannot be read: NaN is not a JSON number. Send finite",
        "argument 'timeout' of execute_bash must be at most 9007199254740992 in size; got 1e+308",
        "stored ",
        "     1\tl1\n     2\tl2\n     3\tl3",
    ]
    assert len(answers) == len(expected)
    for answer, want in zip(answers, expected, strict=True):
        assert want in answer, (want, answer[:300])

    loaded = read(Path(summary["log"]))
    assert not loaded.bad_lines and not loaded.truncated
    assert sum(isinstance(e, AgentErrorEvent) for e in loaded.events) == 13
    assert sum(isinstance(e, ObservationEvent) for e in loaded.events) == 2


async def test_lone_surrogates_and_bad_names_from_the_model_do_not_end_the_run(
    tmp_path: Path,
) -> None:
    script = [
        {"text": "half an emoji \ud83d and a pair split in two \ud83d\ude00"},
        {"text": "thinking \udc00", **_call("think", {"thought": "t"})},
        _call("exe\ud800", {"command": "ls"}),
        _call("x" * 10_000, {"command": "ls"}),
        _call("functions.execute_bash", {"command": "ls"}),
        _bash('{"command": "echo \ud800"'),  # raw text (not JSON) with a lone surrogate
        finish(),
    ]
    summary, text, server = await _run(tmp_path, script)
    assert (summary["status"], summary["exit_code"]) == ("success", 0), text

    loaded = read(Path(summary["log"]))
    assert not loaded.bad_lines and not loaded.truncated
    said = [e.text for e in loaded.events if isinstance(e, MessageEvent) and e.source == "agent"]
    assert said[0] == "half an emoji \ufffd and a pair split in two \U0001f600"
    thought = next(e for e in loaded.events if isinstance(e, ActionEvent))
    assert thought.thought == "thinking \ufffd"
    errors = [e for e in loaded.events if isinstance(e, AgentErrorEvent)]
    assert [e.tool_name[:4] for e in errors] == ["exe\ufffd", "xxxx", "func", "exec"]

    # Providers refuse a whole request whose history names a function outside their pattern.
    names = _names_in_history(server)
    assert names and all(OPENAI_NAME.fullmatch(name) for name in names), names
    answers = _answers(server)
    assert "There is no tool named 'exe\ufffd'" in answers[1]
    assert "There is no tool named 'xxxxxxxx" in answers[2]
    assert "There is no tool named 'functions.execute_bash'" in answers[3]
    assert "The arguments of execute_bash are not valid JSON" in answers[4]
