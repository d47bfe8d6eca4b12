"""Tool schemas, tool-call parsing (with its error texts), the prompt and message building."""

from __future__ import annotations

import json
import random

import pytest

from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    CmdOutputObservation,
    CmdRunAction,
    FileEditAction,
    IPythonAction,
    IPythonObservation,
)
from sandbox.truncate import truncate_middle as truncate
from workbench.agent.messages import (
    NOT_ANSWERED,
    MessageBuilder,
    build_messages,
    observation_text,
)
from workbench.agent.parse import ToolCallError, parse_tool_call
from workbench.agent.prompt import system_prompt
from workbench.config.schema import Config
from workbench.events import (
    ActionEvent,
    AgentErrorEvent,
    Event,
    FinishAction,
    HostRunAction,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    ThinkAction,
)
from workbench.tools.ipython import IPythonTool
from workbench.tools.registry import REGISTRY, AnyTool, schemas


def _offered(jupyter: bool, browser: bool) -> list[AnyTool]:
    config = Config()
    config.agent.enable_jupyter = jupyter
    config.agent.enable_browser = browser
    return REGISTRY.offered(config)


def tool_names(tools: list[AnyTool]) -> list[str]:
    return [tool.name for tool in tools]


TOOLS = _offered(jupyter=True, browser=True)


def _call(name: str, args: object) -> object:
    raw = args if isinstance(args, str) else json.dumps(args)
    return parse_tool_call(name, raw, TOOLS, soft_timeout=7.0).action


def test_tool_set_follows_config() -> None:
    assert tool_names(_offered(False, False)) == [
        "execute_bash",
        "str_replace_editor",
        "think",
        "finish",
    ]
    assert "browser" in tool_names(TOOLS) and "execute_ipython_cell" in tool_names(TOOLS)


def test_execute_bash_schema_is_exactly_the_seed_contract() -> None:
    bash = next(t for t in schemas(TOOLS) if t["function"]["name"] == "execute_bash")["function"]
    params = bash["parameters"]
    assert set(params["properties"]) == {
        "command",
        "is_input",
        "timeout",
        "security_risk",
        # Escalation (issue 22): one command outside the sandbox, asked every time.
        "escalate",
        "justification",
    }
    assert params["properties"]["escalate"]["type"] == "boolean"
    assert params["properties"]["is_input"]["enum"] == ["true", "false"]
    assert params["properties"]["timeout"]["type"] == "number"
    assert params["properties"]["security_risk"]["enum"] == ["LOW", "MEDIUM", "HIGH"]
    assert set(params["required"]) == {"command", "security_risk"}
    for tool in schemas(TOOLS):
        assert len(tool["function"]["description"]) > 40


def test_an_escalating_call_becomes_a_host_run_and_needs_a_justification() -> None:
    args = {"command": "ls ~", "escalate": "true", "security_risk": "LOW"}
    with pytest.raises(ToolCallError, match="needs a 'justification'"):
        _call("execute_bash", args)
    action = _call("execute_bash", {**args, "justification": "my home folder"})
    assert action == HostRunAction(command="ls ~", justification="my home folder")
    plain = _call("execute_bash", {**args, "escalate": False, "justification": "x"})
    assert isinstance(plain, CmdRunAction)


