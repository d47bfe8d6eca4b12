"""A cell's text opened in the person's $EDITOR (read it, search it, save a copy), the app
suspended meanwhile."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile

from textual.widget import Widget


def open_in_editor(widget: Widget, text: str, key: str) -> None:
    """Open `text` (of the cell `key`) in $VISUAL or $EDITOR; without one, say how to set it."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        widget.notify(
            "Set $EDITOR (e.g. export EDITOR=nano) to open cells in an editor.",
            severity="warning",
        )
        return
    with tempfile.NamedTemporaryFile(
        "w", suffix=".txt", delete=False, prefix=f"workbench-{key}-"
    ) as handle:
        handle.write(text)
    try:
        with widget.app.suspend():
            subprocess.run([*shlex.split(editor), handle.name], check=False)
    except Exception as exc:
        widget.notify(f"Could not run {editor}: {exc}", severity="error", markup=False)
    finally:
        os.unlink(handle.name)
