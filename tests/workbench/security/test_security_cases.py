"""Acceptance 1, 2 and 3 of the analyzer, through the real headless run: dangerous actions the
scripted model calls LOW are all rejected under the default policy (`--on-confirm reject`),
each with its reason, and none runs (marker files, decoys unchanged); everyday actions all run
without asking; `workbench policy check` says the same of every one of them."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from headless_harness import finish, make_config
from security_cases import DANGEROUS, EVERYDAY, Case, placeholders

from workbench.cli.policy import check_call
from workbench.events import (
    ActionEvent,
    ConfirmationDecisionEvent,
    ConfirmationRequestEvent,
    ObservationEvent,
)
from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer


def test_the_sets_are_large_and_cover_every_tool() -> None:
    assert len(DANGEROUS) >= 80 and len(EVERYDAY) >= 80
    tools = {"execute_bash", "execute_ipython_cell", "str_replace_editor", "browser"}
    assert {case.tool for case in DANGEROUS} == tools
    assert all(case.why for case in DANGEROUS)


def _workspace(ws: Path) -> None:
    ws.mkdir()
    (ws / "app.py").write_text("print('hello')\n")
    (ws / "test_app.py").write_text("def test_one():\n    assert 1 + 1 == 2\n")
    (ws / "data.txt").write_text("line one\nline two\nline one\n")
    (ws / "notes.md").write_text("hello notes\n")
    (ws / "config.json").write_text('{"a": 1}\n')
    (ws / "run.sh").write_text("echo running\n")
    (ws / "key.pub").write_text("ssh-ed25519 AAAA decoy\n")
    (ws / "sub").mkdir()
    (ws / "build").mkdir()
    (ws / "build" / "keep.o").write_text("")
    (ws / "a.tmp").write_text("")
    subprocess.run(["tar", "-cf", "data.tar", "data.txt"], cwd=ws, check=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    subprocess.run(["git", "add", "."], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=ws, check=True)
    subprocess.run(["git", "config", "user.name", "t"], cwd=ws, check=True)
    subprocess.run(["git", "config", "user.email", "t@t"], cwd=ws, check=True)


def _decoy(decoy: Path) -> None:
    (decoy / "tree" / "sub").mkdir(parents=True)
    (decoy / "tree" / "a.txt").write_text("decoy a\n")
    (decoy / "tree" / "sub" / "b.txt").write_text("decoy b\n")
    (decoy / "victim.txt").write_text("decoy\n")
    (decoy / "empty").mkdir()
    (decoy / "home" / ".ssh").mkdir(parents=True)
    (decoy / "cronfile").write_text("* * * * * touch /nonexistent\n")


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every path under `root` with its mode and content (a decoy must not change)."""
    found = {}
    for path in sorted(root.rglob("*")):
        data = path.read_bytes() if path.is_file() and not path.is_symlink() else b""
        found[str(path.relative_to(root))] = (path.lstat().st_mode, data)
    return found


@pytest.fixture
def shm() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="wb-decoy-", dir="/dev/shm"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _call(case: Case, where: dict[str, str], call_id: str, marker: Path) -> dict[str, Any]:
    args = case.arguments(where)
    if case.tool == "execute_bash":
        args["command"] = f"touch {marker}; {args['command']}"
        # A hard limit, not the idle one: on a loaded machine a slow command (`pip list`)
        # would still run when the next call comes, and that one is refused as busy.
        args["timeout"] = 300
    elif case.tool == "execute_ipython_cell" and not args["code"].startswith("%%"):
        args["code"] = f"open({str(marker)!r}, 'w').close()\n{args['code']}"
    return {"id": call_id, "name": case.tool, "arguments": {**args, "security_risk": "LOW"}}


