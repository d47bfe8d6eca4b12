"""The agent knows its world: the system prompt of a real headless session says what the
sandbox profile allows (only the workspace writable, $HOME, protected paths, the network, how
to install packages, the limits in force, who it is)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from agent_env_support import tiny_wheel
from headless_harness import bash, finish, make_config

from workbench.headless.output import HumanPrinter
from workbench.headless.runner import run_session
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
    assert "/run/agent-env" in world and "%pip install" in world and "matplotlib" in world
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


async def test_what_the_agent_installs_is_there_in_the_next_session(tmp_path: Path) -> None:
    """Two real headless sessions on one workspace: a package `pip install`ed in the first is
    imported by `python` in the second (the workspace's env in the data dir, not the workspace)."""
    ws = tmp_path / "ws"
    tiny_wheel(ws / "wheels")
    install = bash("pip install --no-index --find-links wheels wbtinypkg")
    use = bash("python -c 'import wbtinypkg; print(f\"got={wbtinypkg.VALUE * 1000 + 1}\")'")
    outputs = []
    for step in (install, use):
        async with ScriptedLLMServer([step, finish()]) as server:
            config = make_config(tmp_path, server.base_url, ws, sandbox__local__isolation="bwrap")
            out, err = io.StringIO(), io.StringIO()
            summary = await run_session(config, "go", HumanPrinter(out, err))
            outputs.append(out.getvalue() + err.getvalue())
        assert summary["status"] == "success", outputs[-1]
    assert "Successfully installed wbtinypkg-1.0" in outputs[0], outputs[0]
    assert "got=42001" in outputs[1], outputs[1]
    assert not (ws / "lib").exists() and not list(ws.glob("**/wbtinypkg/__init__.py"))


async def test_network_on_is_said(tmp_path: Path) -> None:
    system = await _system_prompt(
        tmp_path, sandbox__local__isolation="bwrap", sandbox__network="on"
    )
    assert "The network is on." in system and "proxy" not in system
