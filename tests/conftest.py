"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from workbench.config.keys import env_names, known_keys
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


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under `scripts/test` (WORKBENCH_TEST_NO_SKIPS=1), which installs every part the suite
    needs, a test skipped for a missing part (Chromium, bubblewrap, Docker) fails instead."""
    outcome = yield
    report = outcome.get_result()
    strict = os.environ.get("WORKBENCH_TEST_NO_SKIPS") == "1"
    if strict and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped where every part should be installed: {reason}"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount a tmpfs of `size` bytes on a new folder under tmp_path (root only; skips
    otherwise): `small_disk("data", 64 * 1024)`; `full=True` fills it to the last byte.
    Unmounted at teardown."""
    mounted: list[Path] = []

    def mount(name: str, size: int, full: bool = False) -> Path:
        point = tmp_path / name
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(point)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs (needs root): {done.stderr.strip()}")
        mounted.append(point)
        if full:
            _fill(point)
        return point

    yield mount
    for point in reversed(mounted):
        if subprocess.run(["umount", str(point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(point)], capture_output=True)


def _fill(disk: Path) -> None:
    """Fill the filesystem of `disk` to the last byte with a file named `filler`."""
    with (disk / "filler").open("wb", buffering=0) as stream:
        block = b"\0" * 4096
        try:
            while True:
                stream.write(block)
        except OSError:
            pass
        try:
            while True:
                stream.write(b"\0")
        except OSError:
            pass
