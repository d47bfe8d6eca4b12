"""The summary index (`session/index.py`): a listing with it equals one that reads every log,
and each way a log or the index can change makes the listing read the log again (issue 24).

Logs are written by the real `SessionLog`. Where a test must show that one rule alone makes
the log be read again, it first moves the index's reference time an hour ahead (as if the
logs had been written long before), so the racy rule does not already distrust the entry."""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from workbench.cli.sessions import sessions_command
from workbench.events import MessageEvent, StateChangedEvent
from workbench.session.index import INDEX_NAME, MAX_INDEX_BYTES, RACY_NS, list_summaries
from workbench.session.log import SessionLog, make_header
from workbench.session.summaries import scan_summaries

HOUR_NS = 3600 * 10**9


def _write(directory: Path, session_id: str, task: str, end: str | None = "finished") -> Path:
    config = {"llm": {"model": "openai/m", "api_key": "sk-secret-123456"}, "agent": {"n": 1}}
    log = SessionLog.create(directory, make_header(session_id, "/home/me/p", "openai/m", config))
    log.append(StateChangedEvent(id=1, state="running"))
    log.append(MessageEvent(id=2, source="user", text=task))
    log.append(MessageEvent(id=3, source="agent", text="done " + "z" * 300))
    if end:
        log.append(StateChangedEvent(id=4, state=end, reason="because"))  # type: ignore[arg-type]
    log.close()
    return log.path


def _logs(directory: Path) -> dict[str, Path]:
    return {
        "a": _write(directory, "20260101-000000-aaaaaa", "write hi.sh"),
        "b": _write(directory, "20260102-000000-bbbbbb", "fix the flaky test", "error"),
        "c": _write(directory, "20260103-000000-cccccc", "draw a chart", None),
    }


def _continued(directory: Path) -> Path:
    """A session resumed from log a: a's history (events 1-3), then its own task."""
    header = make_header("20260106-000000-a2a2a2", "/home/me/p", "openai/m")
    header = header.model_copy(update={"parent_id": "20260101-000000-aaaaaa", "parent_event": 3})
    log = SessionLog.create(directory, header)
    log.append(StateChangedEvent(id=1, state="running"))
    log.append(MessageEvent(id=2, source="user", text="write hi.sh"))
    log.append(MessageEvent(id=3, source="agent", text="done"))
    log.append(MessageEvent(id=4, source="user", text="now add a test"))
    log.append(StateChangedEvent(id=5, state="finished"))
    log.close()
    return log.path


