"""Shared by the agent-env tests (local and Docker): a tiny wheel, and the scenario of issue
22's first acceptance item run against any started runtime."""

from __future__ import annotations

import zipfile
from pathlib import Path

from sandbox.protocol import CmdOutputObservation, CmdRunAction, IPythonAction, IPythonObservation
from sandbox.runtimes.base import Runtime

PACKAGE = "wbtinypkg"


def tiny_wheel(folder: Path, value: int = 42) -> Path:
    """A pure-Python wheel of `PACKAGE` (its module holds VALUE = value) written into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{PACKAGE}-1.0.dist-info"
    files = {
        f"{PACKAGE}/__init__.py": f"VALUE = {value}\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{dist}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{dist}/RECORD,,\n"
    wheel = folder / f"{PACKAGE}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


async def shell(runtime: Runtime, command: str) -> CmdOutputObservation:
    """Run `command` in the agent's shell (waits for it to finish)."""
    obs = await runtime.execute(CmdRunAction(command=command, timeout=120))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs


async def cell(runtime: Runtime, code: str) -> IPythonObservation:
    """Run `code` in the agent's Jupyter kernel."""
    obs = await runtime.execute(IPythonAction(code=code, timeout=120))
    assert isinstance(obs, IPythonObservation), obs
    return obs


async def install_and_import(runtime: Runtime, wheels: str) -> None:
    """`%pip install` the tiny wheel from the folder `wheels` (as the sandbox sees it) in the
    kernel, then import it in the kernel and in `python -c` in the shell."""
    done = await cell(runtime, f"%pip install --no-index --find-links {wheels} {PACKAGE}")
    assert "Successfully installed wbtinypkg-1.0" in done.content, done.content
    imported = await cell(runtime, f"import {PACKAGE}; print({PACKAGE}.VALUE)")
    assert not imported.error and imported.content.strip() == "42", imported.content
    await still_there(runtime)


async def still_there(runtime: Runtime) -> None:
    """The package imports in the kernel and in the shell's `python`, from the agent's env."""
    imported = await cell(runtime, f"import {PACKAGE}; print({PACKAGE}.__file__)")
    assert not imported.error and "/run/agent-env/" in imported.content, imported.content
    ran = await shell(runtime, f"python -c 'import {PACKAGE}; print({PACKAGE}.VALUE)'")
    assert ran.exit_code == 0 and ran.content.strip() == "42", ran.content


async def plot_shows_an_image(runtime: Runtime) -> None:
    """A matplotlib plot in the kernel comes back as an image (pandas and numpy import too)."""
    code = "import numpy, pandas\nimport matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    plotted = await cell(runtime, code)
    assert not plotted.error, plotted.content
    assert len(plotted.images) == 1 and plotted.images[0].endswith(".png"), plotted
