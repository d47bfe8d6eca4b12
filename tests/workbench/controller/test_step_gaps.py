"""Steps taken after checkpoints stopped (a full disk) have no checkpoint: `rewind --to N` and
`diff --step N` refuse them, saying from which step and why, rather than using the last
checkpoint before (which would undo what those steps did). Real headless CLI, real local
sandbox, a real small tmpfs as the data folder."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from headless_harness import cli_env, json_lines, run_cli

from workbench.testing.llm_server import ScriptedLLMServer


def _bash(command: str) -> dict[str, object]:
    call = {"name": "execute_bash", "arguments": {"command": command, "security_risk": "LOW"}}
    return {"tool_calls": [call]}


def test_steps_after_checkpoints_stopped_are_refused_not_rewound_to_an_older_one(
    tmp_path: Path, small_disk: Callable[..., Path]
) -> None:
    data = small_disk("data", 256 * 1024)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = [
        _bash("echo a > a.txt"),  # step 1: checkpointed
        _bash("head -c 600000 /dev/urandom > big.bin"),  # step 2: its checkpoint does not fit
        _bash("echo c > c.txt"),  # step 3: checkpoints are off
        {"tool_calls": [{"name": "finish", "arguments": {"message": "done"}}]},
    ]
    with ScriptedLLMServer(script) as server:
        env = cli_env(tmp_path, server.base_url, WORKBENCH_DATA_DIR=str(data))
        proc = run_cli(["--headless", "--json", "-t", "go"], env, cwd=workspace, timeout=180)
    assert proc.returncode == 0, proc.stderr
    session = json_lines(proc.stdout)[-1]["session_id"]
    before = sorted(p.name for p in workspace.iterdir())
    assert before == ["a.txt", "big.bin", "c.txt"]

    for command in (("rewind", session, "--to", "3", "--yes"), ("diff", session, "--step", "2")):
        refused = run_cli(list(command), env, cwd=workspace, timeout=60)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "has no checkpoint: checkpoints stopped after step 1" in refused.stderr
        assert "steps 2 to 4 are not known" in refused.stderr
        assert sorted(p.name for p in workspace.iterdir()) == before  # nothing was undone
    shown = run_cli(["diff", session, "--step", "1"], env, cwd=workspace, timeout=60)
    assert shown.returncode == 0 and "+a" in shown.stdout, shown.stderr
