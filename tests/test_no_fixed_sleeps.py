"""No fixed sleep as synchronisation in the tests (issue 26 item 2): a test waits on the
condition it asserts, with a deadline, through tests/waiting.py or tests/tui/pilot_wait.py.

An AST scan of every tests/**/*.py finds `time.sleep`, `asyncio.sleep` (but `asyncio.sleep(0)`,
which only yields), `sleep` imported from either, and `pilot.pause(<seconds>)` (but
`pilot.pause()`, which waits for the app to be idle). A delay that is itself the behaviour under
test (a slow client, a person's reading time) says so on its line: `# scripted delay: why`.
Sleeps in code a child process runs are strings here, not calls, and are not found.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
HELPERS = {TESTS / "waiting.py", TESTS / "tui" / "pilot_wait.py"}
MARKER = "# scripted delay:"
YIELDS_ONLY = ("asyncio",)
"""Modules whose sleep(0) only yields to the event loop (allowed)."""


class _Finder(ast.NodeVisitor):
    """Collects the lines of fixed sleeps in one module."""

    def __init__(self) -> None:
        self.modules: dict[str, str] = {}  # local name -> "time" / "asyncio"
        self.functions: dict[str, str] = {}  # local name of an imported sleep -> its module
        self.found: list[tuple[int, int, str]] = []  # first line, last line, what

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name in ("time", "asyncio"):
                self.modules[alias.asname or alias.name] = alias.name

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module in ("time", "asyncio"):
            for alias in node.names:
                if alias.name == "sleep":
                    self.functions[alias.asname or alias.name] = node.module

    def _sleep_of(self, func: ast.expr) -> str | None:
        """The module whose sleep `func` names (`time.sleep`, an imported `sleep`), or None."""
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "sleep"
            and isinstance(func.value, ast.Name)
            and func.value.id in self.modules
        ):
            return self.modules[func.value.id]
        if isinstance(func, ast.Name):
            return self.functions.get(func.id)
        return None

    def _add(self, node: ast.expr, what: str) -> None:
        self.found.append((node.lineno, node.end_lineno or node.lineno, what))

    def visit_Call(self, node: ast.Call) -> None:
        module = self._sleep_of(node.func)
        if module is not None:
            delay = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg in ("secs", "delay")), None)
            )
            only_yields = isinstance(delay, ast.Constant) and delay.value == 0
            if not (module in YIELDS_ONLY and only_yields):
                self._add(node, f"{module}.sleep({ast.unparse(delay) if delay else ''})")
        elif _is_pilot_pause(node.func) and (node.args or node.keywords):
            self._add(node, f"{ast.unparse(node.func)}({_arguments(node)})")
        else:
            self.visit(node.func)
        for child in [*node.args, *node.keywords]:
            self.visit(child)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._sleep_of(node) is not None:  # passed on uncalled: `run_in_executor(None, ...)`
            self._add(node, ast.unparse(node))
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and node.id in self.functions:
            self._add(node, node.id)


def _is_pilot_pause(func: ast.expr) -> bool:
    """`pilot.pause` (or `self.pilot.pause`, `app_pilot.pause`)."""
    if not (isinstance(func, ast.Attribute) and func.attr == "pause"):
        return False
    owner = func.value
    name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", "")
    return str(name).endswith("pilot")


def _arguments(node: ast.Call) -> str:
    return ", ".join([*map(ast.unparse, node.args), *map(ast.unparse, node.keywords)])


def fixed_sleeps(source: str, name: str = "<source>") -> list[str]:
    """`name:line: what` for each fixed sleep in `source` whose lines carry no marker."""
    finder = _Finder()
    finder.visit(ast.parse(source, name))
    lines = source.splitlines()
    return [
        f"{name}:{first}: {what}"
        for first, last, what in sorted(finder.found)
        if not any(MARKER in line for line in lines[first - 1 : last])
    ]


def test_no_test_sleeps_a_fixed_time_before_it_looks() -> None:
    found = [
        hit
        for path in sorted(TESTS.rglob("*.py"))
        if path not in HELPERS
        for hit in fixed_sleeps(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS)))
    ]
    assert not found, (
        "fixed sleeps (wait on the condition with tests/waiting.py or tests/tui/pilot_wait.py; "
        f"a delay that is the behaviour under test says `{MARKER} why` on its line):\n"
        + "\n".join(found)
    )


PLANTED = """\
import asyncio
import time
from time import sleep as nap


def test_it(flag) -> None:
    start_worker()
    time.sleep(0.1)
    assert flag.is_set()


async def test_async(pilot, loop) -> None:
    await asyncio.sleep(0)  # only yields
    await asyncio.sleep(0.5)
    await asyncio.sleep(delay)
    await pilot.pause()  # waits for the app to be idle
    await pilot.pause(0.3)
    nap(1)
    await loop.run_in_executor(None, time.sleep, 1)
    code = "import time; time.sleep(5)"  # a child's script: a string, not a call
"""


def test_the_scan_finds_a_sleep_before_an_assertion() -> None:
    assert fixed_sleeps(PLANTED, "planted.py") == [
        "planted.py:8: time.sleep(0.1)",
        "planted.py:14: asyncio.sleep(0.5)",
        "planted.py:15: asyncio.sleep(delay)",
        "planted.py:17: pilot.pause(0.3)",
        "planted.py:18: time.sleep(1)",
        "planted.py:19: time.sleep",
    ]


def test_a_scripted_delay_that_says_so_is_not_a_finding() -> None:
    marked = "import time\n\ntime.sleep(0.1)  # scripted delay: the slow client under test\n"
    assert fixed_sleeps(marked) == []
    assert fixed_sleeps(marked.replace("# scripted delay:", "# a slow client:")) == [
        "<source>:3: time.sleep(0.1)"
    ]
