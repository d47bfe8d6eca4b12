"""Layering rules: `sandbox` never imports `workbench`; only `workbench/tui` imports textual;
no import cycle anywhere; the two front ends never import each other."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from import_graph import cycles, import_graph

ROOT = Path(__file__).resolve().parents[1]


def modules_of(package: str) -> list[str]:
    """Dotted names of every module file in a package folder."""
    names = []
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.append(".".join(parts))
    return names


def imported_names(path: Path) -> set[str]:
    """Every module an `import` or `from ... import` in the file names (lazy ones included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def top(name: str) -> str:
    return name.split(".", 1)[0]


def test_importing_sandbox_never_imports_workbench_or_textual() -> None:
    modules = modules_of("sandbox")
    assert "sandbox.server" in modules and "sandbox.runtimes.local" in modules
    script = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('workbench', 'textual'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1]) == []


def test_sandbox_sources_never_name_workbench() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            n for n in imported_names(path) if top(n) == "workbench"
        )
        for path in (ROOT / "sandbox").rglob("*.py")
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_only_the_tui_imports_textual() -> None:
    tui = ROOT / "workbench" / "tui"
    offenders = {}
    for package in ("workbench", "sandbox"):
        for path in (ROOT / package).rglob("*.py"):
            if path.is_relative_to(tui):
                continue
            names = sorted(
                n for n in imported_names(path) if top(n) in ("textual", "textual_image")
            )
            if names:
                offenders[str(path.relative_to(ROOT))] = names
    assert offenders == {}


def test_the_scanner_sees_lazy_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from textual.app import App\n    import workbench.x\n")
    assert {"textual.app", "workbench.x"} <= imported_names(sample)


def test_no_import_cycle_in_workbench_and_sandbox() -> None:
    graph = import_graph(ROOT, "workbench", "sandbox")
    assert (
        "workbench.tools.registry" in graph["workbench.controller.loop"]
    )  # the scan sees the tree
    assert "sandbox.protocol" in graph["workbench.events"]  # and across the two packages
    assert cycles(graph) == []


def test_the_front_ends_never_import_each_other() -> None:
    graph = import_graph(ROOT, "workbench", "sandbox")
    tui = {name for name in graph if name.startswith("workbench.tui")}
    assert "workbench.tui.bridge" in tui
    assert not graph["workbench.headless.runner"] & tui
    assert not graph["workbench.headless.output"] & tui
    for name in tui:
        assert not graph[name] & {"workbench.headless.runner", "workbench.headless.output"}, name


def _calls(path: Path) -> set[str]:
    """The dotted names called in a file (`Controller`, `SessionLog.create`, ...)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Call):
            names.add(ast.unparse(node.func))
    return names


def test_one_module_opens_sessions() -> None:
    graph = import_graph(ROOT, "workbench", "sandbox")
    assert "workbench.session.opening" in graph["workbench.headless.runner"]
    assert "workbench.session.opening" in graph["workbench.tui.bridge"]
    openers = {
        str(path.relative_to(ROOT))
        for path in (ROOT / "workbench").rglob("*.py")
        if _calls(path) & {"Controller", "SessionLog.create", "make_header", "create_runtime"}
    }
    assert openers == {"workbench/session/opening.py"}
