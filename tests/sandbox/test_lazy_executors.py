"""The built-in executors registered without their modules: what the table says matches what
the modules register, nothing is imported until an executor is built, and then it works."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.executors import (
    BUILTIN,
    always,
    load_builtin_executors,
    register_builtin_executors,
)
from sandbox.executors.base import ExecutorContext, ExecutorUnavailable, registrations


def test_the_table_says_what_each_module_registers() -> None:
    load_builtin_executors()
    registered = registrations()
    for name, (kinds, available) in BUILTIN.items():
        assert registered[name].action_kinds == kinds, name
        if available is always:  # the module registers none: it runs wherever the sandbox does
            assert registered[name].available() is None, name
        else:  # one check, not two that could drift apart
            assert registered[name].available is available, name
    register_builtin_executors()  # a module imported before keeps its own registration
    assert registrations() == registered


_LAZY = """
import json, sys
from pathlib import Path
from sandbox.core import Sandbox
from sandbox.protocol import FileEditAction

def loaded():
    return sorted(m for m in sys.modules if m.startswith("sandbox.executors."))

workspace = Path(sys.argv[1])
sandbox = Sandbox(workspace, artifacts=workspace.parent / "artifacts")
facts = {"built": loaded(), "available": sandbox.available()}
facts["checked"] = loaded()
action = FileEditAction(command="create", path=str(workspace / "a.txt"), file_text="hello\\n")
facts["observation"] = type(sandbox.execute(action)).__name__
facts["used"] = loaded()
sandbox.close()
print(json.dumps(facts))
"""


def test_a_sandbox_imports_an_executor_when_it_is_first_used(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    done = subprocess.run(  # a fresh interpreter: nothing imported by other tests
        [sys.executable, "-c", _LAZY, str(workspace)], capture_output=True, text=True, check=True
    )
    facts = json.loads(done.stdout)
    modules = {f"sandbox.executors.{name}" for name in BUILTIN}
    assert not modules & set(facts["built"]), facts["built"]
    assert not modules & set(facts["checked"]), facts["checked"]  # /health imports none either
    assert set(facts["available"]) == set(BUILTIN)
    assert facts["available"]["bash"] and facts["available"]["files"]
    assert facts["observation"] == "FileEditObservation"
    assert (workspace / "a.txt").read_text() == "hello\n"
    assert modules & set(facts["used"]) == {"sandbox.executors.files"}


def test_a_module_that_does_not_register_itself_is_reported(tmp_path: Path) -> None:
    from sandbox.executors import _importing
    from sandbox.executors.base import _REGISTRY, register

    register("no_such_executor", ("no_such_kind",), _importing("no_such_executor"))
    try:
        context = ExecutorContext(workspace=tmp_path, artifacts=tmp_path)
        with pytest.raises(ExecutorUnavailable, match="did not register"):
            registrations()["no_such_executor"].factory(context)
    finally:
        _REGISTRY.pop("no_such_executor")