async def test_dangerous_actions_are_rejected_with_reasons_and_everyday_ones_run(
    tmp_path: Path, shm: Path
) -> None:
    ws, decoy = tmp_path / "ws", tmp_path / "decoy"
    _workspace(ws)
    _decoy(decoy)
    where = placeholders(str(ws), str(decoy), str(shm), sys.executable)
    before = _snapshot(decoy), (ws / ".git" / "config").read_text()
    dangerous = [_call(c, where, f"d{i}", ws / f"ran-{i}") for i, c in enumerate(DANGEROUS)]
    everyday = [_call(c, where, f"e{i}", ws / f"ok-{i}") for i, c in enumerate(EVERYDAY)]
    script = [{"tool_calls": dangerous}, {"tool_calls": everyday}, finish()]
    out, err = io.StringIO(), io.StringIO()
    async with ScriptedLLMServer(script) as server:
        config = make_config(
            tmp_path,
            server.base_url,
            ws,
            agent__enable_jupyter=True,
            agent__enable_browser=True,
            security__headless_on_confirm="reject",
        )
        assert config.security.confirmation == "risky"
        assert config.security.risk_threshold == "HIGH"
        # What `workbench policy check` says of each call, before the run does it.
        verdicts = {
            call["id"]: check_call(config, call["name"], dict(call["arguments"]))
            for call in [*dangerous, *everyday]
        }
        summary = await run_session(config, "go", HumanPrinter(out, err))
    assert summary["status"] == "success", out.getvalue() + err.getvalue()

    events = read(Path(summary["log"])).events
    actions = {e.tool_call_id: e for e in events if isinstance(e, ActionEvent)}
    asked = {e.cause: e for e in events if isinstance(e, ConfirmationRequestEvent)}
    answered = {e.cause: e for e in events if isinstance(e, ConfirmationDecisionEvent)}
    observed = {e.cause for e in events if isinstance(e, ObservationEvent)}

    # Dangerous: every one asked about at HIGH with its reason, rejected, and nothing ran.
    for i, case in enumerate(DANGEROUS):
        action = actions[f"d{i}"]
        request = asked.get(action.id)
        assert request is not None, f"ran without asking: {case.template}"
        assert request.risk == "HIGH", (case.template, request.reason)
        assert case.why.lower() in request.reason.lower(), (case.template, request.reason)
        assert not answered[action.id].approved
        assert not (ws / f"ran-{i}").exists(), case.template
    assert not (ws / "ran-bash-cell").exists()
    assert (_snapshot(decoy), (ws / ".git" / "config").read_text()) == before
    assert _snapshot(shm) == {}
    hooks = _snapshot(ws / ".git" / "hooks")
    assert [name for name in hooks if not name.endswith(".sample")] == []
    assert not (ws / ".workbench").exists() and not (ws / ".gitmodules").exists()
    assert not (ws / ".git" / "info" / "attributes").exists()
    assert (ws / "build" / "keep.o").exists()

    # Everyday: none asked about, every one ran.
    for i, case in enumerate(EVERYDAY):
        action = actions[f"e{i}"]
        assert action.id not in asked, (case.template, asked[action.id].reason)
        assert action.id in observed, case.template
        if case.tool in ("execute_bash", "execute_ipython_cell"):
            assert (ws / f"ok-{i}").exists(), case.template
    assert (ws / "result.txt").read_text() == "done\nmore\n"
    assert (ws / "cell.txt").exists() and (ws / "new_module.py").exists()
    assert "hello there" in (ws / "app.py").read_text()
    assert not (ws / "a.tmp").exists()

    # `policy check` agrees with the run on every call: its risk, and ask (rejected) or run.
    for call_id, verdict in verdicts.items():
        action = actions[call_id]
        if action.id in asked:
            assert (verdict.decision, verdict.headless) == ("ask", "reject"), call_id
            assert verdict.risk == asked[action.id].risk, call_id
            assert "; ".join(verdict.reasons) in asked[action.id].reason, call_id
        else:
            assert verdict.decision == "run" and action.id in observed, call_id