def _index(directory: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((directory / INDEX_NAME).read_bytes())
    return data


def _save(directory: Path, data: dict[str, Any]) -> None:
    (directory / INDEX_NAME).write_text(json.dumps(data))


def _trust_all(directory: Path) -> dict[str, Any]:
    """Index every log, then move the index's reference an hour ahead: every entry trusted."""
    list_summaries(directory)
    data = _index(directory)
    data["reference_ns"] = time.time_ns() + HOUR_NS
    _save(directory, data)
    return data


def _by_id(directory: Path) -> dict[str, tuple[str, str, str]]:
    return {s.header.session_id: (s.task, s.state, s.damaged) for s in list_summaries(directory)}


def test_listing_equals_reading_every_log_and_a_warm_index_reads_none(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    _continued(tmp_path)
    (tmp_path / "20260104-000000-dddddd.jsonl").write_bytes(b"not a log\n")
    with logs["a"].open("ab") as stream:  # killed mid-line
        stream.write(b'{"kind": "state", "id": 5, "st')
    expected = scan_summaries(tmp_path)
    assert expected[0].own_task == "now add a test"
    assert expected[1].damaged and expected[2].state == "unfinished"
    assert list_summaries(tmp_path) == expected  # no index yet: every log read, index written
    assert (tmp_path / INDEX_NAME).stat().st_mode & 0o777 == 0o600
    # Wait until the newest log is older than the racy window; the next listing trusts them all.
    newest = max(os.stat(path).st_ctime_ns for path in tmp_path.iterdir())
    wait_until(lambda: time.time_ns() > newest + RACY_NS + 10**8, 30, "the racy window to pass")
    assert list_summaries(tmp_path) == expected  # rewritten: its entries were racy
    written = (tmp_path / INDEX_NAME).stat()
    assert list_summaries(tmp_path) == expected  # every entry trusted: nothing read, no write
    again = (tmp_path / INDEX_NAME).stat()
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
    assert set(_index(tmp_path)["entries"]) == {path.name for path in tmp_path.glob("*.jsonl")}


def test_sessions_json_is_the_same_with_and_without_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = Path(os.environ["WORKBENCH_DATA_DIR"]) / "sessions"
    _logs(directory)
    _continued(directory)
    assert sessions_command(["--json"]) == 0
    without = capsys.readouterr().out
    assert (directory / INDEX_NAME).is_file()
    _trust_all(directory)
    assert sessions_command(["--json"]) == 0
    assert capsys.readouterr().out == without
    assert [json.loads(line)["task"] for line in without.splitlines()] == [
        "now add a test",
        "draw a chart",
        "fix the flaky test",
        "write hi.sh",
    ]


def test_an_appended_log_is_read_again(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    _trust_all(tmp_path)
    with logs["c"].open("ab") as stream:
        line = StateChangedEvent(id=9, state="stopped", reason="user").model_dump_json()
        stream.write(line.encode() + b"\n")
    assert _by_id(tmp_path)["20260103-000000-cccccc"][1] == "stopped"


def test_a_truncated_log_is_read_again(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    _trust_all(tmp_path)
    size = logs["a"].stat().st_size
    os.truncate(logs["a"], size - 10)  # its last line cut
    task, state, damaged = _by_id(tmp_path)["20260101-000000-aaaaaa"]
    assert (task, state) == ("write hi.sh", "unfinished")
    assert damaged.startswith("cut mid-line at the end")


def _forge_same_identity(directory: Path, path: Path, reference_ns: int | None) -> None:
    """Make the index's entry for `path` carry the file's current identity (what a same-size
    rewrite within a coarse timestamp's granularity leaves), with its old summary."""
    data = _index(directory)
    info = path.stat()
    entry = data["entries"][path.name]
    entry["id"] = [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
    if reference_ns is not None:
        data["reference_ns"] = reference_ns
    _save(directory, data)


def _rewrite_same_size(path: Path, old: str, new: str) -> None:
    data = path.read_bytes()
    assert len(old) == len(new) and old.encode() in data
    path.write_bytes(data.replace(old.encode(), new.encode()))


def test_a_same_size_rewrite_within_the_racy_window_is_read_again(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    list_summaries(tmp_path)  # the index's reference: now, within 2 s of the logs' writes
    _rewrite_same_size(logs["b"], "fix the flaky test", "FIX THE FLAKY TEST")
    _forge_same_identity(tmp_path, logs["b"], None)
    assert _by_id(tmp_path)["20260102-000000-bbbbbb"][0] == "FIX THE FLAKY TEST"


def test_an_entry_older_than_the_racy_window_is_trusted(tmp_path: Path) -> None:
    """The counterpart: the same forged entry, once the window has passed, is what is listed
    (the index is used, not every log read again)."""
    logs = _logs(tmp_path)
    list_summaries(tmp_path)
    _rewrite_same_size(logs["b"], "fix the flaky test", "FIX THE FLAKY TEST")
    info = logs["b"].stat()
    _forge_same_identity(tmp_path, logs["b"], max(info.st_mtime_ns, info.st_ctime_ns) + RACY_NS)
    assert _by_id(tmp_path)["20260102-000000-bbbbbb"][0] == "fix the flaky test"


def test_a_new_log_is_listed(tmp_path: Path) -> None:
    _logs(tmp_path)
    _trust_all(tmp_path)
    _write(tmp_path, "20260105-000000-eeeeee", "a new one")
    summaries = list_summaries(tmp_path)
    assert [s.task for s in summaries][:2] == ["a new one", "draw a chart"]
    assert "20260105-000000-eeeeee.jsonl" in _index(tmp_path)["entries"]


def test_a_deleted_log_is_dropped_from_the_index(tmp_path: Path) -> None:
    logs = _logs(tmp_path)
    _trust_all(tmp_path)
    logs["b"].unlink()
    assert set(_by_id(tmp_path)) == {"20260101-000000-aaaaaa", "20260103-000000-cccccc"}
    assert set(_index(tmp_path)["entries"]) == {logs["a"].name, logs["c"].name}


def _forged(directory: Path, task: str) -> dict[str, Any]:
    """A trusted index whose entry for log a says `task`."""
    data = _trust_all(directory)
    data["entries"]["20260101-000000-aaaaaa.jsonl"]["task"] = task
    return data


def test_a_garbage_index_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    _logs(tmp_path)
    expected = scan_summaries(tmp_path)
    forged = _forged(tmp_path, "forged")
    entry = forged["entries"]["20260101-000000-aaaaaa.jsonl"]
    garbage: list[bytes | dict[str, Any]] = [
        b"",
        b"\x00\xff garbage",
        b'{"format": "workbench-session-index"',
        b"[1, 2, 3]",
        b"[" * 100_000,  # deeper than json can nest
        {**forged, "entries": [entry]},
        {**forged, "reference_ns": "later"},
        {**forged, "entries": {"20260101-000000-aaaaaa.jsonl": {**entry, "task": 5}}},
        {**forged, "entries": {"20260101-000000-aaaaaa.jsonl": {**entry, "state": "\x1b[2J"}}},
        {**forged, "entries": {"20260101-000000-aaaaaa.jsonl": {**entry, "state": []}}},
        {**forged, "entries": {"20260101-000000-aaaaaa.jsonl": {**entry, "own_task": 1}}},
        {
            **forged,
            "entries": {
                "20260101-000000-aaaaaa.jsonl": {
                    **entry,
                    "header": {**entry["header"], "created": 1e300},
                }
            },
        },
        {**forged, "entries": {"20260101-000000-aaaaaa.jsonl": {**entry, "header": {"x": 1}}}},
        {**forged, "entries": {"20260101-000000-aaaaaa.jsonl": {**entry, "id": None}}},
    ]
    for index in garbage:
        data = index if isinstance(index, bytes) else json.dumps(index).encode()
        (tmp_path / INDEX_NAME).write_bytes(data)
        assert list_summaries(tmp_path) == expected, data[:80]
        assert set(_index(tmp_path)["entries"]) == {s.path.name for s in expected}  # rebuilt


def test_an_oversized_index_is_ignored(tmp_path: Path) -> None:
    _logs(tmp_path)
    text = json.dumps(_forged(tmp_path, "forged"))
    (tmp_path / INDEX_NAME).write_text(text[:-1] + " " * MAX_INDEX_BYTES + "}")
    assert _by_id(tmp_path)["20260101-000000-aaaaaa"][0] == "write hi.sh"
    assert (tmp_path / INDEX_NAME).stat().st_size < 100_000


def test_an_index_of_another_version_is_ignored(tmp_path: Path) -> None:
    _logs(tmp_path)
    forged = _forged(tmp_path, "forged")
    _save(tmp_path, forged)
    assert _by_id(tmp_path)["20260101-000000-aaaaaa"][0] == "forged"  # it is used as it is
    _save(tmp_path, {**forged, "key": "0:another-code"})
    assert _by_id(tmp_path)["20260101-000000-aaaaaa"][0] == "write hi.sh"


def test_what_an_index_says_is_printed_through_the_safe_text_path(
    capsys: pytest.CaptureFixture[str],
) -> None:
    directory = Path(os.environ["WORKBENCH_DATA_DIR"]) / "sessions"
    _logs(directory)
    _save(directory, _forged(directory, "evil\x1b]52;c;aGk=\x07 title\x1b[2J"))
    assert sessions_command([]) == 0
    out = capsys.readouterr().out
    assert "evil title" in out and "\x1b" not in out and "\x07" not in out


def test_two_listings_at_once_leave_a_whole_index(tmp_path: Path) -> None:
    _logs(tmp_path)
    expected = scan_summaries(tmp_path)
    failures: list[str] = []

    def lister() -> None:
        for _ in range(25):
            (tmp_path / INDEX_NAME).unlink(missing_ok=True)  # every listing writes one
            try:
                got = list_summaries(tmp_path)
            except Exception as exc:
                failures.append(repr(exc))
                return
            if got != expected:
                failures.append("a listing differed")

    threads = [threading.Thread(target=lister) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures
    list_summaries(tmp_path)
    assert set(_index(tmp_path)["entries"]) == {s.path.name for s in expected}
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [INDEX_NAME]


def test_a_fifo_named_like_a_log_or_the_index_does_not_block_the_listing(tmp_path: Path) -> None:
    _logs(tmp_path)
    os.mkfifo(tmp_path / "20260109-000000-ffffff.jsonl")
    os.mkfifo(tmp_path / INDEX_NAME)
    listed: list[list[str]] = []

    def listing() -> None:
        listed.append([summary.damaged for summary in list_summaries(tmp_path)])

    thread = threading.Thread(target=listing, daemon=True)
    thread.start()
    thread.join(timeout=20)
    if thread.is_alive():  # blocked in open(): writers let it go, then the test fails
        deadline = time.monotonic() + 20
        while thread.is_alive() and time.monotonic() < deadline:
            for name in ("20260109-000000-ffffff.jsonl", INDEX_NAME):
                with contextlib.suppress(OSError):
                    os.close(os.open(tmp_path / name, os.O_WRONLY | os.O_NONBLOCK))
            thread.join(timeout=0.1)
        pytest.fail("the listing blocked on a FIFO")
    assert listed[0][0] == "cannot read it: not a regular file"
    assert listed[0][1:] == ["", "", ""]


def test_a_killed_listings_temporary_file_is_removed_later(tmp_path: Path) -> None:
    _logs(tmp_path)
    old, fresh = tmp_path / ".index-old.tmp", tmp_path / ".index-fresh.tmp"
    old.write_bytes(b"{")
    fresh.write_bytes(b"{")
    two_hours_ago = time.time_ns() - 2 * HOUR_NS
    os.utime(old, ns=(two_hours_ago, two_hours_ago))
    list_summaries(tmp_path)  # no index yet: it writes one
    assert not old.exists() and fresh.exists()


def test_a_continued_sessions_own_task_comes_from_the_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its title is its own task, after its parent's history: kept in the index, so a listing
    in a new process does not read the whole log again."""
    directory = Path(os.environ["WORKBENCH_DATA_DIR"]) / "sessions"
    _logs(directory)
    _continued(directory)
    data = _trust_all(directory)
    data["entries"]["20260106-000000-a2a2a2.jsonl"]["own_task"] = "from the index"
    _save(directory, data)
    assert sessions_command(["--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rows[0]["task"] == "from the index"


def test_an_unreadable_log_is_listed_and_not_indexed(tmp_path: Path) -> None:
    _logs(tmp_path)
    (tmp_path / "20260107-000000-gggggg.jsonl").mkdir()  # a folder named like a log
    _trust_all(tmp_path)
    written = (tmp_path / INDEX_NAME).stat()
    summaries = list_summaries(tmp_path)
    assert summaries[0].damaged.startswith("cannot read it: ")
    assert summaries == scan_summaries(tmp_path)
    assert "20260107-000000-gggggg.jsonl" not in _index(tmp_path)["entries"]
    again = (tmp_path / INDEX_NAME).stat()  # read again each time, but no index written for it
    assert (again.st_ino, again.st_mtime_ns) == (written.st_ino, written.st_mtime_ns)
