"""Project instructions: AGENTS.md and .openhands/microagents/repo.md reach the system prompt of
the first request; missing, huge, binary, invalid UTF-8 and symlinked-away files are handled."""

from __future__ import annotations

import os
from pathlib import Path

from tests.workbench.headless_harness import bash, cli_env, finish, json_lines, run_cli
from workbench.agent.instructions import load_instructions
from workbench.config.schema import InstructionsConfig
from workbench.testing.llm_server import ScriptedLLMServer

RULE = "Always run the tests with `make check` (agents-marker-51c2)."


def _headless(tmp_path: Path, workspace: Path, **env: str) -> tuple[list[dict], list[dict]]:
    with ScriptedLLMServer([bash("echo hi"), finish()]) as server:
        extra = {"WORKBENCH_CHECKPOINTS_ENABLED": "false", **env}
        done = run_cli(
            ["--headless", "--json", "-t", "say hi"],
            cli_env(tmp_path, server.base_url, **extra),
            workspace,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        return json_lines(done.stdout), list(server.requests)


def _system(request: dict) -> str:
    message = request["messages"][0]
    assert message["role"] == "system"
    return str(message["content"])


def test_agents_md_reaches_the_first_request(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".openhands" / "microagents").mkdir(parents=True)
    (workspace / "AGENTS.md").write_text(f"# Conventions\n{RULE}\n")
    (workspace / ".openhands/microagents/repo.md").write_text("Use tabs (repo-marker-9d1e).\n")
    lines, requests = _headless(tmp_path, workspace)
    system = _system(requests[0])
    assert RULE in system and "repo-marker-9d1e" in system
    assert system.index(RULE) < system.index("repo-marker-9d1e")
    said = [line["event"] for line in lines if line.get("type") == "event"]
    read = [event for event in said if event["kind"] == "instructions"]
    assert read and read[0]["files"] == ["AGENTS.md", ".openhands/microagents/repo.md"]
    # The same session with the key off: nothing read, nothing said.
    lines, requests = _headless(tmp_path, workspace, WORKBENCH_INSTRUCTIONS_ENABLED="false")
    assert RULE not in _system(requests[0])
    assert not any(line.get("event", {}).get("kind") == "instructions" for line in lines)


def test_missing_agents_md_changes_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    lines, requests = _headless(tmp_path, workspace)
    assert "Project instructions" not in _system(requests[0])
    assert not any(line.get("event", {}).get("kind") == "instructions" for line in lines)


def test_huge_agents_md_is_cut_with_a_note(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text(RULE + "\n" + "filler line é\n" * 2_000_000)  # ~30 MB
    lines, requests = _headless(tmp_path, workspace, WORKBENCH_INSTRUCTIONS_MAX_CHARS="5000")
    system = _system(requests[0])
    assert RULE in system and "instructions cut here" in system
    assert len(system) < 12_000
    read = [line["event"] for line in lines if line.get("event", {}).get("kind") == "instructions"]
    assert "cut at the 5000-character limit" in " ".join(read[0]["notes"])


def test_a_symlink_out_of_the_workspace_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "home" / ".ssh" / "id_rsa"
    secret.parent.mkdir(parents=True)
    secret.write_text("-----BEGIN OPENSSH PRIVATE KEY----- secret-marker-0b7e\n")
    workspace = tmp_path / "ws"
    (workspace / ".openhands" / "microagents").mkdir(parents=True)
    (workspace / "AGENTS.md").symlink_to(secret)
    (workspace / "docs").mkdir()
    (workspace / "docs" / "rules.md").write_text(RULE)  # a link inside is fine
    (workspace / ".openhands/microagents/repo.md").symlink_to(workspace / "docs" / "rules.md")
    lines, requests = _headless(tmp_path, workspace)
    assert not any("secret-marker-0b7e" in str(request) for request in requests)
    assert RULE in _system(requests[0])
    read = [line["event"] for line in lines if line.get("event", {}).get("kind") == "instructions"]
    assert read[0]["files"] == [".openhands/microagents/repo.md"]
    assert "AGENTS.md was not read: it points outside the workspace" in read[0]["notes"]


def test_a_directory_symlinked_out_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "microagents"
    outside.mkdir(parents=True)
    (outside / "repo.md").write_text("secret-marker-44aa")
    workspace = tmp_path / "ws"
    (workspace / ".openhands").mkdir(parents=True)
    (workspace / ".openhands" / "microagents").symlink_to(outside)
    found = load_instructions(workspace, InstructionsConfig())
    assert found.text == "" and found.files == []
    assert found.notes == [
        ".openhands/microagents/repo.md was not read: it points outside the workspace"
    ]


def test_binary_invalid_and_special_files_are_skipped(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = InstructionsConfig()
    (workspace / "AGENTS.md").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0rest")
    assert load_instructions(workspace, config).notes == [
        "AGENTS.md was not read: it is binary, not text"
    ]
    (workspace / "AGENTS.md").write_bytes(b"caf\xe9 in latin-1")
    assert load_instructions(workspace, config).notes == [
        "AGENTS.md was not read: it is not UTF-8 text"
    ]
    (workspace / "AGENTS.md").unlink()
    os.mkfifo(workspace / "AGENTS.md")  # must not hang the start of a session
    assert load_instructions(workspace, config).notes == [
        "AGENTS.md was not read: it is not a regular file"
    ]
    (workspace / "AGENTS.md").unlink()
    (workspace / "AGENTS.md").mkdir()
    found = load_instructions(workspace, config)
    assert found.files == [] and len(found.notes) == 1


def test_the_cap_cuts_inside_a_character_cleanly(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("é" * 1000)
    found = load_instructions(workspace, InstructionsConfig(max_chars=100))
    assert found.text.startswith("From AGENTS.md:\n" + "é" * 100)
    assert "instructions cut here" in found.text
    assert load_instructions(workspace, InstructionsConfig(enabled=False)).text == ""


def test_headless_says_which_instructions_were_read() -> None:
    import io

    from workbench.events import InstructionsEvent
    from workbench.headless.output import HumanPrinter

    out = io.StringIO()
    printer = HumanPrinter(out, io.StringIO())
    printer.event(InstructionsEvent(id=1, files=["AGENTS.md"], chars=42, notes=["cut"]))
    assert out.getvalue() == "-- project instructions: AGENTS.md (42 characters); cut\n"
