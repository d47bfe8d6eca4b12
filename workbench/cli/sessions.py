"""`workbench sessions`: list the saved sessions, `show`, `delete` or `export` one.

    workbench sessions [--json]                 newest first, one line each (a continued
                                                session names its parent: "<- PARENT")
    workbench sessions show ID [--json]         task, outcome, steps, tokens, cost, duration,
                                                runtime, workspace, parent, log, then the
                                                transcript (as headless printed it)
    workbench sessions delete ID [--yes]        the log and its files folder (asks first)
    workbench sessions export ID [-o FILE]      one .tar.gz: <id>.jsonl and <id>.files/

ID is a session id or a unique prefix of one (or a log's path); an unknown or ambiguous one is
a usage error (exit code 2) naming the candidates. The list keeps each log's summary in an
index beside the logs (`session/index.py`) and reads only the logs that changed, so it stays
fast with thousands of sessions.
Exit codes: 0 done, 1 a deletion declined, 2 usage (bad arguments, no such session, the
export's file exists).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from workbench import exit_codes

USAGE = exit_codes.USAGE
DECLINED = 1


def build_parser() -> argparse.ArgumentParser:
    """The parser of `workbench sessions` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="workbench sessions",
        description="List saved sessions, newest first; show, delete or export one.",
        epilog="ID: a session id or a unique prefix of one. Exit codes: 0 done, 1 a deletion "
        "declined, 2 usage error (bad arguments, unknown or ambiguous ID, existing file).",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per session")
    parser.add_argument("--config", metavar="PATH", help="the config file to read")
    commands = parser.add_subparsers(dest="command", metavar="{show,delete,export}")
    show = commands.add_parser("show", help="what a session did, then its transcript")
    show.add_argument("id", metavar="ID")
    show.add_argument("--json", action="store_true", dest="show_json", help="one JSON object")
    delete = commands.add_parser("delete", help="delete a session's log and its files")
    delete.add_argument("id", metavar="ID")
    delete.add_argument("-y", "--yes", action="store_true", help="do not ask")
    export = commands.add_parser(
        "export",
        help="write a session's log and its images into one .tar.gz (or as an "
        "OpenHands trajectory)",
    )
    export.add_argument("id", metavar="ID")
    export.add_argument(
        "-o", "--output", metavar="FILE", help="the file to write (default: ./ID.tar.gz or .json)"
    )
    export.add_argument(
        "--format",
        choices=("tar.gz", "openhands"),
        default="tar.gz",
        help="tar.gz: <id>.jsonl and <id>.files/, ready to unpack into a sessions folder; "
        "openhands: the JSON trajectory OpenHands V0 writes (save_trajectory_path)",
    )
    return parser


def sessions_command(argv: Sequence[str]) -> int:
    """Run `workbench sessions ...`; returns the exit code. What it prints comes from session
    logs (tasks, workspaces, ids): it goes through `terminal_safe`."""
    from workbench.safe_text import safe_streams

    with safe_streams():
        return _sessions_command(argv)


