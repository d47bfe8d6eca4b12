"""Agent skills: plain functions the agent calls in its IPython kernel; they print what they find.

The jupyter executor runs `from sandbox.skills import *` when a kernel starts, so everything in
`__all__` is at hand there; `describe_skills()` documents them for the agent's system prompt.

- `viewer`: `open_file`, `goto_line`, `scroll_down`, `scroll_up`, `create_file` (one current file).
- `search`: `search_dir`, `search_file`, `find_file` (outputs capped, the rest counted).
Imports stay light: this module loads in every kernel.
"""

from __future__ import annotations

import inspect
import textwrap

from sandbox.skills.search import find_file, search_dir, search_file
from sandbox.skills.viewer import create_file, goto_line, open_file, scroll_down, scroll_up

__all__ = [  # noqa: RUF022 -- the order the agent reads them in
    "open_file",
    "goto_line",
    "scroll_down",
    "scroll_up",
    "create_file",
    "search_dir",
    "search_file",
    "find_file",
]


def describe_skills() -> str:
    """Every skill in `__all__` with its signature and docstring, as text for a prompt."""
    entries = []
    for name in __all__:
        function = globals()[name]
        signature = inspect.signature(function, eval_str=True)
        doc = inspect.getdoc(function) or ""
        entries.append(f"{name}{signature}\n{textwrap.indent(doc, '    ')}")
    return "\n".join(entries)