def test_valid_calls_become_actions() -> None:
    bash = _call("execute_bash", {"command": "ls", "is_input": "false", "security_risk": "LOW"})
    assert bash == CmdRunAction(command="ls", is_input=False, soft_timeout=7.0)
    key = _call("execute_bash", {"command": "C-c", "is_input": "true", "security_risk": "LOW"})
    assert isinstance(key, CmdRunAction) and key.is_input
    timed = _call("execute_bash", {"command": "make", "timeout": "30", "security_risk": "LOW"})
    assert isinstance(timed, CmdRunAction) and timed.timeout == 30.0
    edit = _call(
        "str_replace_editor",
        {"command": "view", "path": "/w/a.py", "view_range": [1, 5]},
    )
    assert edit == FileEditAction(command="view", path="/w/a.py", view_range=[1, 5])
    assert _call("execute_ipython_cell", {"code": "1+1"}) == IPythonAction(code="1+1")
    assert _call("browser", {"code": 'goto("x")'}) == BrowseAction(action='goto("x")')
    assert _call("think", {"thought": "hmm", "security_risk": "LOW"}) == ThinkAction(thought="hmm")
    assert _call("finish", {"message": "no", "outcome": "gave_up"}) == FinishAction(
        message="no", outcome="gave_up"
    )
    parsed = parse_tool_call("execute_bash", '{"command": "x", "security_risk": "HIGH"}', TOOLS)
    assert parsed.security_risk == "HIGH"


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("execute_bash", '{"command": "ls"', "not valid JSON"),
        ("execute_bash", "[1, 2]", "must be a JSON object"),
        ("run_shell", "{}", "There is no tool named 'run_shell'. The tools are: execute_bash"),
        ("execute_bash", {"security_risk": "LOW"}, "missing the required argument 'command'"),
        ("execute_bash", {"command": "ls"}, "missing the required argument 'security_risk'"),
        (
            "execute_bash",
            {"command": 3, "security_risk": "LOW"},
            "'command' of execute_bash must be a string, got number",
        ),
        (
            "execute_bash",
            {"command": "ls", "security_risk": "low!"},
            'must be one of "LOW", "MEDIUM", "HIGH"',
        ),
        (
            "execute_bash",
            {"command": "ls", "is_input": "yes", "security_risk": "LOW"},
            "must be one of",
        ),
        (
            "execute_bash",
            {"command": "ls", "timeout": "soon", "security_risk": "LOW"},
            "must be a number",
        ),
        ("execute_bash", {"command": "ls", "timeout": -1, "security_risk": "LOW"}, "more than 0"),
        (
            "execute_bash",
            {"command": "ls", "cwd": "/", "security_risk": "LOW"},
            "has no argument 'cwd'",
        ),
        ("str_replace_editor", {"command": "create", "path": "/a"}, "create needs 'file_text'"),
        ("str_replace_editor", {"command": "delete", "path": "/a"}, 'must be one of "view"'),
        (
            "str_replace_editor",
            {"command": "view", "path": "/a", "view_range": [1]},
            "[first, last]",
        ),
        (
            "str_replace_editor",
            {"command": "insert", "path": "/a", "insert_line": "x", "new_str": ""},
            "must be an integer",
        ),
        ("finish", {"message": "ok", "outcome": "maybe"}, 'must be one of "success", "gave_up"'),
    ],
)
def test_malformed_calls_get_precise_errors(name: str, args: object, expected: str) -> None:
    with pytest.raises(ToolCallError) as info:
        _call(name, args)
    assert expected in str(info.value)


def test_system_prompt_names_workspace_tools_and_skills() -> None:
    skills = IPythonTool(skills="open_file(path, line=1): open a file")
    tools = [skills if tool.name == skills.name else tool for tool in TOOLS]
    text = system_prompt("/home/me/proj", tools)
    assert "/home/me/proj" in text
    for name in tool_names(TOOLS):
        assert f"`{name}`" in text
    assert "open_file(path, line=1)" in text
    without = [tool for tool in tools if tool.name != skills.name]
    assert "open_file" not in system_prompt("/w", without)


def test_truncate_keeps_head_and_tail() -> None:
    text = "HEAD" + "x" * 10_000 + "TAIL"
    cut = truncate(text, 200)
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and len(cut) < 300
    assert "characters (0 lines) omitted from the middle" in cut
    assert truncate("short", 200) == "short"


def _obs(event_id: int, cause: int, call_id: str, content: str) -> ObservationEvent:
    obs = CmdOutputObservation(command="c", content=content, exit_code=0, cwd="/w")
    return ObservationEvent(id=event_id, cause=cause, tool_call_id=call_id, observation=obs)


