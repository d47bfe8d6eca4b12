"""Text from a session, a workspace, a model or a tool, made safe to print on a terminal.

A model's text once wrote the person's clipboard (OSC 52) and cleared their screen through
headless output, and a file name did the same through `workbench checkpoints`. `terminal_safe`
is the one filter: every CLI command that prints such text uses it (`safe_streams` puts it in
front of stdout and stderr for a whole command), and so does headless.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from typing import TextIO

_SEQUENCE = re.compile(
    # CSI (7-bit and 8-bit): parameters, intermediates, a final byte.
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    # OSC, DCS, SOS, PM, APC (7-bit and 8-bit): up to their terminator, or the line's end.
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    # Any other escape: intermediates and a final byte (charsets, keypad modes, resets).
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_SURROGATE = re.compile(r"[\ud800-\udfff]")
"""A byte that was not UTF-8 (surrogate-escaped): printed raw it could be an 8-bit control."""
_CONTROLS = {
    keep: re.compile(
        "[" + "".join(f"\\x{c:02x}" for c in range(0x20) if chr(c) not in keep) + "\x7f-\x9f]"
    )
    for keep in ("", "\n", "\t", "\t\n")
}


def terminal_safe(text: str, keep: str = "\t\n") -> str:
    """`text` without terminal escape sequences and control characters (those in `keep`, of
    tab and newline, stay); a byte that was not UTF-8 becomes U+FFFD."""
    if "\x1b" in text or any("\x80" <= c <= "\x9f" for c in text):
        text = _SEQUENCE.sub("", text)
    return _CONTROLS[keep].sub("", _SURROGATE.sub("\ufffd", text))


def one_line(text: str) -> str:
    """`terminal_safe` for a single line (a file name, a title): no newline or tab either."""
    return terminal_safe(text, keep="")


class _SafeStream:
    """A text stream that writes what it is given through `terminal_safe`."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        """Write `text`, made safe; the length given (what print expects)."""
        self._stream.write(terminal_safe(text))
        return len(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """While inside, whatever is printed on stdout and stderr goes through `terminal_safe`
    (JSON lines are unchanged: `json.dumps` escapes every control character)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _SafeStream(out), _SafeStream(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
