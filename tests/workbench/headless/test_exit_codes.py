"""The exit-code table: every status mapped once, and the doc and `--help` made from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import get_args

from workbench import exit_codes
from workbench.cli.main import build_parser
from workbench.exit_codes import DESCRIPTIONS, TABLE, Status, exit_code, markdown_table

ROOT = Path(__file__).resolve().parents[3]
REGENERATE = "python -m workbench.exit_codes --markdown"


def test_every_status_has_exactly_one_code() -> None:
    statuses = [status for row in TABLE for status in row.statuses]
    assert sorted(statuses) == sorted(get_args(Status))
    assert len({row.code for row in TABLE}) == len(TABLE)
    assert len({row.name for row in TABLE}) == len(TABLE)


def test_names_and_lookups_follow_the_table() -> None:
    for row in TABLE:
        assert getattr(exit_codes, row.name) == row.code, f"no constant {row.name}"
        assert all(exit_code(status) == row.code for status in row.statuses)
        assert "`" not in DESCRIPTIONS[row.code]  # standard error gets plain text
    assert (
        DESCRIPTIONS[exit_codes.MAX_ITERATIONS] == "the step limit (--max-iterations) was reached"
    )


def _doc_table(doc: str) -> str:
    """The lines of the first table after the "## Exit codes" heading."""
    lines = doc.split("## Exit codes\n", 1)[1].splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return "".join(lines[start:end])


def test_the_doc_table_is_the_rendered_table() -> None:
    doc = (ROOT / "docs" / "headless.md").read_text(encoding="utf-8")
    assert _doc_table(doc) == markdown_table(), (
        "docs/headless.md's exit-code table differs from workbench/exit_codes.py: replace it "
        f"with the output of `{REGENERATE}`"
    )


def test_the_module_prints_the_table() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "workbench.exit_codes", "--markdown"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == markdown_table()
    wrong = subprocess.run(
        [sys.executable, "-m", "workbench.exit_codes"], capture_output=True, text=True
    )
    assert wrong.returncode == 2 and "--markdown" in wrong.stderr


def test_help_lists_every_code_within_88_columns() -> None:
    help_text = build_parser().format_help()
    listing = help_text.split("exit codes (headless):\n", 1)[1].split("See docs/", 1)[0]
    items = [item for line in listing.splitlines() for item in line.strip().split("   ")]
    assert items == [f"{row.code} {row.label}" for row in TABLE]
    assert max(len(line) for line in listing.splitlines()) <= 88


def test_help_imports_only_the_standard_library() -> None:
    """`--help` stays instant: beside the standard library, only our own packages (its limits
    section asks `sandbox.limits`, standard library only, how this machine applies them)."""
    code = (
        "import contextlib, io, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from workbench.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    assert main(['--help']) == 0\n"
        "assert '130 interrupted' in out.getvalue()\n"
        "names = {name.split('.')[0] for name in sys.modules}\n"
        "ours = {'workbench', 'sandbox', '__main__'}\n"
        "print(sorted(names - set(sys.stdlib_module_names) - ours))\n"
    )
    # -I -S: no site-packages on the path, so anything beyond the standard library would fail
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stdout