def test_messages_pair_tool_calls_with_results() -> None:
    a1 = ActionEvent(
        id=3,
        tool_name="execute_bash",
        tool_call_id="c1",
        action=CmdRunAction(command="ls"),
        thought="let me look",
        security_risk="LOW",
    )
    a2 = ActionEvent(
        id=5, tool_name="execute_ipython_cell", tool_call_id="c2", action=IPythonAction(code="1")
    )
    bad = AgentErrorEvent(
        id=4, tool_name="nope", tool_call_id="c3", arguments="{}", content="no such tool"
    )
    events = [
        MessageEvent(id=1, source="user", text="task"),
        LLMCallEvent(id=2, model="m", prompt_tokens=1, completion_tokens=1, cost=0, latency_ms=1),
        a1,
        bad,
        a2,
        _obs(6, 3, "c1", "a.txt\n" + "y" * 5000),
        ObservationEvent(
            id=7, cause=5, tool_call_id="c2", observation=IPythonObservation(code="1", content="1")
        ),
        MessageEvent(id=8, source="user", text="also this"),
        LLMCallEvent(id=9, model="m", prompt_tokens=1, completion_tokens=1, cost=0, latency_ms=1),
        MessageEvent(id=10, source="agent", text="done?"),
    ]
    messages = build_messages("SYS", events, max_observation_chars=500)
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "user", "assistant"]
    assistant = messages[2]
    assert assistant["content"] == "let me look"
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c3", "c2"]
    args = json.loads(assistant["tool_calls"][0]["function"]["arguments"])
    assert args == {"command": "ls", "security_risk": "LOW"}
    assert assistant["tool_calls"][1]["function"]["arguments"] == "{}"
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results["c3"] == "ERROR: no such tool"
    assert results["c1"].startswith("a.txt") and "omitted from the middle" in results["c1"]
    assert results["c1"].endswith("[exit code 0, cwd /w]")
    assert results["c2"] == "1"


def test_the_builder_hands_out_fresh_dicts_and_starts_over_for_another_conversation() -> None:
    call = ActionEvent(
        id=2, tool_name="execute_bash", tool_call_id="c1", action=CmdRunAction(command="ls")
    )
    events = [MessageEvent(id=1, source="user", text="task"), call, _obs(3, 2, "c1", "x" * 900)]
    builder = MessageBuilder("SYS", 300)
    first = builder.build(events)
    assert first == build_messages("SYS", events, 300)  # the same as a full build
    first[2]["tool_calls"][0]["function"]["arguments"] = "changed by the caller"
    assert builder.build(events) == build_messages("SYS", events, 300)
    # The same ids again with other events (another conversation): nothing is taken over.
    other = [events[0], call, _obs(3, 2, "c1", "other output")]
    assert builder.build(other)[3]["content"].startswith("other output")


def test_unanswered_calls_get_a_placeholder_and_orphans_are_dropped() -> None:
    finish = ActionEvent(
        id=2, tool_name="finish", tool_call_id="f1", action=FinishAction(message="ok")
    )
    events = [
        MessageEvent(id=1, source="user", text="task"),
        finish,
        _obs(3, 99, "ghost", "orphan"),
        MessageEvent(id=4, source="user", text="one more thing"),
    ]
    messages = build_messages("SYS", events)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[3] == {"role": "tool", "tool_call_id": "f1", "content": NOT_ANSWERED}


