"""Text files for the editor: detect encoding, BOM and line endings on read, write back the same.

A file is decoded as UTF-16 (when it starts with a UTF-16 BOM), UTF-8 (with or without BOM,
tried strictly first) or, failing that, the legacy encoding `files_encoding` detects (cp1251,
Shift-JIS ...; latin-1 when unsure, which maps every byte and so round-trips exactly). NUL
bytes or a high share of control bytes mark a file as binary. A file whose every newline is
CRLF is edited with `\\n` and written back with CRLF; tabs and all other characters are never
touched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.executors.files_encoding import detect_encoding

SNIFF_BYTES = 8192
"""How much of a file the binary and encoding checks look at when the file is not read whole."""

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8", "UTF-8 with BOM"),
    (b"\xff\xfe", "utf-16-le", "UTF-16 LE with BOM"),
    (b"\xfe\xff", "utf-16-be", "UTF-16 BE with BOM"),
)
# Bytes that almost never occur in text: C0 controls except \t \n \v \f \r and ESC.
_CONTROL = frozenset(range(0x09)) | frozenset(range(0x0E, 0x1B)) | frozenset(range(0x1C, 0x20))
_CONTROL_SHARE = 0.10


class EditRefused(Exception):
    """The editor command cannot be carried out; the message is the reply to the agent."""


class NotText(EditRefused):
    """The file cannot be handled as text; the message says why and what to do instead."""


@dataclass(frozen=True)
class TextFile:
    """A decoded text file and how to encode text back into the same bytes format."""

    path: Path
    text: str
    """The content; `\\n` line endings when `crlf` is set, otherwise exactly as stored."""
    encoding: str
    bom: bytes
    label: str
    """The encoding as a person would name it, e.g. "UTF-8", "cp1251" or "latin-1"."""
    crlf: bool

    def encode(self, text: str) -> bytes:
        """`text` (with `\\n` endings) as bytes in this file's encoding, BOM and line endings."""
        if self.crlf:
            text = text.replace("\n", "\r\n")
        return self.bom + text.encode(self.encoding)

    def normalize(self, text: str) -> str:
        """Text given by the agent, with CRLF turned into `\\n` when the file is edited that way."""
        return text.replace("\r\n", "\n") if self.crlf else text


def human_size(size: int) -> str:
    """A byte count for people: 512 B, 3.4 KB, 12.0 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def binary_reason(head: bytes) -> str | None:
    """Why these first bytes of a file (without a UTF-16 BOM) look binary, or None for text."""
    if b"\x00" in head:
        return "it contains NUL bytes"
    try:
        head.decode("utf-8")
        return None
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # a character cut by the sniff window
            return None
    controls = sum(1 for byte in head if byte in _CONTROL)
    if head and controls / len(head) > _CONTROL_SHARE:
        return "it is not valid UTF-8 and is full of control bytes"
    return None


def not_text_message(path: Path, why: str) -> str:
    """The reply for a binary file: what is wrong and the shell tools to use instead."""
    return (
        f"{path} looks like a binary file ({why}); the editor only handles text files. "
        f"Inspect it from the shell instead, e.g. `file {path}` or `xxd {path} | head`."
    )


def decode(path: Path, data: bytes) -> TextFile:
    """Decode a whole file's bytes, or raise NotText."""
    for bom, encoding, label in _BOMS:
        if data.startswith(bom):
            try:
                text = data[len(bom) :].decode(encoding)
            except UnicodeDecodeError as exc:
                raise NotText(
                    not_text_message(path, f"it starts with a {label} mark but is not {label}")
                ) from exc
            return _with_newlines(path, text, encoding, bom, label)
    why = binary_reason(data if len(data) <= SNIFF_BYTES else data[:SNIFF_BYTES])
    if why is None and b"\x00" in data:
        why = "it contains NUL bytes"
    if why is not None:
        raise NotText(not_text_message(path, why))
    try:
        return _with_newlines(path, data.decode("utf-8"), "utf-8", b"", "UTF-8")
    except UnicodeDecodeError:
        encoding = detect_encoding(data)
        return _with_newlines(path, data.decode(encoding), encoding, b"", encoding)


def head_encoding(head: bytes) -> str:
    """The encoding of a file too big to read whole, judged from its first bytes."""
    try:
        head.decode("utf-8")
        return "utf-8"
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # a character cut by the sniff window
            return "utf-8"
    # Whole lines only: a multi-byte character cut at the end would spoil the detection.
    return detect_encoding(head[: head.rfind(b"\n") + 1] or head)


def _with_newlines(path: Path, text: str, encoding: str, bom: bytes, label: str) -> TextFile:
    crlf = "\r" in text and text.count("\r\n") == text.count("\n") > 0
    if crlf:
        text = text.replace("\r\n", "\n")
    return TextFile(path, text, encoding, bom, label, crlf)


def read_text(path: Path, max_bytes: int) -> TextFile:
    """Read and decode a regular file no bigger than `max_bytes`, or raise NotText."""
    size = path.stat().st_size
    if size > max_bytes:
        raise NotText(too_big_message(path, size, max_bytes))
    return decode(path, path.read_bytes())


def too_big_message(path: Path, size: int, max_bytes: int) -> str:
    """The reply for a file over the editor's size limit."""
    return (
        f"{path} is {human_size(size)}, over the editor's limit of {human_size(max_bytes)}, "
        "so it cannot be edited here. View part of it with `view` and a `view_range`, or use "
        f"shell tools (`grep -n PATTERN {path}`, `sed -n '100,150p' {path}`, `sed -i`)."
    )


def write_bytes(path: Path, data: bytes) -> None:
    """Overwrite `path` in place, so symlinks, hard links, owner and mode stay as they were."""
    with open(path, "wb") as out:
        out.write(data)


def occurrences(text: str, old: str) -> list[int]:
    """Start offsets of every occurrence of `old`, overlapping ones included."""
    starts: list[int] = []
    at = text.find(old)
    while at != -1:
        starts.append(at)
        at = text.find(old, at + 1)
    return starts


def near_miss(text: str, old: str) -> str:
    """A hint when `old` matches once whitespace at line ends and starts is ignored."""
    wanted = [line.strip() for line in old.strip("\n").split("\n")]
    if not any(wanted) or len(wanted) > 200:
        return ""
    lines = [line.strip() for line in text.split("\n")]
    for index in range(len(lines) - len(wanted) + 1):
        if lines[index : index + len(wanted)] == wanted:
            return (
                f" Lines {index + 1}-{index + len(wanted)} match if whitespace is ignored: "
                "copy the indentation (tabs or spaces) and line ends exactly, e.g. after "
                "viewing those lines."
            )
    return " View the file to copy the exact text (indentation included)."


def diff_text(data: bytes | None) -> str | None:
    """Bytes shown in a diff or view: decoded leniently, CRLF folded."""
    if data is None:
        return None
    try:
        return decode(Path("-"), data).text
    except NotText:
        return data.decode("latin-1").replace("\r\n", "\n")
