"""A shell line as bash would run it: its simple commands, parsed with tree-sitter-bash.

Each `Command` carries its words after quote removal and the expansion that can be done
before it runs (`r''m`, `"rm"`, `\\rm` and `$'\\x72m'` are all `rm`; `{rm,-rf,x}` is three
words; `$HOME` is `~`). Anything known only at run time (`$X`, `$(…)`, backticks, arithmetic)
stands as `DYNAMIC` inside the word. Commands inside substitutions, loops, functions and
subshells are listed too, in the order they appear.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter
import tree_sitter_bash

DYNAMIC = "\x00"
"""Stands for text known only when the line runs."""

_EXPANSIONS = frozenset({"simple_expansion", "expansion"})
_RUN_TIME = frozenset(
    {"command_substitution", "process_substitution", "arithmetic_expansion", "translated_string"}
)
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_HEREDOC_PARTS = frozenset({"heredoc_start", "heredoc_body", "heredoc_end"})
_KNOWN_VARIABLES = {"HOME": "~", "PWD": ".", "!": "$!"}
"""Variables whose value is known before the line runs (`$!` stays: the last background job)."""
_MAX_BRACE_WORDS = 256
_LOOP_VALUES = 4


@dataclass(frozen=True)
class Redirect:
    """A redirection: its operator (`>`, `>>`, `<`, `&>` ...) and its target word."""

    op: str
    target: str


@dataclass
class Command:
    """One simple command: its words, where its input comes from, its redirections."""

    words: list[str]
    text: str
    redirects: list[Redirect] = field(default_factory=list)
    stdin: str | None = None
    """The text of a heredoc or here-string given to it."""
    upstream: list[Command] = field(default_factory=list)
    """The commands whose output is piped into it (empty: its input is not a pipe)."""
    env: list[tuple[str, str]] = field(default_factory=list)
    """`NAME=value` set for this command alone (`GIT_PAGER=cat git log`)."""

    def sources(self, limit: int = 64) -> list[Command]:
        """Every command before it in its pipeline, nearest first (at most `limit`)."""
        found: list[Command] = []
        stage = self.upstream
        while stage and len(found) < limit:
            found.extend(stage)
            stage = stage[0].upstream
        return found[:limit]

    @property
    def piped(self) -> bool:
        """True when its standard input is a pipe from other commands."""
        return bool(self.upstream)


@dataclass
class Line:
    """A parsed shell line: its simple commands in order; `errors` when parts did not parse."""

    commands: list[Command]
    errors: bool
    substitutions: bool
    """True when it has `$( )`, backticks or `<( )`: commands whose output becomes words."""
    assignments: list[tuple[str, str]] = field(default_factory=list)
    """`NAME=value` set for the rest of the shell's life (values after static expansion)."""


@lru_cache(maxsize=1)
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(text: str) -> Line:
    """The simple commands of a shell line (error-tolerant: what parses is still listed)."""
    source = text.encode("utf-8", "surrogatepass")
    tree = _parser().parse(source)
    walker = _Walker(source)
    errors = tree.root_node.has_error
    try:
        walker.visit(tree.root_node)
    except RecursionError:  # nested past Python's stack: what was found stays, flagged
        errors = True
    return Line(walker.commands, errors, walker.substitutions, walker.assignments)


