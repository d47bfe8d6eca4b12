"""A full disk under the data dir, seen from the TUI: a clear notice, no crash, the log whole.
A real small tmpfs (root), the scripted LLM server, the real local runtime."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter

from workbench.config.load import load_config
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.messages import PromptSubmitted

NOISY = {
    "tool_calls": [
        {
            "name": "execute_bash",
            "arguments": {
                "command": "head -c 1500 /dev/urandom | base64 -w0",
                "security_risk": "LOW",
            },
        }
    ]
}


def _app_for(tmp_path: Path, server: ScriptedLLMServer) -> WorkbenchApp:
    (tmp_path / "ws").mkdir()
    env = {
        "LLM_MODEL": "openai/test-model",
        "LLM_BASE_URL": server.base_url,
        "LLM_API_KEY": "test-key-123456",
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
        "WORKBENCH_CHECKPOINTS_ENABLED": "false",  # the log alone fills the small disk
    }
    config = load_config(env=env, overrides={"sandbox.workspace": str(tmp_path / "ws")})
    backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
    return create_app(
        config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
    )


_until = waiter(60, explain=lambda pilot: f"notices: {_notes(pilot.app)}")


def _notes(app: Any) -> list[str]:
    return [str(note.message) for note in app._notifications]


@pytest.mark.timeout(120)
async def test_a_disk_that_fills_mid_run_is_a_notice_not_a_crash(
    tmp_path: Path, small_disk: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = small_disk("data", 48 * 1024)
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(data))  # where the sessions folder is
    with ScriptedLLMServer({"steps": [], "default": NOISY}) as server:
        app = _app_for(tmp_path, server)
        backend = app.backend
        assert isinstance(backend, ControllerBackend)
        async with app.run_test(size=(120, 40)) as pilot:
            app.post_message(PromptSubmitted("fill the disk"))
            await _until(pilot, lambda: len(server.requests) >= 1, "the first step")
            log_path = backend.session.path if backend.session else None
            full = "No space left on device"
            await _until(pilot, lambda: any(full in note for note in _notes(app)), "the notice")
            note = next(note for note in _notes(app) if full in note)
            assert note.startswith("The agent was stopped: cannot write the session log")
            assert str(data) in note and "WORKBENCH_DATA_DIR" in note
            assert backend.controller is None and backend.session is None  # session ended
            # The disk is still full: the next task says so instead of running unrecorded.
            asked = len(server.requests)
            app.post_message(PromptSubmitted("again"))
            opened = "The session could not be opened: cannot write the new session log"
            await _until(pilot, lambda: any(opened in n for n in _notes(app)), "the 2nd notice")
            assert len(server.requests) == asked
            await app.action_quit()
    assert log_path is not None and log_path.read_bytes().endswith(b"\n")
    loaded = read(log_path)
    assert (loaded.truncated, loaded.bad_lines) == (False, [])
    assert [e.id for e in loaded.events] == list(range(1, len(loaded.events) + 1))
    assert len(list(data.glob("sessions/*.jsonl"))) == 1  # the refused second log left nothing
