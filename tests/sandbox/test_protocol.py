"""Every model of the wire protocol survives a JSON round trip, and bad input is refused."""

from __future__ import annotations

import inspect

import pydantic
import pytest

from sandbox import protocol
from sandbox.protocol import (
    ACTION_TYPES,
    BrowseAction,
    BrowseObservation,
    BrowseTaskScoreAction,
    BrowseTaskScoreObservation,
    BrowseTaskStartAction,
    BrowseTaskState,
    CheckpointAction,
    CheckpointObservation,
    CmdOutputObservation,
    CmdRunAction,
    CommandFinished,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    FileEntry,
    IPythonAction,
    IPythonObservation,
    McpBind,
    McpCallAction,
    McpCallObservation,
    McpListAction,
    McpListObservation,
    McpServerSpec,
    McpServerState,
    McpToolInfo,
    OutputChunk,
    RestoreAction,
    ServerInfo,
    SetEnvAction,
    SetEnvObservation,
    parse_action,
    parse_observation,
    parse_stream_event,
)

ACTIONS: list[pydantic.BaseModel] = [
    CmdRunAction(command="echo 'hi' && ls", is_input=False, timeout=2.5, soft_timeout=1.0),
    CmdRunAction(command="C-c", is_input=True),
    SetEnvAction(env={"A": "1", "PATH_EXTRA": "/opt/bin:ü"}),
    FileEditAction(command="create", path="/w/a.py", file_text="x = 1\n\tindent\n"),
    FileEditAction(command="str_replace", path="/w/a.py", old_str="x", new_str="y"),
    FileEditAction(command="insert", path="/w/a.py", insert_line=3, new_str="z"),
    FileEditAction(command="view", path="/w", view_range=[1, -1]),
    FileEditAction(command="undo_edit", path="/w/a.py"),
    IPythonAction(code="import os\nprint(os.getcwd())", timeout=30),
    BrowseAction(action='goto("http://127.0.0.1:8000")'),
    BrowseTaskStartAction(task_id="miniwob.click-test", seed=7),
    BrowseTaskScoreAction(),
    CheckpointAction(label="3", max_file_bytes=1000, ignore=["node_modules/"]),
    RestoreAction(commit="0123456789abcdef0123456789abcdef01234567"),
    McpListAction(
        servers={
            "fs": McpServerSpec(command=["npx", "server-fs", "/w"], env={"TOKEN": "x"}),
            "web": McpServerSpec(url="http://127.0.0.1:9/mcp", headers={"Authorization": "B"}),
            "home": McpServerSpec(
                command=["python3", "/home/me/srv/server.py"],
                binds=[McpBind(source="/run/sandbox-mcp/x", target="/home/me/srv")],
                cache=True,
            ),
        }
    ),
    McpCallAction(server="fs", tool="read", arguments={"path": "/w/a", "n": [1, {"x": None}]}),
]
OBSERVATIONS: list[pydantic.BaseModel] = [
    CmdOutputObservation(command="ls", content="a\nb\n", exit_code=0, cwd="/w"),
    CmdOutputObservation(
        command="sleep 9", content="", exit_code=-1, running=True, note="still running"
    ),
    SetEnvObservation(names=["A", "B"]),
    FileEditObservation(command="str_replace", path="/w/a.py", content="ok", diff="-x\n+y\n"),
    IPythonObservation(code="1/0", content="ZeroDivisionError", images=["a.png"], error=True),
    BrowseObservation(action="noop()", url="about:blank", screenshot="s.png", error=None),
    BrowseObservation(
        action='click("13")',
        task=BrowseTaskState(
            task_id="miniwob.click-test",
            goal="Click the button.",
            goal_images=["goal-1-2.png"],
            reward=1.0,
            done=True,
            message="done",
            best_reward=1.0,
            steps=1,
        ),
    ),
    BrowseTaskScoreObservation(
        task_id="miniwob.click-test", best_reward=1.0, rewards=[0.0, 1.0], done=True, steps=2
    ),
    CheckpointObservation(
        commit="a" * 40, added=["n"], changed=["c"], deleted=["d"], skipped=["big"], seconds=0.01
    ),
    ErrorObservation(error_kind="unavailable", content="No 'browse' here: no Chromium"),
    McpListObservation(
        servers=[
            McpServerState(
                name="fs",
                tools=[
                    McpToolInfo(name="read", description="Read", input_schema={"type": "object"})
                ],
                seconds=0.5,
            ),
            McpServerState(name="web", error="did not start: refused"),
        ],
        content="1 running",
    ),
    McpCallObservation(server="fs", tool="read", content="hi", images=["mcp-001-ab.png"]),
    McpCallObservation(server="fs", tool="x", content="gone", error=True, server_failed="gone"),
]
EVENTS: list[pydantic.BaseModel] = [
    OutputChunk(seq=1, command="ls", data="a\r\nb\x1b[0m\n"),
    CommandFinished(seq=2, command="ls", exit_code=0, cwd="/w"),
]


