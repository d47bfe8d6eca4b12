"""Esc Esc during a command, through the TUI (issue 23, item 1): the scripted LLM, a real local
runtime and bash. The shell pane showed ticks and `exit 130`; the session log records the
command with that output and exit status, and the model's next request says it was
interrupted by the person, not that it never ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_wait import waiter
from tui_support import scripted_config

from sandbox.protocol import CmdOutputObservation
from workbench.config.schema import Config
from workbench.events import ObservationEvent
from workbench.session.log import read
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.tui.app import WorkbenchApp, create_app
from workbench.tui.bridge import ControllerBackend
from workbench.tui.messages import PromptSubmitted
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane

LOOP = "for i in $(seq 1 100); do echo tick $i; sleep 0.2; done"
SCRIPT = {
    "steps": [
        {
            "tool_calls": [
                {"name": "execute_bash", "arguments": {"command": LOOP, "security_risk": "LOW"}}
            ]
        },
    ],
    "default": {"text": "I see it was interrupted."},
}
_until = waiter(30)


def _config(tmp_path: Path, base_url: str) -> Config:
    return scripted_config(tmp_path, base_url)


def _controller(app: WorkbenchApp) -> Any:
    backend = app.backend
    assert isinstance(backend, ControllerBackend) and backend.controller is not None
    return backend.controller


@pytest.mark.timeout(120)
async def test_esc_esc_records_the_command_as_interrupted(tmp_path: Path) -> None:
    with ScriptedLLMServer(SCRIPT) as server:
        config = _config(tmp_path, server.base_url)
        backend = ControllerBackend(config, tmp_path / "cfg" / "config.toml")
        app = create_app(
            config, backend, clock=lambda: 0.0, image_mode="halfcell", user_themes=tmp_path / "t"
        )
        async with app.run_test(size=(120, 40)) as pilot:
            shell = app.query_one(ShellPane)
            app.post_message(PromptSubmitted("count for a while"))
            await _until(pilot, lambda: "tick 4" in shell.output.text(), "ticks", 60)
            prompt = app.query_one(PromptInput)
            prompt.focus()
            await pilot.press("escape", "escape")
            await _until(pilot, lambda: shell.exit_code == 130, "the interrupt", 10)
            controller = _controller(app)
            await _until(pilot, lambda: controller.state == "stopped", "the run's end", 10)
            prompt.focus()
            await pilot.press("g", "o", "space", "o", "n", "enter")
            await _until(pilot, lambda: len(server.requests) == 2, "the next request", 20)
            log = controller.session.path
            await app.action_quit()
    answer = server.requests[1]["messages"]
    tool = [m for m in answer if m["role"] == "tool"]
    assert len(tool) == 1, answer
    assert "tick 4" in tool[0]["content"] and "exit code 130" in tool[0]["content"]
    assert "Interrupted by the person" in tool[0]["content"]
    assert "not carried out" not in tool[0]["content"]
    observations = [e for e in read(log).events if isinstance(e, ObservationEvent)]
    assert len(observations) == 1
    obs = observations[0].observation
    assert isinstance(obs, CmdOutputObservation) and obs.exit_code == 130
    assert "tick 1\n" in obs.content and "tick 4" in obs.content
