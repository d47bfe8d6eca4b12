"""The small modules around the app: the palette's entries, the terminal's image mode, and the
backend's start-up (litellm's import must not keep the UI's thread waiting)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pilot_wait import waiter
from tui_support import make_config

from workbench.testing.fake_backend import FakeBackend
from workbench.tui import terminal
from workbench.tui.app import create_app
from workbench.tui.bridge import IMPORT_SWITCH_INTERVAL_S, ControllerBackend
from workbench.tui.commands import palette_entries

_until = waiter(30)


async def test_palette_has_an_entry_for_every_footer_action(tmp_path: Path) -> None:
    app = create_app(None, None, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(80, 24)):
        titles = [entry.title for entry in palette_entries(app.PANES)]
        assert {"New session", "Pause / resume", "Stop the agent", "Settings"} <= set(titles)
        assert {"Show shell pane", "Show jupyter pane", "Show browser pane"} <= set(titles)
        everything = [c.title for c in app.get_system_commands(app.screen)]
        assert "Maximize pane" in everything and "Maximize" not in everything
        assert "Quit" in everything  # Textual's own entries stay
        shown = [c for c in app.get_system_commands(app.screen) if c.title == "Show jupyter pane"]
        shown[0].callback()
        assert app.query_one("#tools").active == "tab-jupyter"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "environ",
    [
        {"TERM": "tmux-256color", "TMUX": "/tmp/tmux-0/default,1,0"},
        {"TERM": "xterm-256color", "TMUX": "/tmp/tmux-0/default,1,0"},
        {"TERM": "screen.xterm-256color", "STY": "123.pts-0"},
        {"TERM": "linux"},
        {"TERM": "dumb"},
    ],
)
def test_no_probe_where_no_graphics_get_through(
    environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "textual_image.widget", None)  # an import would fail
    assert not terminal.probe_worthwhile(environ)
    assert terminal.image_mode(environ, is_tty=True) == "halfcell"


def test_a_failing_probe_falls_back_to_half_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    environ = {"TERM": "xterm-kitty"}
    assert terminal.probe_worthwhile(environ)
    assert terminal.image_mode(environ, is_tty=False) == "halfcell"
    monkeypatch.setitem(sys.modules, "textual_image.widget", None)  # ImportError on import
    assert terminal.image_mode(environ, is_tty=True, ask=lambda _t: KITTY_ANSWER) == "halfcell"


async def test_the_import_gets_a_short_switch_interval_then_the_old_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.llm

    seen: list[float] = []

    async def warm_up() -> None:
        seen.append(sys.getswitchinterval())

    monkeypatch.setattr(workbench.llm, "warm_up", warm_up)
    before = sys.getswitchinterval()
    backend = ControllerBackend(make_config())
    await backend._load_llm()
    assert seen == [IMPORT_SWITCH_INTERVAL_S]
    assert sys.getswitchinterval() == before and backend._llm_ready.is_set()


async def test_a_task_sent_during_start_up_says_it_waits_where_it_will_appear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workbench.tui.widgets.conversation import ConversationView

    backend = ControllerBackend(make_config())

    async def start() -> None:  # readiness is set by hand below
        pass

    monkeypatch.setattr(backend, "start", start)
    app = create_app(make_config(), backend, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"write hi.sh", "enter")  # typed at once, before any start-up work
        await pilot.pause()
        await pilot.pause()
        view = app.query_one(ConversationView)
        assert view.empty_text.startswith("Starting once the LLM client and the sandbox are")
        assert view.empty_text.endswith("write hi.sh")
        assert not app._notifications  # no toast over the input box and the status bar
        backend._failed["sandbox"] = "the sandbox did not start: no bash"
        backend._llm_ready.set()
        backend._sandbox_ready.set()
        for _ in range(50):
            await pilot.pause()
            if view.empty_text == ConversationView.empty_text:
                break
        assert view.empty_text == ConversationView.empty_text
        assert [n.message for n in app._notifications] == ["the sandbox did not start: no bash"]


async def test_the_session_picker_shows_each_task_and_how_it_ended(tmp_path: Path) -> None:
    from textual.widgets import OptionList

    from workbench.events import MessageEvent, StateChangedEvent
    from workbench.session.log import SessionLog, make_header
    from workbench.tui.widgets.conversation import ConversationView

    config = make_config()
    config.session.dir = str(tmp_path / "sessions")
    for sid, task, end in (
        ("20260101-000000-aaaaaa", "write hi.sh", "finished"),
        ("20260102-000000-bbbbbb", "fix the flaky test\nthen push", "stopped"),
    ):
        log = SessionLog.create(tmp_path / "sessions", make_header(sid, "/w", "openai/m"))
        log.append(MessageEvent(id=1, source="user", text=task))
        log.append(StateChangedEvent(id=2, state=end))  # type: ignore[arg-type]
        log.close()
    (tmp_path / "sessions" / "20260103-000000-cccccc.jsonl").write_bytes(b"garbage\n")
    app = create_app(config, None, image_mode="halfcell", user_themes=tmp_path / "none")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+o")
        await pilot.pause()
        options = app.screen.query_one(OptionList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert shown[0].startswith("(no task)\n")  # a damaged log is listed, saying why
        assert "damaged: line 1 is not a JSON object: no header" in shown[0]
        assert shown[1].startswith("fix the flaky test then push\n")
        assert "stopped" in shown[1] and "openai/m" in shown[1] and "damaged" not in shown[1]
        assert shown[2].startswith("write hi.sh\n") and "finished" in shown[2]
        await pilot.press("down", "down", "enter")
        await pilot.pause()
        conversation = app.query_one(ConversationView)
        assert [cell.title for cell in conversation.cells][:1] == ["write hi.sh"]


def test_notices_with_brackets_are_shown_as_written() -> None:
    # Textual reads notification text as markup by default: "[Name or service not known]" in
    # an LLM error vanished from the toast, and a "[/]" would raise.
    from textual.content import Content

    from workbench.llm.errors import LLMError

    shown: list[str] = []

    class App:
        def notify(self, text: str, **options: object) -> None:
            markup = options.get("markup", True)
            shown.append(Content.from_markup(text).plain if markup else text)

    backend = ControllerBackend(make_config())
    backend.app = App()  # type: ignore[assignment]
    error = LLMError("connection", "Cannot connect to host x:443 [Name or service not known] [/]")
    backend._notify(error.retry_notice(1, 2.0), "warning")
    assert shown == [error.retry_notice(1, 2.0)]


async def test_the_app_drives_a_backend_through_the_protocol_alone(tmp_path: Path) -> None:
    backend = FakeBackend()
    app = create_app(make_config(), backend, image_mode="halfcell", user_themes=tmp_path / "t")
    async with app.run_test(size=(80, 24)) as pilot:
        assert backend.app is app  # attached as it mounts, before any task
        await pilot.press(*"hello", "enter")
        await pilot.press("f9", "f9", "f10")
        await _until(pilot, lambda: "start" in backend.calls, "the backend's start")
        assert backend.sent == ["hello"]
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert "start" in backend.calls  # after the first frames
    assert [call for call in backend.calls if call != "start"] == [
        "pause",
        "resume",
        "stop",
        "new_session",
    ]


KITTY_ANSWER = "\x1b_Gi=31;OK\x1b\\\x1b[?62;22c"
SIXEL_ANSWER = "\x1b[?64;1;2;4;6;9;15;18;21;22c"
PLAIN_ANSWER = "\x1b[?62;22c"


@pytest.mark.parametrize(
    ("answer", "environ", "mode"),
    [
        (KITTY_ANSWER, {"TERM": "xterm-kitty"}, "kitty"),
        (SIXEL_ANSWER, {"TERM": "xterm-256color"}, "sixel"),
        ("\x1b_Gi=31;OK\x1b\\" + SIXEL_ANSWER, {"TERM": "xterm-256color"}, "sixel"),  # WezTerm
        (PLAIN_ANSWER, {"TERM": "xterm-256color", "LC_TERMINAL": "iTerm2"}, "iterm2"),
        (PLAIN_ANSWER, {"TERM": "xterm-256color"}, "halfcell"),
        ("", {"TERM": "xterm-256color"}, "halfcell"),  # no answer in time
        ("\x1b[?1;2c", {"TERM": "xterm-256color"}, "halfcell"),  # tmux's own answer
    ],
)
def test_the_image_mode_follows_the_terminals_answer_at_start_up(
    answer: str, environ: dict[str, str], mode: str
) -> None:
    assert terminal.choose_mode(answer, environ) == mode


def test_the_terminal_is_asked_once_and_a_forced_mode_asks_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[float] = []

    def ask(timeout: float) -> str:
        asked.append(timeout)
        return PLAIN_ANSWER

    assert terminal.image_mode({"TERM": "xterm-256color"}, True, ask) == "halfcell"
    assert asked == [terminal.ANSWER_TIMEOUT_S]
    forced = {"TERM": "xterm-256color", terminal.FORCE_VARIABLE: "halfcell"}
    assert terminal.image_mode(forced, True, ask) == "halfcell"
    assert terminal.image_mode({"TERM": "tmux-256color", "TMUX": "x"}, True, ask) == "halfcell"
    assert asked == [terminal.ANSWER_TIMEOUT_S]  # neither forced nor tmux asked
    monkeypatch.setitem(sys.modules, "textual_image.widget", None)  # the renderers fail to load
    assert terminal.image_mode({"TERM": "xterm-kitty"}, True, lambda _t: KITTY_ANSWER) == (
        "halfcell"
    )


def _in_a_pty(code: str, answer: bytes = b"") -> bytes:
    """What `python -c code` writes to a real pty (80x24 cells of 10x20 pixels; a pty starts at
    0x0, which textual-image divides by), `answer` typed back once a question arrives."""
    import fcntl
    import os
    import pty
    import select
    import struct
    import subprocess
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 800, 480))
    env = {**os.environ, "TERM": "xterm-256color"}
    for name in ("TMUX", "STY", terminal.FORCE_VARIABLE, "LC_TERMINAL", "TERM_PROGRAM"):
        env.pop(name, None)
    child = subprocess.Popen(
        [sys.executable, "-c", code], stdin=follower, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    seen = b""
    try:
        while b"END" not in seen:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child ended and closed the pty
                break
            if not chunk:
                break
            seen += chunk
            if answer and b"\x1b[c" in seen:
                os.write(leader, answer)
                answer = b""
    finally:
        child.wait(timeout=30)
        os.close(leader)
    return seen


def test_loading_the_image_renderers_asks_the_terminal_nothing() -> None:
    """textual-image asks the terminal about Sixel and Kitty graphics when imported on a tty;
    after our own question that would be a second round (and 0.1 s timeouts each): it is
    imported with that probe off."""
    seen = _in_a_pty("from workbench.tui import terminal; terminal._load_renderers(); print('END')")
    assert b"END" in seen, seen
    assert b"\x1b[c" not in seen and b"\x1b_G" not in seen, seen


def test_a_kitty_terminal_is_asked_once_at_start_up() -> None:
    """The one question goes out, the terminal's answer (Kitty OK, then DA1) picks Kitty."""
    code = (
        "import os; from workbench.tui import terminal; "
        "print('MODE', terminal.image_mode(os.environ, True), 'END')"
    )
    seen = _in_a_pty(code, answer=KITTY_ANSWER.encode())
    assert b"MODE kitty END" in seen, seen
    assert seen.count(b"\x1b[c") == 1 and seen.count(b"\x1b_G") == 1, seen


@pytest.mark.parametrize(
    ("size", "percent", "focused", "folded"),
    [
        ((80, 24), 50, False, True),  # 8 rows for the conversation otherwise
        ((80, 24), 20, False, True),  # 14 rows left, but 3 for the panes: nothing to see
        ((80, 24), 50, True, False),  # a pane has the focus: open
        ((100, 60), 50, False, False),  # tall: both fit
        ((200, 50), 50, False, False),  # wide: side by side
    ],
)
def test_the_tool_panes_fold_where_the_conversation_or_they_would_be_too_small(
    size: tuple[int, int], percent: int, focused: bool, folded: bool
) -> None:
    from workbench.tui.app import NARROW_WIDTH
    from workbench.tui.widgets.tools_summary import fold_tools

    assert fold_tools(*size, percent, focused, NARROW_WIDTH) is folded
