"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from workbench.config import env_names, known_keys
from workbench.testing.llm_server import ScriptedLLMServer


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Point config and data dirs at a fresh temp dir; drop the user's settings from the env."""
    home = tmp_path_factory.mktemp("userdirs")
    monkeypatch.setenv("WORKBENCH_CONFIG_DIR", str(home / "config"))
    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(home / "data"))
    for key in known_keys():
        for name in env_names(key):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
def llm_server() -> Iterator[Callable[..., ScriptedLLMServer]]:
    """Start a ScriptedLLMServer for a script: `server = llm_server([{"text": "hi"}])`."""
    servers: list[ScriptedLLMServer] = []

    def start(script: Any) -> ScriptedLLMServer:
        server = ScriptedLLMServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
