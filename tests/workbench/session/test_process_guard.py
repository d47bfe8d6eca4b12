"""The app and the server make themselves non-dumpable before any agent process exists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="prctl is Linux only")

APP = """
from sandbox.process_guard import is_dumpable
from workbench.config.load import load_config
from workbench.session.opening import make_runtime
before = is_dumpable()
make_runtime(load_config(env={{}}, overrides={{"sandbox.workspace": {workspace!r}}}))
print(before, is_dumpable())
"""


def test_make_undumpable_turns_dumpable_off() -> None:
    code = (
        "from sandbox.process_guard import is_dumpable, make_undumpable\n"
        "before = is_dumpable(); make_undumpable(); print(before, is_dumpable())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_the_app_is_undumpable_once_it_makes_its_runtime(tmp_path: Path) -> None:
    code = APP.format(workspace=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.split() == ["True", "False"], out.stderr
