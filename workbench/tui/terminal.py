"""How images are drawn in this terminal: decided before Textual starts, without a slow probe
where the answer is known.

textual-image asks the terminal (escape sequences, up to 0.1 s each when nobody answers) for
Sixel and the Kitty graphics protocol and for its cell size, once, at import, and only before
Textual owns the terminal. Inside tmux or screen, on the Linux console or a dumb terminal no
graphics protocol gets through, and the unanswered questions cost 0.2-0.4 s before the first
paint: there the screenshots are drawn with half-cell blocks straight away.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

log = logging.getLogger(__name__)

_NO_GRAPHICS_TERMS = ("dumb", "linux", "vt100", "vt220")
_MULTIPLEXER_TERMS = ("screen", "tmux")


def probe_worthwhile(environ: Mapping[str, str]) -> bool:
    """False where no graphics protocol can reach the screen, so asking would only cost time."""
    term = environ.get("TERM", "")
    if term in _NO_GRAPHICS_TERMS or term.startswith(_MULTIPLEXER_TERMS):
        return False
    return not (environ.get("TMUX") or environ.get("STY"))


def image_mode(environ: Mapping[str, str], is_tty: bool) -> str:
    """`auto` (textual-image picks Sixel, Kitty or half-cell) or `halfcell` (no probe)."""
    if not is_tty or not probe_worthwhile(environ):
        return "halfcell"
    try:
        import textual_image.widget  # noqa: F401  (asks the terminal what it can draw)
    except Exception as exc:  # e.g. a pty that reports 0 columns: ZeroDivisionError inside
        log.warning("asking the terminal about images failed (%s); using half-cell blocks", exc)
        return "halfcell"
    return "auto"
