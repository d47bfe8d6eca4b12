"""MCP tools in the TUI: a real session (scripted LLM, local runtime, the tests' MCP server over
stdio): the notice of a server that did not start and of one that runs on the host, an `ask`
rule on `mcp:demo.picture` answered on the confirmation panel, and the tool's picture drawn in
its result's cell."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from pilot_wait import waiter

from workbench.config.load import load_config
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.status import StatusBar

DEMO = Path(__file__).resolve().parents[1] / "mcp_servers" / "demo_server.py"
SCRIPT = {
    "steps": [
        {"tool_calls": [{"name": "mcp__demo__picture", "arguments": {}}]},
        {"tool_calls": [{"name": "finish", "arguments": {"message": "Drew it."}}]},
    ],
    "default": {"text": "nothing more"},
}


_until = waiter(60)


@pytest.mark.timeout(120)
async def test_an_mcp_call_is_asked_about_and_its_picture_shown(tmp_path: Path) -> None:
    (tmp_path / "cfg").mkdir()
    (tmp_path / "ws").mkdir()
    with ScriptedLLMServer(SCRIPT) as server:
        env = {
            "LLM_MODEL": "openai/test-model",
            "LLM_BASE_URL": server.base_url,
            "LLM_API_KEY": "test-key-123456",
            "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
            "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
        }
        servers = {
            "demo": {"command": [sys.executable, str(DEMO)]},
            "broken": {"command": ["/nonexistent/mcp-server"]},
            "trusted": {"command": [sys.executable, str(DEMO)], "sandbox": False},
        }
        overrides = {
            "sandbox.workspace": str(tmp_path / "ws"),
            "mcp.servers": servers,
            "security.ask": ["mcp:demo.picture"],
        }
        config = load_config(env=env, overrides=overrides)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(config, backend, clock=lambda: 0.0, image_mode="halfcell")
        async with app.run_test(size=(120, 40)) as pilot:
            status = app.query_one(StatusBar)
            await _until(pilot, lambda: status.data.sandbox == "ready", "the sandbox")
            await pilot.click("#prompt")
            await pilot.press(*"draw", "enter")
            panel = app.query_one(ConfirmPanel)
            await _until(pilot, lambda: panel.request is not None, "the ask rule's question")
            assert "mcp:demo.picture" in panel.request.reason  # type: ignore[union-attr]
            await pilot.press("y")
            conversation = app.query_one(ConversationView)

            def picture_drawn() -> bool:
                return any(c.image for c in conversation.cells)

            await _until(pilot, picture_drawn, "the picture in the result's cell")
            await _until(pilot, lambda: status.data.state == "finished", "the finish")
            cells = conversation.cells
            (image_cell,) = [c for c in cells if c.image]
            assert image_cell.image is not None and image_cell.image.startswith(b"\x89PNG")
            shown = f"{image_cell.title} {image_cell.summary}"
            assert "picture" in shown and "a red square" in shown, shown
            notices = [c for c in cells if "'broken' did not start" in c.title + c.body]
            assert len(notices) == 1 and notices[0].role == "error"
            # A `sandbox = false` server is said to run on the host; its tools are offered.
            host = [c for c in cells if "on the host, not sandboxed" in c.title + c.body]
            assert len(host) == 1 and "'trusted'" in host[0].title + host[0].body
            from workbench.tools.registry import REGISTRY

            assert any(t.name.startswith("mcp__trusted__") for t in REGISTRY.tools())
            await app.action_quit()
            # The session's tools leave the process's registry with it (they leaked into the
            # next test's tool list).
            assert not any(t.name.startswith("mcp__") for t in REGISTRY.tools())
        await asyncio.sleep(0)