class _Walker:
    def __init__(self, source: bytes) -> None:
        self.source = source
        self.commands: list[Command] = []
        self.substitutions = False
        self.variables = dict(_KNOWN_VARIABLES)
        self.assignments: list[tuple[str, str]] = []

    def text(self, node: tree_sitter.Node) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def visit(self, node: tree_sitter.Node, upstream: list[Command] | None = None) -> list[Command]:
        """Collect the commands under `node`; returns those that take its input."""
        kind = node.type
        if kind == "command":
            return [self.command(node, upstream or [])]
        if kind == "pipeline":
            return self.pipeline(node.named_children, upstream)
        if kind == "redirected_statement":
            return self.redirected(node, upstream)
        if kind in ("command_substitution", "process_substitution"):
            self.substitutions = True
        if kind == "variable_assignment":
            self.assign(node)
            return []
        if kind == "for_statement":
            self.for_loop(node)
            return []
        first: list[Command] = []
        for child in node.named_children:
            found = self.visit(child, upstream if not first else None)
            first = first or found
        return first

    def pipeline(
        self, stages: list[tree_sitter.Node], upstream: list[Command] | None
    ) -> list[Command]:
        first: list[Command] = []
        for stage in stages:
            taking = self.visit(stage, upstream)
            first = first or taking
            upstream = taking
        return first

    def redirected(self, node: tree_sitter.Node, upstream: list[Command] | None) -> list[Command]:
        body = node.child_by_field_name("body")
        before = len(self.commands)
        taking = self.visit(body, upstream) if body is not None else []
        # `a && cat <<EOF`, `a | b > f`: the redirection belongs to the last command.
        last = self.commands[-1:] if len(self.commands) > before else []
        for child in node.named_children:
            if child.type in _REDIRECTS:
                self.redirect(child, last)
                if child.type != "heredoc_redirect" and body is not None and body.type == "command":
                    last[0].text += " " + self.text(child)
        return taking

    def redirect(self, node: tree_sitter.Node, commands: list[Command]) -> None:
        kind = node.type
        if kind == "heredoc_redirect":
            body = "".join(self.text(c) for c in node.named_children if c.type == "heredoc_body")
            for command in commands:
                command.stdin = body
            # `cat <<EOF | sh`: tree-sitter hangs the rest of the pipeline on the heredoc.
            for child in node.named_children:
                if child.type == "pipeline":
                    self.pipeline(child.named_children, commands)
                elif child.type in _REDIRECTS:  # `cat <<EOF > file`
                    self.redirect(child, commands)
                elif child.type not in _HEREDOC_PARTS:
                    self.visit(child)
            return
        targets = [c for c in node.named_children if c.type != "file_descriptor"]
        op = next((self.text(c) for c in node.children if not c.is_named), "")
        for target in targets:
            self.visit_substitutions(target)
            words = self.words(target)
            if kind == "herestring_redirect":
                for command in commands:
                    command.stdin = " ".join(words)
            else:
                for command in commands:
                    command.redirects.extend(Redirect(op, word) for word in words)
                if not commands:  # `> file` alone
                    self.commands.append(
                        Command([], self.text(node), [Redirect(op, w) for w in words])
                    )

    def command(self, node: tree_sitter.Node, upstream: list[Command]) -> Command:
        words: list[str] = []
        found = Command(words, self.text(node), upstream=list(upstream))
        inner_start = len(self.commands)
        self.commands.append(found)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.visit_substitutions(child)
                name = child.child_by_field_name("name")
                value = child.child_by_field_name("value")
                if name is not None:
                    text = self.static(value) if value is not None else ""
                    found.env.append((self.text(name), text))
            elif child.type in _REDIRECTS:
                self.redirect(child, [found])
            else:
                self.visit_substitutions(child)
                words.extend(self.words(child))
        # Substitutions run before the command: list them first.
        self.commands.append(self.commands.pop(inner_start))
        return found

    def assign(self, node: tree_sitter.Node) -> None:
        """`X=value` on its own: later `$X` in the line is `value` when it is static."""
        self.visit_substitutions(node)
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None:
            return
        text = self.static(value) if value is not None else ""
        self.assignments.append((self.text(name), text))
        if DYNAMIC in text or node.type != "variable_assignment":
            self.variables.pop(self.text(name), None)
        else:
            self.variables[self.text(name)] = text

    def for_loop(self, node: tree_sitter.Node) -> None:
        """`for X in A B; do …`: the body is read once for each of the first few values."""
        name = node.child_by_field_name("variable")
        body = node.child_by_field_name("body")
        values: list[str] = []
        for item in node.children_by_field_name("value"):
            self.visit_substitutions(item)
            values.extend(self.words(item))
        if name is None or body is None:
            return
        variable = self.text(name)
        for value in values[:_LOOP_VALUES] or [DYNAMIC]:
            self.variables[variable] = value
            self.visit(body)
        self.variables.pop(variable, None)

    def visit_substitutions(self, node: tree_sitter.Node) -> None:
        if node.type in ("command_substitution", "process_substitution"):
            self.substitutions = True
            self.visit(node)
            return
        for child in node.named_children:
            self.visit_substitutions(child)

    def words(self, node: tree_sitter.Node) -> list[str]:
        """The words `node` becomes after brace expansion and quote removal."""
        if node.type == "command_name":
            return [w for c in node.named_children for w in self.words(c)] or [self.text(node)]
        if node.type in ("word", "concatenation") and "{" in self.text(node):
            pieces = _expand_braces(self.text(node))
            if len(pieces) > 1:
                return [_unescape(piece) for piece in pieces]
        return [self.static(node)]

    def static(self, node: tree_sitter.Node) -> str:
        """The text of one word after quote removal; run-time parts become DYNAMIC."""
        kind = node.type
        if kind in ("word", "number", "regex", "extglob_pattern"):
            return _unescape(self.text(node))
        if kind == "raw_string":
            return self.text(node)[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(self.text(node)[2:-1])
        if kind in _EXPANSIONS:
            name = self.text(node).strip("${}")
            return self.variables.get(name, DYNAMIC)
        if kind in _RUN_TIME:
            return DYNAMIC
        if kind == "string":
            return self.joined(node, node.start_byte + 1, node.end_byte - 1, _unescape_double)
        if kind == "concatenation":
            return self.joined(node, node.start_byte, node.end_byte, _unescape)
        if kind == "string_content":
            return _unescape_double(self.text(node))
        return _unescape(self.text(node))

    def joined(
        self, node: tree_sitter.Node, start: int, end: int, plain: Callable[[str], str]
    ) -> str:
        parts: list[str] = []
        at = start
        for child in node.named_children:
            if child.start_byte > at:
                parts.append(plain(self.source[at : child.start_byte].decode("utf-8", "replace")))
            parts.append(self.static(child))
            at = child.end_byte
        if end > at:
            parts.append(plain(self.source[at:end].decode("utf-8", "replace")))
        return "".join(parts)


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    text = text.replace("\\\n", "")
    return re.sub(r"\\(.)", r"\1", text, flags=re.S)


def _unescape_double(text: str) -> str:
    if "\\" not in text:
        return text
    text = text.replace("\\\n", "")
    return re.sub(r"\\([$`\"\\])", r"\1", text)


def _ansi_c(body: str) -> str:
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return DYNAMIC


def _expand_braces(word: str) -> list[str]:
    """Bash brace expansion of one unquoted word (`a{b,c}` -> `ab`, `ac`); bounded."""
    depth, start = 0, -1
    commas: list[int] = []
    for i, char in enumerate(word):
        if char == "\\":
            continue
        if char == "{":
            if depth == 0:
                start, commas = i, []
            depth += 1
        elif char == "}" and depth:
            depth -= 1
            if depth == 0 and commas:
                head, tail = word[:start], word[i + 1 :]
                options = [
                    word[a + 1 : b] for a, b in zip([start, *commas], [*commas, i], strict=True)
                ]
                out: list[str] = []
                for option in options:
                    for rest in _expand_braces(head + option + tail):
                        out.append(rest)
                        if len(out) >= _MAX_BRACE_WORDS:
                            return out
                return out
        elif char == "," and depth == 1:
            commas.append(i)
    return [word]