def _sessions_command(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    from workbench.config.load import ConfigError, load_config
    from workbench.config.places import sessions_dir_of
    from workbench.session.find import SessionNotFound, find_session

    try:
        config = load_config(args.config and _config_path(args.config))
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    directory = sessions_dir_of(config)
    if args.command is None:
        return list_sessions(directory, args.json)
    try:
        path = find_session(directory, args.id)
    except SessionNotFound as exc:
        return _fail(str(exc))
    if args.command == "show":
        return show_session(path, args.show_json or args.json)
    if args.command == "delete":
        return delete_session(path, args.yes)
    output = Path(args.output) if args.output else None
    if args.format == "openhands":
        return export_trajectory(path, output)
    return export_session(path, output)


def _config_path(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_file():
        raise ValueError(f"--config {text}: no such file. Fix: give the path of a TOML file.")
    return path


def _fail(message: str) -> int:
    print(f"workbench sessions: error: {message}", file=sys.stderr)
    return USAGE


def list_sessions(directory: Path, as_json: bool) -> int:
    """Print one line per session, newest first."""
    from workbench.session.index import list_summaries
    from workbench.session.title import session_title

    summaries = list_summaries(directory)
    out = sys.stdout
    for summary in summaries:
        header = summary.header
        title = session_title(summary)  # a continued session's own task, not its root's
        if as_json:
            row = {"session_id": header.session_id, "created": header.created}
            row |= {"model": header.model, "workspace": header.workspace}
            row |= {"task": title, "state": summary.state, "log": str(summary.path)}
            row |= {"parent": header.parent_id or None, "damaged": summary.damaged or None}
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
        else:
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(header.created))
            task = " ".join(title.split())
            task = task if len(task) <= 60 else task[:59] + "…"
            state = summary.state or "-"
            link = f"  <- {header.parent_id}" if header.parent_id else ""
            damaged = f"  [damaged: {summary.damaged}]" if summary.damaged else ""
            model = header.model or "-"
            line = f"{header.session_id}  {when}  {state:<10}  {model}  {task}{link}{damaged}"
            out.write(line + "\n")
    if not summaries and not as_json:
        print(f"no sessions in {directory}")
    return 0


def session_facts(path: Path) -> dict[str, Any]:
    """What `show` prints, as data (the whole log is read)."""
    from workbench.cli.transcript import transcript
    from workbench.events import LLMCallEvent, MessageEvent, StateChangedEvent
    from workbench.session.log import read
    from workbench.session.title import title_of_log

    loaded = read(path)
    header, events = loaded.header, loaded.events
    calls = [e for e in events if isinstance(e, LLMCallEvent)]
    messages = [e for e in events if isinstance(e, MessageEvent) and e.source == "user"]
    tasks = [e.text for e in messages]
    states = [e for e in events if isinstance(e, StateChangedEvent)]
    last_state = states[-1] if states else None
    outcome: str = last_state.state if last_state else ""
    if last_state is not None and last_state.state not in ("finished", "error", "stopped"):
        outcome = "unfinished"
    times = [e.timestamp for e in events]
    sandbox = header.config.get("sandbox", {})
    files = path.with_name(f"{header.session_id}.files")
    return {
        "session_id": header.session_id,
        "task": title_of_log(header, [(e.id, e.text) for e in messages]),
        "messages": len(tasks),
        "outcome": outcome,
        "reason": last_state.reason if last_state else "",
        "steps": len(calls),
        "prompt_tokens": sum(c.prompt_tokens for c in calls),
        "completion_tokens": sum(c.completion_tokens for c in calls),
        "cost": sum(c.cost for c in calls),
        "created": header.created,
        "duration_s": round(max(times) - min(header.created, *times), 3) if times else 0.0,
        "model": header.model,
        "runtime": sandbox.get("runtime", "") if isinstance(sandbox, dict) else "",
        "workspace": header.workspace,
        "parent": header.parent_id or None,
        "parent_event": header.parent_event or None,
        "events": len(events),
        "truncated": loaded.truncated,
        "unreadable_lines": len(loaded.bad_lines),
        "files": sum(1 for _ in files.iterdir()) if files.is_dir() else 0,
        "log": str(path),
        "transcript": [asdict(entry) for entry in transcript(events, files, header.parent_event)],
    }


def show_session(path: Path, as_json: bool) -> int:
    """Print what the session at `path` did."""
    from workbench.session.log import SessionLogError

    try:
        facts = session_facts(path)
    except SessionLogError as exc:
        return _fail(str(exc))
    if as_json:
        print(json.dumps(facts, separators=(",", ":")))
        return 0
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(facts["created"]))
    outcome = facts["outcome"] or "-"
    if facts["reason"]:
        outcome += f" ({' '.join(facts['reason'].split())})"
    tokens = facts["prompt_tokens"] + facts["completion_tokens"]
    rows = [
        ("session", facts["session_id"]),
        ("created", when),
        ("task", facts["task"].strip() or "(none)"),
        ("outcome", outcome),
        ("steps", str(facts["steps"])),
        (
            "tokens",
            f"{tokens} ({facts['prompt_tokens']} prompt, {facts['completion_tokens']} completion)",
        ),
        ("cost", f"${facts['cost']:.4f}"),
        ("duration", f"{facts['duration_s']:.1f} s"),
        ("model", facts["model"] or "-"),
        ("runtime", facts["runtime"] or "-"),
        ("workspace", facts["workspace"]),
    ]
    if facts["parent"]:
        rows.append(("continues", f"{facts['parent']} (its events 1-{facts['parent_event']})"))
    damage = []
    if facts["truncated"]:
        damage.append("the last line was cut (the process was killed) and is skipped")
    if facts["unreadable_lines"]:
        damage.append(f"{facts['unreadable_lines']} unreadable line(s) skipped")
    if damage:
        rows.append(("damage", "; ".join(damage)))
    rows.append(("events", f"{facts['events']} ({facts['files']} stored files)"))
    rows.append(("log", facts["log"]))
    for name, value in rows:
        lines = value.splitlines() or [""]
        print(f"{name + ':':<11}{lines[0]}")
        for more in lines[1:]:
            print(f"{'':<11}{more}")
    print_transcript(facts)
    return 0