@pytest.mark.parametrize("action", ACTIONS, ids=lambda a: type(a).__name__)
def test_action_round_trip(action: pydantic.BaseModel) -> None:
    assert parse_action(action.model_dump_json()) == action
    assert parse_action(action.model_dump(mode="json")) == action
    assert type(parse_action(action.model_dump_json().encode())) is type(action)


@pytest.mark.parametrize("observation", OBSERVATIONS, ids=lambda o: type(o).__name__)
def test_observation_round_trip(observation: pydantic.BaseModel) -> None:
    assert parse_observation(observation.model_dump_json()) == observation
    assert parse_observation(observation.model_dump(mode="json")) == observation


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_stream_event_round_trip(event: pydantic.BaseModel) -> None:
    assert parse_stream_event(event.model_dump_json()) == event
    assert parse_stream_event(event.model_dump(mode="json")) == event


def test_server_info_and_file_entry_round_trip() -> None:
    info = ServerInfo(workspace="/w", uptime_s=1.5, rss_mb=30.2, executors={"bash": True}, pid=7)
    assert ServerInfo.model_validate_json(info.model_dump_json()) == info
    entry = FileEntry(path="dir/a.txt", is_dir=False, size=12)
    assert FileEntry.model_validate_json(entry.model_dump_json()) == entry


def test_every_model_is_covered() -> None:
    """A model added to protocol.py must get a round trip here."""
    covered = {type(m) for m in ACTIONS + OBSERVATIONS + EVENTS} | {ServerInfo, FileEntry}
    covered |= {McpServerSpec, McpServerState, McpToolInfo, McpBind}  # inside the ones above
    covered |= {BrowseTaskState}
    defined = {
        obj
        for _, obj in inspect.getmembers(protocol, inspect.isclass)
        if issubclass(obj, pydantic.BaseModel)
        and obj.__module__ == protocol.__name__
        and not obj.__name__.startswith("_")
    }
    assert defined == covered
    assert set(ACTION_TYPES) == {type(a) for a in ACTIONS}


def test_unknown_kind_and_bad_fields_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError, match="teleport"):
        parse_action({"kind": "teleport"})
    with pytest.raises(pydantic.ValidationError, match="command"):
        parse_action({"kind": "run"})
    with pytest.raises(pydantic.ValidationError, match="extra"):
        parse_action({"kind": "run", "command": "ls", "surprise": 1})
    with pytest.raises(pydantic.ValidationError, match="task_id"):
        parse_action({"kind": "browse_task_start", "task_id": "click-test"})  # no benchmark
    with pytest.raises(pydantic.ValidationError, match="view_range"):
        parse_action({"kind": "edit", "command": "view", "path": "/w", "view_range": "1-3"})
    with pytest.raises(pydantic.ValidationError):
        parse_observation('{"kind": "run", "content": "x"')
    with pytest.raises(pydantic.ValidationError, match="exit_code"):
        parse_stream_event({"kind": "finished", "seq": 1, "command": "ls"})


def test_models_are_frozen() -> None:
    action = CmdRunAction(command="ls")
    with pytest.raises(pydantic.ValidationError):
        action.command = "rm -rf /"  # type: ignore[misc]
