"""Which part of an action a rule fails to match, said so a person can fix the rule.

"These rules do not match" leaves the person guessing; this names the command of a shell line
no rule covers, and for the rule closest to it the word where they part: `'run:pip instal *'
stops matching at its word 2: 'instal' is not 'install'`.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from workbench.security.policy import simple_commands
from workbench.tools.base import RuleSubject
from workbench.tools.registry import REGISTRY


def mismatch(rules: list[str], subject: RuleSubject) -> list[str]:
    """Why `rules` do not let the action `subject` through, as sentences naming the part of
    the action that no rule matches (empty when nothing more precise can be said)."""
    mine = [(rule, pattern) for rule in rules if (pattern := _pattern(rule, subject.kind))]
    if not mine:
        kinds = sorted({rule.partition(":")[0] for rule in rules})
        return [
            f"the rules are for {', '.join(f'{k}:' for k in kinds)} actions; this one is a "
            f"{subject.kind}: action (start a rule with {subject.kind}:)"
        ]
    parts = simple_commands(subject.text) if subject.shell else None
    if parts is None or len(parts) < 2:
        return [_closest(mine, subject.text.strip(), "the action")]
    lines: list[str] = []
    for part in parts:
        if not any(fnmatchcase(part.strip(), pattern) for _, pattern in mine):
            lines.append(_closest(mine, part.strip(), "its command"))
    if lines:
        lines.insert(0, "each command of the line needs a rule that matches it:")
    return lines


def _pattern(rule: str, kind: str) -> str | None:
    prefix, sep, pattern = rule.partition(":")
    if sep and prefix in REGISTRY.rule_kinds():
        return pattern.strip() if prefix == kind else None
    return rule.strip()


def _closest(rules: list[tuple[str, str]], text: str, what: str) -> str:
    """The word where the rule that matches most of `text` stops matching it."""
    best: tuple[int, str] | None = None
    for rule, pattern in rules:
        matched, why = _words(pattern, text)
        if best is None or matched > best[0]:
            best = (matched, f"{rule!r} {why}")
    assert best is not None
    return f"no rule matches {what} {_quote(text)}: {best[1]}"


def _words(pattern: str, text: str) -> tuple[int, str]:
    """How many words of `text` the glob `pattern` matches, word by word, and where it stops."""
    want, have = pattern.split(), text.split()
    for index, word in enumerate(want):
        last = index == len(want) - 1
        if last and fnmatchcase(" ".join(have[index:]), word):
            return len(have), "matches it as a whole, but not with this spacing"
        if index >= len(have):
            return index, f"expects more after {_quote(' '.join(have))}: {_quote(word)}"
        if not fnmatchcase(have[index], word):
            return (
                index,
                f"stops matching at word {index + 1}: {_quote(word)} is not {_quote(have[index])}",
            )
    rest = " ".join(have[len(want) :])
    return len(want), (
        f"ends where the action goes on with {_quote(rest)} (end the rule with ' *' to allow "
        "what follows)"
    )


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
