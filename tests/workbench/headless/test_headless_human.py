"""Headless human output reads as a person wants it (issue 14, friction 10): an edit prints its
diff, a thought is not acknowledged, images are named by the path they were kept at, and a
retry of the model call is a line of its own."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from sandbox.protocol import (
    BrowseObservation,
    FileEditAction,
    FileEditObservation,
    IPythonObservation,
)
from workbench.events import (
    ActionEvent,
    LLMRetryEvent,
    ObservationEvent,
    ThinkAction,
    ThinkObservation,
)
from workbench.headless.output import HumanPrinter

DIFF = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def _printed(*events: Any, log: str = "/data/sessions/20261126-061800-abc123.jsonl") -> str:
    out = io.StringIO()
    printer = HumanPrinter(out, out)
    printer.start({"session_id": "s", "model": "m", "workspace": "/ws", "log": log})
    for event in events:
        printer.event(event)
    return out.getvalue()


def test_an_edit_prints_its_diff_not_the_text_for_the_model() -> None:
    edit = FileEditAction(command="str_replace", path="/ws/a.py", old_str="x = 1", new_str="x = 2")
    said = "The file /ws/a.py has been edited. Here's the result of running `cat -n`: 1 x = 2"
    observation = FileEditObservation(
        command="str_replace", path="/ws/a.py", content=said, diff=DIFF
    )
    text = _printed(
        ActionEvent(id=1, tool_name="str_replace_editor", tool_call_id="c", action=edit),
        ObservationEvent(id=2, cause=1, tool_call_id="c", observation=observation),
    )
    assert "    -x = 1\n    +x = 2" in text
    assert "has been edited" not in text


def test_a_thought_is_not_acknowledged() -> None:
    think = ThinkAction(thought="The bug is in the parser.")
    text = _printed(
        ActionEvent(id=1, tool_name="think", tool_call_id="c", action=think),
        ObservationEvent(id=2, cause=1, tool_call_id="c", observation=ThinkObservation()),
    )
    assert "The bug is in the parser." in text
    assert "Your thought has been logged." not in text


def test_images_are_named_by_the_path_they_were_kept_at() -> None:
    cell = IPythonObservation(code="plot()", content="", images=["ipython-001-ab12.png"])
    shot = BrowseObservation(
        action="goto('http://x')",
        url="http://x/",
        title="X",
        content="page text",
        axtree="[1] RootWebArea",
        screenshot="browser-002-cd34.png",
        screenshot_path="/tmp/sandbox-art/browser-002-cd34.png",
    )
    text = _printed(
        ObservationEvent(id=2, cause=1, tool_call_id="c", observation=cell),
        ObservationEvent(id=4, cause=3, tool_call_id="d", observation=shot),
    )
    kept = Path("/data/sessions/20261126-061800-abc123.files")
    assert f"[image: {kept / 'ipython-001-ab12.png'}]" in text
    assert f"[screenshot: {kept / 'browser-002-cd34.png'}]" in text
    assert "Accessibility tree" not in text and "Jupyter Python interpreter" not in text


def test_a_retry_is_a_notice_on_stderr() -> None:
    out, err = io.StringIO(), io.StringIO()
    printer = HumanPrinter(out, err)
    retry = LLMRetryEvent(
        id=3, model="m", retry=2, wait_s=4.0, error_kind="rate_limit", message="slow down"
    )
    printer.event(retry)
    assert err.getvalue() == "workbench: LLM rate_limit error, retry 2 in 4.0 s: slow down\n"
    assert out.getvalue() == ""


def test_model_text_cannot_drive_the_terminal() -> None:
    """A model's text once wrote the person's clipboard (OSC 52) and cleared the screen."""
    from workbench.events import MessageEvent

    text = _printed(
        MessageEvent(
            id=1, source="agent", text="done \x1b]52;c;cHduZWQ=\x07 now\x1b[2J\rhidden\x08!"
        )
    )
    assert "done  now" in text and "hidden!" in text
    assert not any(ch in text for ch in "\x1b\x07\x08\r")
