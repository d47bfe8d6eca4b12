"""Which legacy encoding a text file that is not UTF-8 is in, found by charset-normalizer.

Only files that fail strict UTF-8 get here (and charset-normalizer is imported on the first
such file, not at start-up). Its answer is taken only when it is unambiguous and exact:

- no other candidate scores as well (chaos and language coherence, within charset-normalizer's
  own tie margins) while decoding the bytes to different text;
- the decoded text encodes back to exactly the same bytes.

Otherwise the answer is latin-1, which maps every byte to one character and so round-trips any
file exactly: a short sample such as `café` or a single Cyrillic word fits too many code pages
to tell them apart, and latin-1 then at least never damages the bytes the agent does not edit.
"""

from __future__ import annotations

FALLBACK = "latin-1"
_CHAOS_TIE = 0.01
_COHERENCE_TIE = 0.02


def detect_encoding(data: bytes) -> str:
    """The Python codec name `data` is written in (not UTF-8); `FALLBACK` when unsure."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data))
    if not matches:
        return FALLBACK
    best = matches[0]
    for other in matches[1:]:
        if (
            abs(other.chaos - best.chaos) < _CHAOS_TIE
            and abs(other.coherence - best.coherence) <= _COHERENCE_TIE
        ):
            return FALLBACK
    encoding = best.encoding
    try:
        if data.decode(encoding).encode(encoding) != data:
            return FALLBACK
    except (UnicodeError, LookupError):
        return FALLBACK
    return encoding
