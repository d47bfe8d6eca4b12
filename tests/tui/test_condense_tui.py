"""Condensation and project instructions in the TUI: a real session (scripted LLM, real bash)
shows which instructions were read at its start, and the palette's "Condense now" condenses
before the next LLM call, shown as a cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter

from workbench.config.load import load_config
from workbench.events import CondensationEvent
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.messages import PromptSubmitted
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.status import StatusBar


def _bash(command: str, held: bool = False) -> dict[str, Any]:
    args = {"command": command, "security_risk": "LOW"}
    return {"tool_calls": [{"name": "execute_bash", "arguments": args}], "held": held}


REPORT = 'yes "report {n}: the quick brown fox jumps over the lazy dog" | head -n 90'
SCRIPT = {
    "steps": [
        _bash(REPORT.format(n=1)),
        _bash(REPORT.format(n=2), held=True),  # "Condense now" is picked meanwhile
        _bash(REPORT.format(n=3)),
        {"tool_calls": [{"name": "finish", "arguments": {"message": "Reported."}}]},
    ],
    "without_tools": {"text": "Two reports were printed."},
}


_until = waiter(60)


@pytest.mark.timeout(180)
async def test_instructions_and_condense_now_show_as_cells(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Print reports in full.\n")
    with ScriptedLLMServer(SCRIPT) as server:
        env = {
            "LLM_MODEL": "openai/test-model",
            "LLM_BASE_URL": server.base_url,
            "LLM_API_KEY": "test-key",
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
            "WORKBENCH_CHECKPOINTS_ENABLED": "false",
        }
        overrides = {"sandbox.workspace": str(workspace), "condense.keep_recent_steps": 1}
        config = load_config(env=env, overrides=overrides)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, image_mode="halfcell", user_themes=tmp_path / "t")
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            conversation = app.query_one(ConversationView)

            def titles() -> list[str]:
                return [cell.title for cell in conversation.cells]

            palette = {c.title: c for c in app.get_system_commands(app.screen)}
            app.post_message(PromptSubmitted("print the reports"))
            await _until(pilot, lambda: len(server.requests) >= 2, "the second request")
            palette["Condense now"].callback()
            server.release()
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            assert any(t.startswith("project instructions: AGENTS.md") for t in titles())
            shown = [t for t in titles() if t.startswith("condensed history (asked for)")]
            assert shown, titles()
            assert backend.controller is not None
            events = [e for e in backend.controller.events if isinstance(e, CondensationEvent)]
            assert events[0].reason == "manual" and events[0].elided
            # The request after it carries the stub, not the first report's output.
            after = server.requests[-2]
            assert not any("report 1:" in str(m.get("content")) for m in after["messages"])
            assert "Print reports in full." in after["messages"][0]["content"]
