"""The import rules follow the packages: each `workbench` package's docstring ends with
`Imports: a, b, c.` (the other packages it may import), and what its modules import is held to
it. The shared top-level modules (`events`, `paths`, ...) import only each other, and anything
may import them. A new package must say its rule; a broken rule names the file that breaks it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from test_import_rules import imported_names

ROOT = Path(__file__).resolve().parents[1]
WORKBENCH = ROOT / "workbench"
SHARED = {"events", "paths", "exit_codes", "display", "event_lines", "safe_text"}
"""The top of `workbench/`: what everything shares (the issue's "events, paths, exit codes")."""
ENTRY = {"__init__", "__main__"}


def packages() -> list[str]:
    """Every package directly under workbench/."""
    return sorted(p.name for p in WORKBENCH.iterdir() if (p / "__init__.py").is_file())


def stated_rule(package: str) -> set[str]:
    """The packages a package's docstring says it may import (`Imports: nothing.` for none)."""
    doc = ast.get_docstring(ast.parse((WORKBENCH / package / "__init__.py").read_text())) or ""
    found = re.search(r"^Imports: (.+?)\.\s*$", doc, re.M | re.S)
    assert found, f"workbench/{package}/__init__.py: its docstring must end with 'Imports: ...'"
    text = found.group(1).replace("\n", " ")
    return set() if text.strip() == "nothing" else {n.strip() for n in text.split(",")}


def unit_of(dotted: str) -> str | None:
    """The package (or shared top-level module) a `workbench.x.y` name belongs to."""
    parts = dotted.split(".")
    if parts[0] != "workbench" or len(parts) < 2:
        return None
    return parts[1]


def imports_of(path: Path) -> set[str]:
    """The workbench units a file imports (`from workbench import x` counts as x)."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "workbench" and node.level == 0:
            found.update(alias.name for alias in node.names)
    for name in imported_names(path):
        unit = unit_of(name)
        if unit is not None:
            found.add(unit)
    return found


def breaches(package: str, allowed: set[str], tree: Path = WORKBENCH) -> dict[str, list[str]]:
    """Files of `package` importing a unit outside `allowed`, the shared ones and itself."""
    out = {}
    for path in sorted((tree / package).rglob("*.py")):
        bad = sorted(imports_of(path) - allowed - SHARED - {package})
        if bad:
            out[str(path.relative_to(tree.parent))] = bad
    return out


def test_the_top_level_holds_only_what_everything_shares() -> None:
    modules = {p.stem for p in WORKBENCH.glob("*.py")}
    assert modules == SHARED | ENTRY
    for name in SHARED:
        bad = imports_of(WORKBENCH / f"{name}.py") - SHARED - {name}
        assert not bad, (
            f"workbench/{name}.py imports {sorted(bad)}: shared modules import only each other"
        )


@pytest.mark.parametrize("package", packages())
def test_each_package_imports_only_what_its_docstring_allows(package: str) -> None:
    allowed = stated_rule(package)
    unknown = allowed - set(packages())
    assert not unknown, f"workbench/{package}: its rule names no package {sorted(unknown)}"
    assert breaches(package, allowed) == {}


def test_the_rules_say_what_the_design_needs() -> None:
    rules = {package: stated_rule(package) for package in packages()}
    front_ends = {"cli", "headless", "tui"}
    for package in ("session", "controller", "checkpoints", "config", "agent", "tools", "llm"):
        assert not rules[package] & front_ends, f"{package} may not import a front end"
        assert "replay" not in rules[package], package
    assert "tui" not in rules["headless"] and "headless" not in rules["tui"]
    assert "cli" not in rules["tui"] and "tui" not in rules["cli"]  # cli opens the TUI by name
    assert rules["checkpoints"].isdisjoint({"controller", "tui"})


def test_a_breach_is_found(tmp_path: Path) -> None:
    """The scan is real: a planted import of a front end in a copy of `session` is named."""
    import shutil

    copy = tmp_path / "workbench"
    shutil.copytree(WORKBENCH / "session", copy / "session")
    assert breaches("session", stated_rule("session"), copy) == {}
    (copy / "session" / "planted.py").write_text("def f():\n    from workbench.tui import app\n")
    assert breaches("session", stated_rule("session"), copy) == {
        "workbench/session/planted.py": ["tui"]
    }