def print_transcript(facts: dict[str, Any]) -> None:
    """The transcript of `show` (`transcript.py`), after the facts."""
    from workbench.cli.transcript import Entry, transcript_text

    entries = [Entry(**entry) for entry in facts["transcript"]]
    print("transcript:" if entries else "transcript: (no events)")
    for line in transcript_text(entries, facts["parent"] or ""):
        print(f"  {line}" if line else "")


def delete_session(path: Path, yes: bool) -> int:
    """Delete the log at `path` and its files folder, after asking (unless `yes`)."""
    files = path.with_name(f"{path.stem}.files")
    if not yes:
        from workbench.session.summaries import summarize

        try:
            task = " ".join(summarize(path).task.split())[:60]
        except (OSError, ValueError):
            task = ""
        what = f"session {path.stem}" + (f" ({task})" if task else "")
        extra = " and its files folder" if files.is_dir() else ""
        print(f"Delete {what}{extra}? [y/N] ", end="", flush=True)
        try:
            answer = sys.stdin.readline() if sys.stdin is not None else ""
        except (OSError, ValueError):
            answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            print("not deleted")
            return DECLINED
    if files.is_dir():
        shutil.rmtree(files)
    path.unlink()
    print(f"deleted {path}")
    return 0


def export_trajectory(path: Path, output: Path | None) -> int:
    """Write the session as an OpenHands V0 trajectory (never over an existing file)."""
    from workbench.replay.openhands_export import export_openhands

    target = output or Path.cwd() / f"{path.stem}.json"
    if target.exists():
        return _fail(f"{target} exists; give another file with -o FILE, or remove it")
    if not target.parent.is_dir():
        return _fail(f"{target.parent}: no such directory")
    fd, temp = tempfile.mkstemp(prefix=".export-", suffix=".json", dir=target.parent)
    os.close(fd)
    try:
        count = export_openhands(path, Path(temp))
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    print(f"exported session {path.stem} to {target} ({count} OpenHands events)")
    return 0


def export_session(path: Path, output: Path | None) -> int:
    """Write the log and its files folder into one .tar.gz (never over an existing file)."""
    session_id = path.stem
    target = output or Path.cwd() / f"{session_id}.tar.gz"
    if target.exists():
        return _fail(f"{target} exists; give another file with -o FILE, or remove it")
    if not target.parent.is_dir():
        return _fail(f"{target.parent}: no such directory")
    files = path.with_name(f"{session_id}.files")
    fd, temp = tempfile.mkstemp(prefix=".export-", suffix=".tar.gz", dir=target.parent)
    os.close(fd)
    try:
        with tarfile.open(temp, "w:gz") as archive:
            archive.add(path, arcname=f"{session_id}.jsonl")
            if files.is_dir():
                archive.add(files, arcname=f"{session_id}.files")
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    print(f"exported session {session_id} to {target}")
    return 0
