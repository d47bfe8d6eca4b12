"""The session log: header + one event per line, crash-tolerant reading, secrets scrubbed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.protocol import CmdOutputObservation, CmdRunAction
from workbench.events import ActionEvent, Event, MessageEvent, ObservationEvent, StateChangedEvent
from workbench.session.index import list_summaries
from workbench.session.log import (
    SessionHeader,
    SessionLog,
    SessionLogError,
    load,
    make_header,
    new_session_id,
    read,
    redact,
)
from workbench.session.summaries import summarize

SECRET = "sk-test-SECRET-123456"


def _header(session_id: str | None = None) -> SessionHeader:
    return make_header(
        session_id or new_session_id(),
        "/work/space",
        "openai/test-model",
        {"llm": {"model": "openai/test-model", "api_key": SECRET}, "agent": {"n": 1}},
    )


def _events() -> list[Event]:
    action = CmdRunAction(command="echo hi")
    return [
        MessageEvent(id=1, source="user", text="say hi"),
        ActionEvent(id=2, tool_name="execute_bash", tool_call_id="c1", action=action),
        ObservationEvent(
            id=3,
            cause=2,
            tool_call_id="c1",
            observation=CmdOutputObservation(command="echo hi", content="hi\n", exit_code=0),
        ),
        StateChangedEvent(id=4, state="finished", reason="success"),
    ]


def test_round_trip_and_layout(tmp_path: Path) -> None:
    header, written = _header(), _events()
    with SessionLog.create(tmp_path, header) as log:
        for event in written:
            log.append(event)
    assert log.path == tmp_path / f"{header.session_id}.jsonl"
    lines = log.path.read_text().splitlines()
    assert len(lines) == 5
    first = json.loads(lines[0])
    assert first["kind"] == "header" and first["schema_version"] == 1
    assert first["model"] == "openai/test-model" and first["workspace"] == "/work/space"
    assert first["config"]["llm"]["api_key"] == "***"
    assert len(first["config_digest"]) == 16
    loaded_header, events = load(log.path)
    assert loaded_header == header
    assert events == written
    assert oct(log.path.stat().st_mode & 0o777) == "0o600"


def test_session_ids_sort_by_time_and_are_unique() -> None:
    early, late = new_session_id(1_700_000_000), new_session_id(1_700_000_001)
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", early)
    assert early < late
    assert len({new_session_id(1_700_000_000) for _ in range(50)}) == 50


def test_create_refuses_to_overwrite(tmp_path: Path) -> None:
    header = _header("20260101-000000-aaaaaa")
    SessionLog.create(tmp_path, header).close()
    with pytest.raises(FileExistsError):
        SessionLog.create(tmp_path, header)


def test_secret_values_are_scrubbed_from_every_line(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, _header(), secrets=[SECRET, "x"])
    log.append(MessageEvent(id=1, source="user", text=f"my key is {SECRET}, do not tell"))
    log.append(MessageEvent(id=2, source="agent", text=f'quoted "{SECRET}" and x marks'))
    log.close()
    text = log.path.read_text()
    assert SECRET not in text
    assert "my key is ***, do not tell" in text
    assert "x marks" in text  # a too-short "secret" is not scrubbed everywhere


def test_redact_masks_secret_looking_keys() -> None:
    data = {
        "llm": {"api_key": "abc", "model": "m", "max_output_tokens": 4096},
        "remote": {"token": "t", "x-api-key": "k", "apiKey": "k2"},
        "budget": {"max_tokens": 1000},
        "list": [{"password": "p", "keep_alive": True}],
    }
    assert redact(data) == {
        "llm": {"api_key": "***", "model": "m", "max_output_tokens": 4096},
        "remote": {"token": "***", "x-api-key": "***", "apiKey": "***"},
        "budget": {"max_tokens": 1000},  # counts of tokens are no secret
        "list": [{"password": "***", "keep_alive": True}],
    }


def test_truncated_last_line_is_skipped_and_flagged(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, _header())
    for event in _events()[:3]:
        log.append(event)
    log.close()
    with log.path.open("a") as stream:
        stream.write('{"kind": "message", "id": 4, "source": "us')  # killed mid-line
    loaded = read(log.path)
    assert loaded.truncated
    assert [e.id for e in loaded.events] == [1, 2, 3]
    assert loaded.bad_lines == []


def test_garbage_line_in_the_middle_is_reported_not_fatal(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, _header())
    log.append(MessageEvent(id=1, source="user", text="a"))
    with log.path.open("a") as other:
        other.write("not json\n")
    log.append(MessageEvent(id=2, source="user", text="b"))
    log.close()
    loaded = read(log.path)
    assert [e.id for e in loaded.events] == [1, 2]
    assert loaded.bad_lines and loaded.bad_lines[0][0] == 3
    assert not loaded.truncated


def test_not_a_session_log(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"hello": 1}\n')
    with pytest.raises(SessionLogError, match="not a session header"):
        read(bad)
    with pytest.raises(SessionLogError, match="cannot read"):
        read(tmp_path / "missing.jsonl")


def test_payloads_live_beside_the_log(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, _header())
    name = log.write_payload("../../shot.png", b"\x89PNG")
    assert name == "shot.png"
    assert (tmp_path / f"{log.session_id}.files" / "shot.png").read_bytes() == b"\x89PNG"
    log.close()


def test_list_summaries_newest_first_with_task_and_end(tmp_path: Path) -> None:
    for stamp in ("20260101-000000-aaaaaa", "20260102-000000-bbbbbb"):
        SessionLog.create(tmp_path, _header(stamp)).close()
    summaries = list_summaries(tmp_path)
    assert [s.header.session_id for s in summaries] == [
        "20260102-000000-bbbbbb",
        "20260101-000000-aaaaaa",
    ]
    assert (summaries[0].task, summaries[0].state, summaries[0].damaged) == ("", "", "")


def _good_lines() -> list[bytes]:
    header = _header("20260101-000000-000000").model_dump_json().encode()
    events = [event.model_dump_json().encode() for event in _events()]
    return [header, *events]


def test_damaged_logs_are_listed_with_why(tmp_path: Path) -> None:
    header, task, action, observation, end = _good_lines()
    damaged = {
        "empty": (b"", "empty file: no header"),
        "cut-header": (header[:40], "cut in its first line: no complete header"),
        "not-json": (b"hello there\n" + task + b"\n", "line 1 is not a JSON object: no header"),
        "not-utf8": (b"\xff\xfe\x00junk\n", "line 1 is not UTF-8 text: no header"),
        "no-header": (task + b"\n" + end + b"\n", "line 1 is not a session header"),
        "cut-end": (
            b"\n".join([header, task, action]) + b"\n" + observation[:30],
            "cut mid-line at the end (its complete lines are listed)",
        ),
        "bad-middle": (
            b"\n".join([header, task, b"{garbage", action, b"[1, 2]", end]) + b"\n",
            "line 3 is not a JSON object; line 5 is not a JSON object",
        ),
        "binary": (b"\x00\x01\x02" * 100, "cut in its first line: no complete header"),
    }
    for name, (data, _) in damaged.items():
        (tmp_path / f"{name}.jsonl").write_bytes(data)
    (tmp_path / "unreadable.jsonl").mkdir()  # a folder named like a log
    summaries = {summary.path.stem: summary for summary in list_summaries(tmp_path)}
    assert set(summaries) == {*damaged, "unreadable"}  # every file is listed
    for name, (_, why) in damaged.items():
        assert summaries[name].damaged.startswith(why), (name, summaries[name].damaged)
    assert summaries["unreadable"].damaged.startswith("cannot read it: ")
    # Without a header, a log is listed under its file name; with one, as usual.
    assert summaries["no-header"].header.session_id == "no-header"
    assert summaries["no-header"].state == "finished"
    cut = summaries["cut-end"]
    assert (cut.header.session_id, cut.task, cut.state) == ("20260101-000000-000000", "say hi", "")
    middle = summaries["bad-middle"]
    assert (middle.task, middle.state) == ("say hi", "finished")


def test_bad_lines_near_the_end_of_a_long_log_are_seen(tmp_path: Path) -> None:
    header, task, *_ = _good_lines()
    filler = MessageEvent(id=2, source="agent", text="z" * 2000).model_dump_json().encode()
    lines = [header, task, *[filler] * 100, b"not json", filler]
    path = tmp_path / "long.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    summary = summarize(path, head_lines=8, tail_bytes=16_384)
    assert summary.damaged == "a line near the end is not a JSON object"
    assert summary.task == "say hi"


def test_summary_reads_the_first_task_and_the_last_state_only(tmp_path: Path) -> None:
    log = SessionLog.create(tmp_path, _header())
    log.append(StateChangedEvent(id=1, state="running"))
    log.append(MessageEvent(id=2, source="agent", text="not the task"))
    log.append(MessageEvent(id=3, source="user", text="fix the tests"))
    for i in range(4, 40):  # more than the tail read holds
        log.append(MessageEvent(id=i, source="agent", text="z" * 4000))
    log.append(StateChangedEvent(id=40, state="stopped", reason="user pressed stop"))
    log.close()
    summary = summarize(log.path, tail_bytes=8192)
    assert (summary.task, summary.state) == ("fix the tests", "stopped")
    with log.path.open("a") as stream:  # resumed, then killed mid-line
        stream.write(StateChangedEvent(id=41, state="running").model_dump_json() + "\n")
        stream.write('{"kind": "state", "id": 42, "st')
    assert summarize(log.path).state == "unfinished"


_WRITER = """
import sys, time
from pathlib import Path
from workbench.events import MessageEvent
from workbench.session.log import SessionLog, make_header
log = SessionLog.create(Path(sys.argv[1]), make_header("20260101-000000-cccccc", "/w", "m"))
i = 0
while True:
    i += 1
    log.append(MessageEvent(id=i, source="agent", text="y" * 5000))
    if i == 20:
        print("ready", flush=True)
"""


def test_log_survives_sigkill_mid_write(tmp_path: Path) -> None:
    """A writer killed with SIGKILL while appending leaves a log that loads to its last line."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)  # it keeps appending: the kill lands in some write
    proc.wait()
    loaded = read(tmp_path / "20260101-000000-cccccc.jsonl")
    assert len(loaded.events) >= 20
    assert [e.id for e in loaded.events] == list(range(1, len(loaded.events) + 1))
    assert loaded.bad_lines == []
