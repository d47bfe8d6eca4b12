"""How a re-run judges one result against the recorded one, and the sentence that says why.

- Text is compared once `normalise` masked what always differs (times, ids, paths); the
  sentence names what was masked.
- Images (a plot, a screenshot) are compared by content, not by name: each name in the text is
  replaced by `<image sha256:...>` of its bytes, so `ipython-001-6ba2f124.png` and
  `ipython-001-ef90fffb.png` holding the same picture read the same. An image whose bytes are
  not at hand (a trajectory keeps none) is compared by its presence only, and the sentence says
  so.
- An editor result of an imported OpenHands trajectory is compared by effect: the file after
  the step against the content the trajectory recorded (`new_content`), or, for a view, the
  numbered lines shown; OpenHands words its editor's answers its own way, so the words are
  not compared.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from workbench.replay.normalise import masked

_NUMBERED = re.compile(r"^\s*(\d+)\t(.*)$", re.MULTILINE)
"""A line of `cat -n` as both editors print a file: its number, a tab, the text."""


@dataclass(frozen=True)
class Judgement:
    """Two results as compared, whether they are equal, and why."""

    recorded_text: str
    new_text: str
    equal: bool
    why: str


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def first_difference(recorded: str, new: str) -> str:
    """Where two compared texts first part: the line and both versions of it."""
    old_lines, new_lines = recorded.splitlines(), new.splitlines()
    for number, (old, now) in enumerate(zip(old_lines, new_lines, strict=False), 1):
        if old != now:
            return f"line {number}: recorded {_short(old)}, re-run {_short(now)}"
    number = min(len(old_lines), len(new_lines)) + 1
    if len(old_lines) > len(new_lines):
        return f"the re-run ends before line {number}: recorded {_short(old_lines[number - 1])}"
    return f"the re-run has more from line {number}: {_short(new_lines[number - 1])}"


def digest(data: bytes) -> str:
    """A short sha256 of an image's bytes, as the compared text shows it."""
    return hashlib.sha256(data).hexdigest()[:16]


def with_image_digests(text: str, images: Mapping[str, bytes | None]) -> str:
    """`text` with each image name replaced by its content's digest (or `<image>` when its
    bytes are not at hand)."""
    for name in sorted(images, key=len, reverse=True):
        data = images[name]
        shown = f"<image sha256:{digest(data)}>" if data is not None else "<image>"
        text = text.replace(name, shown)
    return text


def _joined(items: Iterable[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def judge_text(
    recorded: str,
    new: str,
    workspaces: Iterable[str],
    recorded_images: Mapping[str, bytes | None] | None = None,
    new_images: Mapping[str, bytes | None] | None = None,
) -> Judgement:
    """Two results' texts compared after masking, their images by content."""
    recorded_images = recorded_images or {}
    new_images = new_images or {}
    workspaces = tuple(workspaces)
    old_text, old_masks = masked(with_image_digests(recorded, recorded_images), workspaces)
    new_text, new_masks = masked(with_image_digests(new, new_images), workspaces)
    unknown = [name for name, data in recorded_images.items() if data is None]
    unknown += [name for name, data in new_images.items() if data is None]
    if unknown:  # one side's bytes are missing: compare both by presence only
        old_text = re.sub(r"<image sha256:\w+>", "<image>", old_text)
        new_text = re.sub(r"<image sha256:\w+>", "<image>", new_text)
    if old_text != new_text:
        why = "differs at " + first_difference(old_text, new_text)
        if "<image" in why:
            why += " (an image's content differs)"
        return Judgement(old_text, new_text, False, why)
    reasons: list[str] = []
    if recorded_images or new_images:
        if unknown:
            reasons.append(
                f"images compared by presence only ({_joined(sorted(unknown))}: bytes not kept)"
            )
        else:
            pairs = zip(sorted(recorded_images), sorted(new_images), strict=False)
            same = [f"{new_name} = recorded {old_name}" for old_name, new_name in pairs]
            reasons.append(f"images equal by content (sha256), not by name: {_joined(same)}")
    masks = list(dict.fromkeys([*old_masks, *new_masks]))
    if masks:
        verb = "was" if len(masks) == 1 else "were"
        reasons.append(f"equal once {_joined(masks)} {verb} masked")
    elif not reasons:
        reasons.append("identical output" if recorded == new else "equal but for trailing space")
    return Judgement(old_text, new_text, True, "; ".join(reasons))


def judge_file_effect(path: str, recorded: str, after: bytes | None) -> Judgement:
    """An edit judged by the file it left: `after` (None: unreadable) against the content the
    recording says the file had after the step."""
    expected = recorded.encode("utf-8", "surrogateescape")
    shown_old = f"{path} after the step (recorded):\n{recorded}"
    if after is None:
        why = f"differs by effect: {path} cannot be read after the re-run step"
        return Judgement(shown_old, f"{path}: (unreadable)", False, why)
    now = after.decode("utf-8", "replace")
    if after == expected:
        why = (
            f"equal by effect: {path} after the step is byte-equal to the recorded file "
            f"({len(after)} bytes; OpenHands words its editor's answers differently, so the "
            "words are not compared)"
        )
        shown = f"{path} after the step:\n{now}"
        return Judgement(shown, shown, True, why)
    shown_new = f"{path} after the step (re-run):\n{now}"
    why = f"differs by effect: {path} after the step, {first_difference(recorded, now)}"
    return Judgement(shown_old, shown_new, False, why)


def shown_lines(text: str) -> list[tuple[str, str]]:
    """The numbered file lines an editor's view shows (number, text)."""
    return [(m.group(1), m.group(2).rstrip()) for m in _NUMBERED.finditer(text)]


def judge_view(recorded: str, new: str, workspaces: Iterable[str]) -> Judgement:
    """A view judged by the file lines it shows, when its words differ (the OpenHands editor's
    header and ours are not the same)."""
    words = judge_text(recorded, new, workspaces)
    if words.equal:
        return words
    old, now = shown_lines(recorded), shown_lines(new)
    if old and old == now:
        why = (
            f"equal by effect: the same {len(old)} numbered line(s) of the file are shown "
            "(OpenHands words its editor's answers differently, so the words are not compared)"
        )
        shown = "\n".join(f"{n}\t{t}" for n, t in old)
        return Judgement(shown, shown, True, why)
    if old or now:
        diff = difflib.unified_diff([t for _, t in old], [t for _, t in now], lineterm="", n=0)
        changed = next((line for line in list(diff)[2:] if line[:1] in "+-"), "")
        why = f"differs by effect: the file lines shown differ ({_short(changed)})"
        return Judgement(words.recorded_text, words.new_text, False, why)
    return words
