"""The agent knows its world: the system prompt of a real headless session says what the
sandbox profile allows (only the workspace writable, $HOME, protected paths, the network, how
to install packages, the limits in force, who it is)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from headless_harness import finish, make_config

from workbench.headless import run_session
from workbench.headless_output import HumanPrinter
from workbench.testing.llm_server import ScriptedLLMServer


async def _system_prompt(tmp_path: Path, **dotted: object) -> str:
    ws = tmp_path / "ws"
    ws.mkdir()
    async with ScriptedLLMServer([finish()]) as server:
        config = make_config(tmp_path, server.base_url, ws, **dotted)
        out, err = io.StringIO(), io.StringIO()
        summary = await run_session(config, "go", HumanPrinter(out, err))
        first = server.requests[0]
    assert summary["status"] == "success", out.getvalue() + err.getvalue()
    message = first["messages"][0]
    assert message["role"] == "system"
    return str(message["content"])


async def test_the_system_prompt_says_what_the_sandbox_allows(tmp_path: Path) -> None:
    system = await _system_prompt(tmp_path, sandbox__local__isolation="bwrap")
    world = system[system.index("Your sandbox:") :]
    assert "Only the workspace (and a private /tmp) is writable" in world
    assert "$HOME is /tmp/home" in world
    assert ".git/config" in world and ".workbench/" in world and "git -c" in world
    assert "The network goes through a proxy" in world  # the default: "allowlist"
    assert "another host needs the person's yes" in world
    assert "python3 -m venv .venv" in world
    assert "Limits: " in world and "processes" in world  # the limits in force, as applied
    assert "do not repeat it" in world
    if os.geteuid() == 0:  # the agent is not root when the app is
        assert "unprivileged user of your own" in world
    assert system.index("Your sandbox:") < system.index("Rules:")


async def test_no_network_is_said(tmp_path: Path) -> None:
    """The old key is still read: `sandbox.local.network = false` is network "off"."""
    system = await _system_prompt(
        tmp_path, sandbox__local__isolation="bwrap", sandbox__local__network=False
    )
    assert "There is no network" in system and "The network is on." not in system


async def test_network_on_is_said(tmp_path: Path) -> None:
    system = await _system_prompt(
        tmp_path, sandbox__local__isolation="bwrap", sandbox__network="on"
    )
    assert "The network is on." in system and "proxy" not in system
