"""Where unpacking an archive writes: the folder (`tar -C`, `unzip -d`, `7z -o`; by default
the current one) and the members named on the command line. Without named members the names
are whatever the archive holds, which the analyzer cannot see before it runs."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.security.commands import in_cluster, is_option, option_value

_TAR_VALUE_LETTERS = "fCTXbHIKNgLV"
"""Short tar options that take the next word as their value (`-xf x.tar`, `-C dir`)."""
_TAR_VALUE_LONG = frozenset(
    {
        "--file", "--directory", "--files-from", "--exclude-from", "--exclude", "--format",
        "--use-compress-program", "--transform", "--xform", "--strip-components", "--owner",
        "--group", "--mode", "--blocking-factor", "--newer", "--after-date", "--label",
    }
)  # fmt: skip
_UNKNOWN_NAMES = ("-T", "--files-from", "--strip-components", "--transform", "--xform", "-P")
"""tar options after which the names written are not the names given."""


@dataclass(frozen=True)
class Extraction:
    """An archive being unpacked: into `folder`, writing `members` (None: not known)."""

    folder: str
    members: tuple[str, ...] | None


def extraction(base: str, args: list[str]) -> Extraction | None:
    """What `tar`/`bsdtar`/`unzip`/`7z` with `args` unpacks, or None when it unpacks nothing."""
    if base in ("tar", "bsdtar", "gtar"):
        return _tar(args)
    if base == "unzip":
        return _unzip(args)
    if base in ("7z", "7za", "7zr") and args[:1] in (["x"], ["e"]):
        members = tuple(a for a in args[2:] if not is_option(a))
        return Extraction(option_value(args, ("-o",)) or ".", members or None)
    return None


def _tar(args: list[str]) -> Extraction | None:
    first = args[0] if args else ""
    old_style = bool(first) and not first.startswith("-")
    extracting = any(a in ("-x", "--extract", "--get") or in_cluster(a, "x") for a in args) or (
        old_style and "x" in first
    )
    if not extracting:
        return None
    folder = option_value(args, ("-C", "--directory")) or "."
    operands: list[str] = []
    words = iter(enumerate(args))
    for i, word in words:
        letters = word[1:] if word.startswith("-") and not word.startswith("--") else ""
        if i == 0 and old_style:
            letters = word
        if word.startswith("--"):
            if "=" not in word and word in _TAR_VALUE_LONG:
                next(words, None)
        elif letters:
            takes = sum(letter in _TAR_VALUE_LETTERS for letter in letters)
            if len(letters) > 1 and letters[0] in "C" and len(word) > 2 and not old_style:
                takes = 0  # `-Cdir`: the value is in the word
            for _ in range(takes):
                next(words, None)
        elif word != "--":
            operands.append(word)
    unknown = any(option_value(args, (name,)) is not None for name in _UNKNOWN_NAMES[:-1])
    unknown = unknown or "-P" in args or "--absolute-names" in args
    return Extraction(folder, None if unknown or not operands else tuple(operands))


def _unzip(args: list[str]) -> Extraction | None:
    if any(a in ("-l", "-t", "-v", "-p", "-c", "-z", "-Z") for a in args):
        return None  # lists, tests or prints: writes no file
    folder = option_value(args, ("-d",)) or "."
    operands: list[str] = []
    words = iter(args)
    for word in words:
        if word == "-d":
            next(words, None)
        elif word == "-x":
            break  # the names after it are left out
        elif not is_option(word):
            operands.append(word)
    members = tuple(operands[1:])
    return Extraction(folder, members or None)
