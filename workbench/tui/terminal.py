"""How images are drawn in this terminal, decided once before Textual starts: the Kitty
graphics protocol, Sixel (also iTerm2's, since 3.3), or our half-cell blocks.

The terminal is asked once, in one write: a Kitty graphics query followed by a primary device
attributes request (DA1). Every terminal answers DA1, so the answer ends there without waiting
for a timeout; a Kitty reply before it means Kitty graphics, a `4` among the DA1 attributes
means Sixel; iTerm2 says who it is in the environment (`LC_TERMINAL`, `TERM_PROGRAM`). Nothing
is asked once Textual owns the terminal (its answer would arrive as typed keys: under tmux
`ESC [?1;2c` landed in the input box), nor inside tmux or screen, on the Linux console or a dumb
terminal, where no graphics get through. textual-image's renderers are then loaded without
their own import-time questions (see `_load_renderers`).

`WORKBENCH_IMAGES=halfcell|kitty|sixel|iterm2` forces a choice without asking (tests, and
terminals that answer wrongly).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

log = logging.getLogger(__name__)

FORCE_VARIABLE = "WORKBENCH_IMAGES"
"""The environment variable that forces the image mode."""
MODES = ("kitty", "sixel", "iterm2", "halfcell")
"""The image modes: a graphics protocol, or half-cell blocks."""
QUESTION = "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\\x1b[c"
"""A Kitty graphics query (image id 31), then DA1."""
ANSWER_TIMEOUT_S = 0.3
"""The longest wait for the terminal's answer (a terminal that answers DA1 does so at once)."""

_KITTY_OK = re.compile(r"\x1b_Gi=31;OK\x1b\\")
_DA1 = re.compile(r"\x1b\[\?([0-9;]*)c")
_NO_GRAPHICS_TERMS = ("dumb", "linux", "vt100", "vt220")
_MULTIPLEXER_TERMS = ("screen", "tmux")


def probe_worthwhile(environ: Mapping[str, str]) -> bool:
    """False where no graphics protocol can reach the screen, so asking would only cost time."""
    term = environ.get("TERM", "")
    if term in _NO_GRAPHICS_TERMS or term.startswith(_MULTIPLEXER_TERMS):
        return False
    return not (environ.get("TMUX") or environ.get("STY"))


def is_iterm2(environ: Mapping[str, str]) -> bool:
    """Whether iTerm2 says (in the environment it gives its shells) that it is iTerm2."""
    return environ.get("LC_TERMINAL") == "iTerm2" or environ.get("TERM_PROGRAM") == "iTerm.app"


def forced_mode(environ: Mapping[str, str]) -> str | None:
    """The mode `WORKBENCH_IMAGES` asks for, if it names one (a wrong value is logged)."""
    wanted = environ.get(FORCE_VARIABLE, "").strip().lower()
    if not wanted:
        return None
    if wanted in MODES:
        return wanted
    log.warning("%s=%r is not one of %s; asking the terminal", FORCE_VARIABLE, wanted, MODES)
    return None


def choose_mode(answer: str, environ: Mapping[str, str]) -> str:
    """The image mode from the terminal's answer to `QUESTION`: Sixel where DA1 lists
    attribute 4 (before Kitty, as textual-image does: WezTerm and Konsole answer both and draw
    only Sixel right), else Kitty graphics where the Kitty query was answered OK, else iTerm2
    (which draws Sixel) by its environment, else half-cell blocks."""
    da1 = _DA1.search(answer)
    if da1 is not None and "4" in da1.group(1).split(";"):
        return "sixel"
    if _KITTY_OK.search(answer):
        return "kitty"
    if is_iterm2(environ):
        return "iterm2"
    return "halfcell"


def ask_terminal(timeout: float = ANSWER_TIMEOUT_S) -> str:
    """Write `QUESTION` to the terminal and read its answer, up to the end of DA1's reply or
    `timeout` seconds (call only before Textual starts)."""
    import select
    import termios
    import tty

    stdin = sys.__stdin__
    stdout = sys.__stdout__
    if stdin is None or stdout is None:
        return ""
    fd = stdin.fileno()
    saved = termios.tcgetattr(fd)
    answer = b""
    try:
        tty.setcbreak(fd, termios.TCSANOW)
        stdout.write(QUESTION)
        stdout.flush()
        import time

        deadline = time.monotonic() + timeout
        while not _DA1.search(answer.decode("latin-1")):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                break
            answer += os.read(fd, 1024)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)
    return answer.decode("latin-1")


def _load_renderers() -> None:
    """Import textual-image's widgets without the questions it asks at import (it probes
    Sixel and Kitty itself, up to 0.1 s each): its cell size is read first (an ioctl), then
    stdout looks like no terminal while the rest imports."""
    from textual_image._terminal import get_cell_size

    get_cell_size()  # cached from now on
    real = sys.__stdout__

    class _NoTerminal:
        def __init__(self, stream: Any) -> None:
            self._stream = stream

        def isatty(self) -> bool:
            return False

        def __getattr__(self, name: str) -> Any:
            return getattr(self._stream, name)

    sys.__stdout__ = _NoTerminal(real)  # type: ignore[assignment,misc]
    try:
        import textual_image.widget  # noqa: F401
    finally:
        sys.__stdout__ = real  # type: ignore[misc]


def image_mode(
    environ: Mapping[str, str], is_tty: bool, ask: Callable[[float], str] = ask_terminal
) -> str:
    """`kitty`, `sixel`, `iterm2` or `halfcell`, asking the terminal at most once, now."""
    forced = forced_mode(environ)
    mode = forced
    if mode is None:
        if not is_tty or not probe_worthwhile(environ):
            return "halfcell"
        try:
            answer = ask(ANSWER_TIMEOUT_S)
        except Exception as exc:  # e.g. stdin is no terminal
            log.warning("asking the terminal about images failed (%s)", exc)
            answer = ""
        mode = choose_mode(answer, environ)
    if mode == "halfcell":
        return mode
    try:
        _load_renderers()
    except Exception as exc:  # e.g. a pty that reports 0 columns: ZeroDivisionError inside
        log.warning("loading the image renderers failed (%s); using half-cell blocks", exc)
        return "halfcell"
    return mode
