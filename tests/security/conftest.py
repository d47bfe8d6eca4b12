"""Fixtures of the host-safety attack suite: the real command (one importing process per
pytest worker) and a fresh host layout per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from attack_support import Cli, Host


@pytest.fixture(scope="session")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """Runs `workbench ARGS`; shared by every test of this worker."""
    runner = Cli(tmp_path_factory.mktemp("cli"))
    yield runner
    runner.close()


@pytest.fixture
def host(tmp_path: Path) -> Host:
    """This test's host: workspace, fake home, marker folder, decoys, data and config dirs."""
    return Host(tmp_path)
