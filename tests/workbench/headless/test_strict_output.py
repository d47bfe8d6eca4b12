"""Headless output stays strict JSON and printable whatever reaches it: non-finite numbers and
lone surrogates that got past the model boundary (a provider's NaN cost, say) are encoded
safely instead of breaking strict parsers or the process."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from workbench.agent.boundary import MAX_NUMBER, clean_text, decode_arguments, echo
from workbench.events import AgentErrorEvent, LLMCallEvent, LLMWaitEvent, MessageEvent
from workbench.headless.output import HumanPrinter, JsonPrinter, strict_json
from workbench.tools.base import ToolCallError


def _strict(line: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)

    value = json.loads(line, parse_constant=refuse)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # no lone surrogate survives
    return value


def test_json_lines_encode_non_finite_numbers_and_lone_surrogates() -> None:
    out = io.StringIO()
    printer = JsonPrinter(out, io.StringIO(), all_events=True)
    cost = LLMCallEvent(
        id=1, model="m", prompt_tokens=1, completion_tokens=2, cost=float("nan"), latency_ms=1e999
    )
    printer.event(cost)
    printer.event(MessageEvent(id=2, source="agent", text="half \ud83d, whole \ud83d\ude00"))
    printer.summary({"status": "success", "cost": float("-inf"), "reason": "\udc80"})
    first, second, third = (_strict(line) for line in out.getvalue().splitlines())
    assert first["event"]["cost"] == "NaN" and first["event"]["latency_ms"] == "Infinity"
    assert second["event"]["text"] == "half \ufffd, whole \U0001f600"
    assert third["cost"] == "-Infinity" and third["reason"] == "\ufffd"


def test_strict_json_leaves_ordinary_lines_as_json_dumps_makes_them() -> None:
    obj = {"a": [1, 2.5, "\u00e9\U0001f600"], "b": None}
    assert strict_json(obj) == json.dumps(obj, separators=(",", ":"))


def test_human_lines_survive_lone_surrogates_on_a_strict_utf8_stream() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    printer = HumanPrinter(stream, stream, all_events=True)
    printer.event(MessageEvent(id=1, source="agent", text="bad \ud800 text"))
    printer.event(
        AgentErrorEvent(
            id=2, tool_name="x\udfff", tool_call_id="c", arguments="{}", content="no tool"
        )
    )
    printer.event(LLMWaitEvent(id=3, model="m", waited_s=10.0, deadline_s=300.0))
    stream.flush()
    text = raw.getvalue().decode("utf-8")
    assert "agent: bad \ufffd text" in text
    assert "-- waiting for m: no answer after 10 s, gives up at 300 s" in text


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ('{"n": NaN}', "NaN is not a JSON number"),
        ('{"n": -Infinity}', "-Infinity is not a JSON number"),
        ('{"n": 1e400}', "is too large"),
        ('{"n": ' + "9" * 5000 + "}", "Exceeds the limit"),
        ('{"n": ' + str(MAX_NUMBER + 1) + "}", f"must be at most {MAX_NUMBER} in size"),
        ('{"n": ' + "[" * 70 + "]" * 70 + "}", "nested more than 64 levels deep"),
        ("[" * 100_000 + "]" * 100_000, "maximum recursion depth exceeded"),
        ('{"n": "a\\u0000b"}', "NUL character"),
        ('{"n\\ud800": 1}', "lone surrogate escape (\\ud800)"),
        ('{"n": 1', "not valid JSON"),
        ("[1]", "must be a JSON object, got array"),
        ('"' + "x" * 1_000_001 + '"', "characters long; at most 1000000 are read"),
    ],
)
def test_the_boundary_refuses_what_no_tool_should_see(raw: str, said: str) -> None:
    with pytest.raises(ToolCallError) as caught:
        decode_arguments("tool", raw)
    assert said in str(caught.value)


def test_the_boundary_keeps_what_is_fine() -> None:
    args = decode_arguments("tool", '{"n": 1.5, "s": "\\ud83d\\ude00 \u00e9", "l": [[[1]]]}')
    assert args == {"n": 1.5, "s": "\U0001f600 \u00e9", "l": [[[1]]]}
    assert decode_arguments("tool", "  ") == {}
    assert clean_text("a\ud83d\ude00\udc00") == "a\U0001f600\ufffd"
    cut = echo("x" * 50_000)
    assert len(cut) < 10_100 and "[40000 characters cut]" in cut
