"""Split shell text into its top-level commands, the way bash would read them line by line.

One "command" is everything bash reads before it runs something: a pipeline or `&&`/`;` chain,
a compound command (`if`/`for`/`while`/`case`/`{ }`/`( )`, functions) over any number of lines,
a line ended by `\\`, `&&`, `||` or `|`, and the bodies of its here-documents. Quotes, `$( )`,
backticks, `${ }`, arithmetic and comments are understood; top-level comment and blank lines are
not commands. Text that cannot be complete (an open quote, an `if` without `fi`) is reported,
because an interactive bash would sit waiting for the rest.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field

from sandbox import confine

_BLANKS = " \t"
_METACHARS = " \t\n;&|<>()"
_OPERATORS = (
    ";;&", "<<-", "<<<", "&>>",
    "&&", "||", ";;", ";&", "|&", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<(", ">(",
    ";", "&", "|", "(", ")", "<", ">",
)  # fmt: skip
_REDIRECTIONS = frozenset({"<<-", "<<<", "&>>", "<<", ">>", "<&", ">&", "<>", ">|", "&>", "<", ">"})
_CLOSERS = {"fi": "fi", "done": "done", "}": "}", "esac": "esac"}
_OPENERS = {"if": "fi", "while": "done", "until": "done", "for": "done", "select": "done"}
_NAMES = {
    "fi": "`if`",
    "done": "a `for`/`while`/`until` loop",
    "}": "`{`",
    ")": "`(`",
    "]]": "`[[`",
}


class _Incomplete(Exception):
    """The text ends inside a construct; the message says which."""

    def __init__(self, message: str, certain: bool = False) -> None:
        super().__init__(message)
        self.certain = certain
        """True when bash would also wait for more input, whatever `bash -n` says."""


@dataclass
class Split:
    """The top-level commands of a text, or why the text is incomplete."""

    commands: list[str] = field(default_factory=list)
    incomplete: str | None = None


def split_commands(text: str) -> Split:
    """Split `text` into top-level commands; see the module docstring for what counts as one."""
    text = text.replace("\r\n", "\n").rstrip("\n")
    scanner = _Scanner(text)
    try:
        scanner.parse(None)
    except _Incomplete as exc:
        why = str(exc)
        checked = None if exc.certain else _bash_syntax_error(text)
        if checked == "":  # bash itself accepts it: trust bash over this parser
            return Split(commands=[text.strip("\n")])
        return Split(commands=scanner.commands, incomplete=f"{why}{checked or ''}")
    return Split(commands=scanner.commands)


def _bash_syntax_error(text: str) -> str | None:
    """`bash -n`'s complaint about `text` ("" when bash accepts it, None if bash cannot run)."""
    try:
        # Confined like the shell: the text is the agent's, and a bash started straight from a
        # server that keeps root as its real uid would take root back (Docker, confine.py).
        done = subprocess.run(
            confine.wrap(["bash", "-n"]),
            input=text,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode == 0 and not done.stderr.strip():
        return ""
    return "\nbash -n says: " + done.stderr.strip().replace("bash: ", "")


class _Scanner:
    """A recursive scanner over the text; `parse(None)` fills `commands`."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.commands: list[str] = []

    def _line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def parse(self, closer: str | None) -> None:
        """Scan a command list until end of text (closer None) or its closing `)`."""
        text, n = self.text, len(self.text)
        opened_at = self.pos
        stack: list[str] = []
        cmd_pos = True  # the next word is where a command (or reserved word) may start
        cont = False  # the last token asks for more (`&&`, `|`, a function header)
        heredocs: list[tuple[str, bool]] = []
        start: int | None = None
        while True:
            self._skip_blanks()
            if self.pos >= n:
                if closer is not None:
                    where = self._line(opened_at)
                    raise _Incomplete(f"`$(` or `(` opened on line {where} is never closed")
                if heredocs:
                    raise _Incomplete(f"the here-document `<<{heredocs[0][0]}` has no body")
                if stack:
                    missing = "esac" if stack[-1].startswith("esac") else stack[-1]
                    what = _NAMES.get(missing, "`case`")
                    raise _Incomplete(f"{what} is never closed (`{missing}` is missing)")
                if cont and start is not None:
                    raise _Incomplete(
                        "the command ends with `&&`, `||` or `|`: the rest is missing"
                    )
                if start is not None:
                    self.commands.append(text[start:].rstrip("\n"))
                return
            top = stack[-1] if stack else None
            c = text[self.pos]
            if c == "#":
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end
                continue
            if c == "\n":
                self.pos += 1
                if heredocs:
                    self._read_heredocs(heredocs)
                    heredocs = []
                if closer is None and not stack and not cont and start is not None:
                    self.commands.append(text[start : self.pos].rstrip("\n"))
                    start = None
                if top != "]]":
                    cmd_pos = True
                continue
            if start is None and closer is None:
                start = self.pos
            if top in ("esac-in", "esac-pat"):
                self._case_head(stack)
                cmd_pos = bool(stack) and stack[-1] == "esac-cmd"
                cont = False
                continue
            op = self._operator()
            if op is not None:
                if top == "]]":
                    continue
                if op == ")":
                    if top == ")":
                        stack.pop()
                        cmd_pos = False
                    elif closer == ")":
                        return
                    continue
                if op == "(":
                    if cmd_pos and text.startswith("(", self.pos):
                        self.pos += 1
                        self._skip_balanced(2)
                        cmd_pos = False
                    else:
                        stack.append(")")
                        cmd_pos = True
                    continue
                if op in ("<(", ">("):
                    self.parse(")")
                    cmd_pos = cont = False
                    continue
                if op in _REDIRECTIONS:
                    self._skip_blanks()
                    target = (
                        self._word() if self.pos < n and text[self.pos] not in _METACHARS else ""
                    )
                    if op in ("<<", "<<-"):
                        heredocs.append((_unquote(target), op == "<<-"))
                    continue
                if op in (";;", ";&", ";;&") and top == "esac-cmd":
                    stack[-1] = "esac-pat"
                cmd_pos = True
                cont = op in ("&&", "||", "|", "|&")
                continue
            word = self._word()
            cont = False
            if top == "]]":
                if word == "]]":
                    stack.pop()
                continue
            if not cmd_pos:
                continue
            cmd_pos, cont = self._reserved(word, stack)

    def _reserved(self, word: str, stack: list[str]) -> tuple[bool, bool]:
        """Apply a word at command position to the stack; returns the new (cmd_pos, cont)."""
        top = stack[-1] if stack else None
        if word in _OPENERS:
            stack.append(_OPENERS[word])
            if word in ("for", "select"):
                self._skip_blanks()
                if self.text.startswith("((", self.pos):
                    self.pos += 2
                    self._skip_balanced(2)
                return False, False
            return True, False
        if word in _CLOSERS:
            if top == _CLOSERS[word] or (word == "esac" and top in ("esac-cmd", "esac-pat")):
                stack.pop()
            return False, False
        if word in ("then", "else", "elif", "do", "!", "time", "coproc"):
            return True, False
        if word == "{":
            stack.append("}")
            return True, False
        if word == "[[":
            stack.append("]]")
            return False, False
        if word == "case":
            stack.append("esac-in")
            return False, False
        if word == "function":
            self._skip_blanks()
            self._word()
            self._maybe_function_parens()
            return True, True
        if self._maybe_function_parens():
            return True, True
        return False, False

    def _maybe_function_parens(self) -> bool:
        """Consume `()` after a function name; True if it was there."""
        save = self.pos
        self._skip_blanks()
        if self.text.startswith("(", self.pos):
            after = self.pos + 1
            while after < len(self.text) and self.text[after] in _BLANKS:
                after += 1
            if self.text.startswith(")", after):
                self.pos = after + 1
                return True
        self.pos = save
        return False

    def _case_head(self, stack: list[str]) -> None:
        """In `case WORD in` or before a pattern: consume one word or pattern list."""
        text = self.text
        if stack[-1] == "esac-in":
            if self._operator() is None and self._word() == "in":
                stack[-1] = "esac-pat"
            return
        save = self.pos
        word = self._word() if text[self.pos] not in _METACHARS else ""
        if word == "esac":
            stack.pop()
            return
        self.pos = save
        if text[self.pos] == "(":
            self.pos += 1
        while self.pos < len(text):
            c = text[self.pos]
            if c == ")":
                self.pos += 1
                stack[-1] = "esac-cmd"
                return
            if c in _BLANKS or c in "|\n":
                self.pos += 1
            elif c in _METACHARS:
                stack[-1] = "esac-cmd"  # a malformed pattern: read on, bash will say what is wrong
                return
            else:
                self._word()
        raise _Incomplete("a `case` pattern is never closed with `)`")

    def _operator(self) -> str | None:
        for op in _OPERATORS:
            if self.text.startswith(op, self.pos):
                self.pos += len(op)
                return op
        return None

    def _skip_blanks(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            c = text[self.pos]
            if c in _BLANKS:
                self.pos += 1
            elif c == "\\" and text.startswith("\\\n", self.pos):
                self.pos += 2
            else:
                return

    def _word(self) -> str:
        """Consume one word (quotes and substitutions included) and return its raw text."""
        text, n = self.text, len(self.text)
        begin = self.pos
        while self.pos < n:
            c = text[self.pos]
            if c in _METACHARS:
                prev = text[self.pos - 1] if self.pos > begin else ""
                if c == "(" and prev and prev in "=@!+*?":  # array assignment or extglob
                    self.pos += 1
                    self._skip_balanced(1)
                    continue
                break
            self._word_char()
        return text[begin : self.pos]

    def _word_char(self) -> None:
        """Consume one character of a word, or the whole quoted/substituted part it starts."""
        text = self.text
        c = text[self.pos]
        if c == "\\":
            if self.pos + 1 >= len(text):
                raise _Incomplete("the command ends with a backslash that continues it", True)
            self.pos += 2
        elif c == "'":
            self._skip_quoted("'", escapes=False, what="single quote (')")
        elif c == '"':
            self._skip_double()
        elif c == "`":
            self._skip_quoted("`", escapes=True, what="backtick (`) substitution")
        elif c == "$":
            self._dollar()
        else:
            self.pos += 1

    def _dollar(self) -> None:
        text = self.text
        nxt = text[self.pos + 1 : self.pos + 3]
        if nxt.startswith("'"):
            self.pos += 1
            self._skip_quoted("'", escapes=True, what="$'...' string")
        elif nxt.startswith('"'):
            self.pos += 1
            self._skip_double()
        elif nxt == "((":
            self.pos += 3
            self._skip_balanced(2)
        elif nxt.startswith("("):
            self.pos += 2
            self.parse(")")
        elif nxt.startswith("{"):
            self.pos += 2
            self._skip_braces()
        else:
            self.pos += 1

    def _skip_quoted(self, quote: str, escapes: bool, what: str) -> None:
        text, n, begin = self.text, len(self.text), self.pos
        self.pos += 1
        while self.pos < n:
            c = text[self.pos]
            if c == "\\" and escapes:
                self.pos += 2
            elif c == quote:
                self.pos += 1
                return
            else:
                self.pos += 1
        raise _Incomplete(f"a {what} opened on line {self._line(begin)} is never closed")

    def _skip_double(self) -> None:
        text, n, begin = self.text, len(self.text), self.pos
        self.pos += 1
        while self.pos < n:
            c = text[self.pos]
            if c == "\\":
                self.pos += 2
            elif c == '"':
                self.pos += 1
                return
            elif c == "`":
                self._skip_quoted("`", escapes=True, what="backtick (`) substitution")
            elif c == "$":
                self._dollar()
            else:
                self.pos += 1
        raise _Incomplete(f'a double quote (") on line {self._line(begin)} is never closed')

    def _skip_braces(self) -> None:
        """After `${`: skip to the matching `}`."""
        text, n, begin, depth = self.text, len(self.text), self.pos, 1
        while self.pos < n:
            c = text[self.pos]
            if c == "}":
                depth -= 1
                self.pos += 1
                if depth == 0:
                    return
            elif c == "{":
                depth += 1
                self.pos += 1
            else:
                self._word_char()
        raise _Incomplete(f"`${{` opened on line {self._line(begin)} is never closed")

    def _skip_balanced(self, depth: int) -> None:
        """Skip to where `depth` open parentheses are closed (arithmetic, arrays, extglob)."""
        text, n, begin = self.text, len(self.text), self.pos
        while self.pos < n:
            c = text[self.pos]
            if c == "(":
                depth += 1
                self.pos += 1
            elif c == ")":
                depth -= 1
                self.pos += 1
                if depth == 0:
                    return
            elif c in _METACHARS:
                self.pos += 1
            else:
                self._word_char()
        raise _Incomplete(f"a parenthesis opened on line {self._line(begin)} is never closed")

    def _read_heredocs(self, heredocs: list[tuple[str, bool]]) -> None:
        text, n = self.text, len(self.text)
        for delimiter, strip_tabs in heredocs:
            while True:
                if self.pos >= n:
                    raise _Incomplete(f"the here-document is never closed by a line `{delimiter}`")
                end = text.find("\n", self.pos)
                line = text[self.pos : n if end < 0 else end]
                self.pos = n if end < 0 else end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break


def _unquote(word: str) -> str:
    """A here-document delimiter as bash compares it: quotes and backslashes removed."""
    return re.sub(r"\\(.)|['\"]", lambda m: m.group(1) or "", word)
