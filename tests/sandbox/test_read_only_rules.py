"""The project's rules (`<workspace>/.workbench/`) decide what runs without asking, so with
isolation on the agent cannot change them: not from its shell, its kernel or the editor, even
when the analyzer's judgement is wrong or a person approved the write."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    IPythonAction,
    IPythonObservation,
)
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")

RULES = '[security]\nallow = ["run:npm test*"]\n'


async def test_the_agent_cannot_change_the_projects_rules(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    rules = workspace / ".workbench" / "config.toml"
    rules.parent.mkdir(parents=True)
    rules.write_text(RULES)
    runtime = LocalRuntime(workspace, disable=["browser"], read_only=[".workbench"])
    await runtime.start()
    try:
        shell = await runtime.execute(
            CmdRunAction(
                command="echo 'allow = [\"*\"]' >> .workbench/config.toml; echo append=$?; "
                "rm -rf .workbench; echo rm=$?; mv .workbench gone; echo mv=$?; "
                "touch .workbench/more.toml; echo touch=$?; echo ok > elsewhere.txt; echo ws=$?"
            )
        )
        assert isinstance(shell, CmdOutputObservation)
        for step in ("append", "rm", "mv", "touch"):
            assert f"{step}=0" not in shell.content, shell.content
        assert "ws=0" in shell.content  # the rest of the workspace stays writable
        kernel = await runtime.execute(
            IPythonAction(code="open('.workbench/config.toml', 'w').write('allow = [\"*\"]')")
        )
        assert isinstance(kernel, IPythonObservation) and "Read-only" in kernel.content
        edit = await runtime.execute(
            FileEditAction(command="create", path=str(rules), file_text="[security]\n")
        )
        assert isinstance(edit, ErrorObservation) or "Read-only" in edit.content
        assert rules.read_text() == RULES
        assert not (workspace / "gone").exists()
    finally:
        await runtime.close()