def _random_events(rng: random.Random, count: int) -> list[Event]:
    """Events in any order a controller (or a broken or stopped one) could leave them."""
    events: list[Event] = []
    calls: list[str] = []
    for event_id in range(1, count + 1):
        kind = rng.choice(["user", "agent", "llm", "action", "action", "error", "obs", "obs"])
        if kind in ("user", "agent"):
            events.append(MessageEvent(id=event_id, source=kind, text=f"{kind} {event_id}"))
        elif kind == "llm":
            events.append(
                LLMCallEvent(
                    id=event_id, model="m", prompt_tokens=1, completion_tokens=1, cost=0,
                    latency_ms=1,
                )
            )  # fmt: skip
        elif kind == "action":
            calls.append(f"c{event_id}")
            action = CmdRunAction(command=f"echo {event_id}")
            thought = rng.choice(["", f"thinking {event_id}"])
            events.append(
                ActionEvent(
                    id=event_id, tool_name="execute_bash", tool_call_id=calls[-1],
                    action=action, thought=thought,
                )
            )  # fmt: skip
        elif kind == "error":
            calls.append(f"c{event_id}")
            events.append(
                AgentErrorEvent(
                    id=event_id, tool_name="nope", tool_call_id=calls[-1], arguments="{",
                    content="bad call",
                )
            )  # fmt: skip
        else:  # an answer to a call, a second one, or one to no call at all
            call = rng.choice([*calls, "ghost"]) if calls else "ghost"
            events.append(_obs(event_id, event_id - 1, call, f"out {event_id}\n" * 3))
    return events


def test_the_incremental_builder_equals_a_full_rebuild_at_every_step() -> None:
    rng = random.Random(20261123)
    for _ in range(200):
        events = _random_events(rng, rng.randint(0, 40))
        builder = MessageBuilder("SYS", 60)
        grown: list[Event] = []
        for event in events:
            grown.append(event)
            if rng.random() < 0.6:  # not every event is followed by an LLM call
                built = builder.build(grown)
                assert built == build_messages("SYS", grown, 60), grown
                for message in built:  # what the caller changes must not reach the next call
                    message["content"] = "changed by the caller"
                    for call in message.get("tool_calls") or []:
                        call["function"]["arguments"] = "changed by the caller"
        assert builder.build(grown) == build_messages("SYS", grown, 60)
        # Another list (a new conversation) is built from scratch.
        other = _random_events(rng, 5)
        assert builder.build(other) == build_messages("SYS", other, 60)


def test_insert_line_as_a_numeric_string_is_the_number() -> None:
    args = {"command": "insert", "path": "/w/a.py", "insert_line": "1", "new_str": "x"}
    action = _call("str_replace_editor", args)
    assert isinstance(action, FileEditAction) and action.insert_line == 1
    args["insert_line"] = " 12 "
    action = _call("str_replace_editor", args)
    assert isinstance(action, FileEditAction) and action.insert_line == 12
    args["insert_line"] = "1.5"
    with pytest.raises(ToolCallError, match="must be an integer"):
        _call("str_replace_editor", args)


def test_an_ipython_result_ends_with_the_kernels_directory_and_interpreter() -> None:
    obs = IPythonObservation(
        code="print(1)", content="1\n", cwd="/w/sub", python="/usr/bin/python3.11"
    )
    assert observation_text(obs).splitlines() == [
        "1",
        "[Jupyter current working directory: /w/sub]",
        "[Jupyter Python interpreter: /usr/bin/python3.11]",
    ]
    old = IPythonObservation(code="x", content="")  # a server that does not say
    assert observation_text(old) == "[no output]"


def test_a_browser_result_names_its_screenshot_file_and_downloads() -> None:
    obs = BrowseObservation(
        action='click("12")',
        url="http://127.0.0.1:8000/",
        title="Files",
        content="page text",
        screenshot="browser-003-ab.png",
        screenshot_path="/tmp/artifacts/browser-003-ab.png",
        downloads=["/w/report.csv"],
    )
    text = observation_text(obs)
    assert "[screenshot saved: /tmp/artifacts/browser-003-ab.png]" in text
    assert "[downloaded: /w/report.csv]" in text
    failed = obs.model_copy(update={"error": "Timeout", "downloads": []})
    assert observation_text(failed).startswith("[browser error] Timeout")
    assert "[screenshot saved:" in observation_text(failed)
