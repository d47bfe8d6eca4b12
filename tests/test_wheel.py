"""The wheel ships the built-in themes (force-included as `workbench/themes/`), and each loads."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
THEMES = {"workbench-dark", "workbench-light", "workbench-high-contrast"}


@pytest.mark.timeout(180)
def test_wheel_contains_the_theme_files(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=170,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    wheels = list(tmp_path.glob("workbench-*.whl"))
    assert len(wheels) == 1
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = set(wheel.namelist())
        shipped = {
            Path(n).stem for n in names if n.startswith("workbench/themes/") and n.endswith(".toml")
        }
        assert shipped >= THEMES, sorted(names)
        assert "workbench/tui/app.tcss" in names
        extracted = tmp_path / "unpacked"
        for name in names:
            if name.startswith("workbench/themes/"):
                wheel.extract(name, extracted)
    from workbench.tui.themes import load_themes

    loaded = load_themes([extracted / "workbench" / "themes"])
    assert loaded.errors == []
    assert set(loaded.themes) >= THEMES


def test_the_app_image_keeps_every_wheel_the_sandbox_image_needs() -> None:
    """The Dockerfile lists the sandbox's requirements by hand (it cannot import them)."""
    from sandbox.runtimes.wheelhouse import SANDBOX_REQUIREMENTS

    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    command = text.split("--dest /opt/workbench/sandbox-wheels", 1)[1].split("\n\n", 1)[0]
    listed = command.replace("\\", " ").split()
    assert sorted(listed) == sorted(SANDBOX_REQUIREMENTS)
