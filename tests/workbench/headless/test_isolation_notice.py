"""Headless says so when the local sandbox could not be isolated ("auto" without bubblewrap)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from headless_harness import cli_env, finish, run_cli

from sandbox.runtimes.bwrap import bwrap_available
from workbench.testing.llm_server import ScriptedLLMServer


def run(tmp_path: Path, **env: str) -> str:
    """Stderr of a one-step headless run (it must succeed)."""
    with ScriptedLLMServer([finish()]) as server:
        proc = run_cli(
            ["--headless", "-t", "x"], cli_env(tmp_path, server.base_url, **env), tmp_path
        )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def test_no_bubblewrap_means_a_warning_on_stderr(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with bash and without bwrap
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    stderr = run(tmp_path, PATH=str(bin_dir))
    assert "NOT isolated" in stderr and "bubblewrap is not installed" in stderr


@pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work here")
def test_no_warning_when_isolated_or_when_none_is_chosen(tmp_path: Path) -> None:
    assert "NOT isolated" not in run(tmp_path, PATH=os.environ["PATH"])
    chosen = run(tmp_path, WORKBENCH_SANDBOX_LOCAL_ISOLATION="none")
    assert "NOT isolated" not in chosen
