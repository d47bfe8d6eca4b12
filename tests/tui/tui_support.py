"""Fixed sessions for the TUI tests: events with fixed ids and times, a fixed clock, PNGs.

A module of its own, not `conftest`: tests import these by name, and `conftest` is whichever
folder's conftest pytest loaded last (tests/security has one too)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    CmdOutputObservation,
    CmdRunAction,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
)
from workbench.config.schema import Config, LLMConfig
from workbench.events import (
    ActionEvent,
    ConfirmationRequestEvent,
    Event,
    LLMCallEvent,
    MessageEvent,
    ObservationEvent,
    StateChangedEvent,
)

T0 = 1_790_000_000.0


def png(width: int = 48, height: int = 24) -> bytes:
    """A deterministic gradient PNG."""
    from PIL import Image

    image = Image.new("RGB", (width, height))
    image.putdata([(x * 5 % 256, y * 10 % 256, 160) for y in range(height) for x in range(width)])
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def demo_events() -> list[Event]:
    """A short session touching every pane."""
    diff = "--- a/hi.sh\n+++ b/hi.sh\n@@ -1 +1 @@\n-echo hi\n+echo hello\n"
    return [
        StateChangedEvent(id=1, timestamp=T0, state="running"),
        MessageEvent(id=2, timestamp=T0, source="user", text="Write hi.sh that prints hi, run it."),
        ActionEvent(
            id=3,
            timestamp=T0 + 1,
            tool_name="execute_bash",
            tool_call_id="c1",
            thought="I will create the script and run it.",
            action=CmdRunAction(command="printf 'echo hi\\n' > hi.sh && bash hi.sh"),
        ),
        ObservationEvent(
            id=4,
            timestamp=T0 + 2,
            cause=3,
            tool_call_id="c1",
            observation=CmdOutputObservation(
                command="bash hi.sh", content="hi", exit_code=0, cwd="/ws"
            ),
        ),
        LLMCallEvent(
            id=5,
            timestamp=T0 + 2,
            model="openai/test-model",
            prompt_tokens=1200,
            completion_tokens=80,
            cost=0.0042,
            latency_ms=300,
        ),
        ActionEvent(
            id=6,
            timestamp=T0 + 3,
            tool_name="str_replace_editor",
            tool_call_id="c2",
            action=FileEditAction(
                command="str_replace", path="/ws/hi.sh", old_str="echo hi", new_str="echo hello"
            ),
        ),
        ObservationEvent(
            id=7,
            timestamp=T0 + 3,
            cause=6,
            tool_call_id="c2",
            observation=FileEditObservation(
                command="str_replace", path="/ws/hi.sh", content="edited", diff=diff
            ),
        ),
        ActionEvent(
            id=8,
            timestamp=T0 + 4,
            tool_name="execute_bash",
            tool_call_id="c3",
            action=CmdRunAction(command="bash hi.sh; ls /nope"),
        ),
        ObservationEvent(
            id=9,
            timestamp=T0 + 5,
            cause=8,
            tool_call_id="c3",
            observation=CmdOutputObservation(
                command="bash hi.sh; ls /nope",
                exit_code=2,
                cwd="/ws",
                content="hello\nls: cannot access '/nope': No such file or directory",
            ),
        ),
        ActionEvent(
            id=10,
            timestamp=T0 + 6,
            tool_name="execute_ipython_cell",
            tool_call_id="c4",
            action=IPythonAction(code="import math\nprint(math.pi)\n1 / 0"),
        ),
        ObservationEvent(
            id=11,
            timestamp=T0 + 6,
            cause=10,
            tool_call_id="c4",
            observation=IPythonObservation(
                code="",
                error=True,
                content="3.141592653589793\nZeroDivisionError: division by zero",
            ),
        ),
        ActionEvent(
            id=12,
            timestamp=T0 + 7,
            tool_name="execute_ipython_cell",
            tool_call_id="c5",
            action=IPythonAction(code="display(Image(data=png))"),
        ),
        ObservationEvent(
            id=13,
            timestamp=T0 + 7,
            cause=12,
            tool_call_id="c5",
            observation=IPythonObservation(code="", content="", images=["p1.png"]),
        ),
        ActionEvent(
            id=14,
            timestamp=T0 + 8,
            tool_name="browser",
            tool_call_id="c6",
            action=BrowseAction(action='goto("http://127.0.0.1:8000/")'),
        ),
        ObservationEvent(
            id=15,
            timestamp=T0 + 8,
            cause=14,
            tool_call_id="c6",
            observation=BrowseObservation(
                action='goto("http://127.0.0.1:8000/")',
                url="http://127.0.0.1:8000/",
                title="Demo page",
                content="Hello from the demo page",
                screenshot="shot.png",
            ),
        ),
        MessageEvent(
            id=16,
            timestamp=T0 + 9,
            source="agent",
            text="Done: `hi.sh` now prints **hello**.\n\n```bash\nbash hi.sh\n```",
        ),
    ]


def confirm_events() -> list[Event]:
    """An action that waits for confirmation."""
    return [
        MessageEvent(id=1, timestamp=T0, source="user", text="Clean the build folder."),
        ActionEvent(
            id=2,
            timestamp=T0,
            tool_name="execute_bash",
            tool_call_id="c1",
            action=CmdRunAction(command="rm -rf ./build"),
            security_risk="HIGH",
        ),
        ConfirmationRequestEvent(
            id=3, timestamp=T0, cause=2, risk="HIGH", reason="rm -rf deletes files recursively"
        ),
    ]


class MemoryArtifacts:
    """Artifacts by name from a dict (what a session folder holds)."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    async def load(self, name: str) -> bytes:
        """The bytes stored as `name`."""
        return self.files[name]


def make_config() -> Config:
    """A config with a model and a fixed file path."""
    return Config(llm=LLMConfig(model="openai/test-model", base_url="http://127.0.0.1:9/v1"))


def scripted_config(
    tmp_path: Path, base_url: str, overrides: Mapping[str, object] | None = None
) -> Config:
    """The config of a real backend against the scripted LLM server at `base_url`: data and
    config folders in `tmp_path`, the workspace `tmp_path/ws` (made), no browser or Jupyter."""
    from workbench.config.load import load_config

    for name in ("cfg", "ws"):
        (tmp_path / name).mkdir(exist_ok=True)
    env = {
        "LLM_MODEL": "openai/test-model",
        "LLM_BASE_URL": base_url,
        "LLM_API_KEY": "test-key-123456",
        "WORKBENCH_DATA_DIR": str(tmp_path / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp_path / "cfg"),
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
        "WORKBENCH_AGENT_ENABLE_JUPYTER": "false",
    }
    return load_config(
        env=env, overrides={"sandbox.workspace": str(tmp_path / "ws"), **(overrides or {})}
    )


def controller_events(app: Any) -> list[Any]:
    """The events of the app's live session so far (none before it starts)."""
    from workbench.tui.bridge import ControllerBackend

    backend = app.backend
    assert isinstance(backend, ControllerBackend)
    return [] if backend.controller is None else list(backend.controller.events)


def image_cell(jupyter: Any) -> Any:
    """The first Jupyter cell with a drawn image, or None."""
    return next((cell for cell in jupyter.cells if cell.image is not None), None)


def shot_drawn(browser: Any) -> bool:
    """Whether the browser pane shows a screenshot of some height, drawn in half blocks."""
    shots = browser.query("#browser-shot")
    if not shots or shots.first().size.height <= 0:
        return False
    shot = shots.first()
    return any("▀" in shot.render_line(y).text for y in range(shot.size.height))
