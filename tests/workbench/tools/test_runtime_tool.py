"""A tool defined here, registered at run time, goes the whole way with no change elsewhere:
offered to the scripted model, parsed, checked by the policy, executed against the real local
sandbox, shown in headless output, recorded in the log and drawn as TUI cells."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from headless_harness import finish, make_config

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.events import ActionEvent, ObservationEvent, ToolCallAction
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tools.base import ToolContext
from workbench.tools.function import FunctionTool, ToolFailure
from workbench.tools.registry import REGISTRY
from workbench.tui.cells import cell_for_event


class CountWords(FunctionTool):
    """Counts the words of a workspace file with `wc` in the sandbox's shell."""

    name = "count_words"
    description = "Count the words in a text file of the workspace."
    parameters = {
        "path": {"type": "string", "description": "Absolute path of the file."},
        "min_count": {"type": "integer", "description": "Fail below this many words."},
    }
    required = ("path",)

    async def call(self, arguments: dict[str, Any], context: ToolContext) -> str:
        path = arguments["path"]
        obs = await context.runtime.execute(CmdRunAction(command=f"wc -w < '{path}'"))
        assert isinstance(obs, CmdOutputObservation)
        if obs.exit_code != 0:
            raise ToolFailure(f"cannot read {path}: {obs.content.strip()}")
        count = int(obs.content.split()[0])
        if count < arguments.get("min_count", 0):
            raise ToolFailure(f"{path} has only {count} words")
        return f"{path} has {count} words"


@pytest.fixture
def count_words() -> Iterator[CountWords]:
    with REGISTRY.registered(CountWords()) as tool:
        yield tool


def _call(args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "count_words", "arguments": args}]}


async def _run(
    tmp_path: Path, script: list[dict[str, Any]], **dotted: Any
) -> tuple[dict[str, Any], str, ScriptedLLMServer]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("one two three four\n")
    out, err = io.StringIO(), io.StringIO()
    async with ScriptedLLMServer(script) as server:
        config = make_config(tmp_path, server.base_url, workspace, **dotted)
        summary = await run_session(config, "count", HumanPrinter(out, err))
    return summary, out.getvalue() + err.getvalue(), server


async def test_a_tool_registered_at_run_time_goes_the_whole_way(
    tmp_path: Path, count_words: CountWords
) -> None:
    path = str(tmp_path / "ws" / "a.txt")
    script = [
        _call({"path": path, "min_count": "2"}),  # a numeric string, as models send
        _call({"path": path, "min_count": 10}),
        _call({"path": path, "colour": "red"}),
        finish(),
    ]
    summary, text, server = await _run(tmp_path, script)
    assert summary["status"] == "success", text

    # Offered to the model: its schema (with security_risk) and its line in the prompt.
    offered = {tool["function"]["name"]: tool for tool in server.requests[0]["tools"]}
    assert set(offered["count_words"]["function"]["parameters"]["properties"]) == {
        "path",
        "min_count",
        "security_risk",
    }
    assert list(offered)[-2:] == ["think", "finish"]  # think and finish stay last
    assert "`count_words`: Count the words" in server.requests[0]["messages"][0]["content"]

    # Parsed, executed and answered: the model reads the results, errors included.
    answers = [m["content"] for m in server.requests[3]["messages"] if m["role"] == "tool"]
    assert answers[0] == f"{path} has 4 words"
    assert answers[1] == f"ERROR: {path} has only 4 words"
    assert "count_words has no argument 'colour'" in answers[2]

    # Shown in headless output.
    assert f'count_words {{"path": "{path}", "min_count": 2}}' in text
    assert f"{path} has 4 words" in text

    # Recorded, and drawn as TUI cells from the log.
    loaded = read(Path(summary["log"]))
    actions = [e for e in loaded.events if isinstance(e, ActionEvent)]
    assert actions[0].action == ToolCallAction(
        tool="count_words", arguments={"path": path, "min_count": 2}
    )
    observations = [e for e in loaded.events if isinstance(e, ObservationEvent)]
    action_cell = cell_for_event(actions[0])
    assert action_cell is not None and action_cell.title.startswith("count_words {")
    assert json.loads(action_cell.body) == {"path": path, "min_count": 2}
    good, bad = (cell_for_event(e) for e in observations[:2])
    assert good is not None and good.role == "observation" and good.title == f"{path} has 4 words"
    assert bad is not None and bad.role == "error"


async def test_rules_name_a_run_time_tool_and_match_its_arguments(
    tmp_path: Path, count_words: CountWords
) -> None:
    path = str(tmp_path / "ws" / "a.txt")
    script = [_call({"path": path}), finish()]
    summary, text, server = await _run(
        tmp_path, script, security__deny=['count_words:*"path": "*/ws/a.txt"*']
    )
    assert summary["status"] == "success", text
    answers = [m["content"] for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert answers[0].startswith("This action was not run: matches the deny rule")


async def test_a_saved_call_of_a_tool_no_longer_registered_still_shows(
    tmp_path: Path, count_words: CountWords
) -> None:
    path = str(tmp_path / "ws" / "a.txt")
    summary, _, _ = await _run(tmp_path, [_call({"path": path}), finish()])
    REGISTRY.unregister("count_words")
    loaded = read(Path(summary["log"]))
    cells = [cell_for_event(e) for e in loaded.events]
    titles = [cell.title for cell in cells if cell is not None]
    assert any(title.startswith("count_words {") for title in titles)
    assert f"{path} has 4 words" in titles


def test_a_tool_cannot_take_a_name_or_rule_kind_in_use() -> None:
    with pytest.raises(ValueError, match="registered already"):
        REGISTRY.register(FunctionTool("execute_bash", "again", {}, ()))
    with pytest.raises(ValueError, match="rules say 'run'"):
        REGISTRY.register(FunctionTool("run", "a tool named like a rule kind", {}, ()))
    assert [tool.name for tool in REGISTRY.tools()].count("execute_bash") == 1
