"""No import cycles inside `sandbox/`, counting every import: lazy, TYPE_CHECKING and relative."""

from __future__ import annotations

import ast
from pathlib import Path

import sandbox.errors
import sandbox.runtimes.base

ROOT = Path(__file__).resolve().parents[2]


def module_files(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package `__init__`) for every module under `package`."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> the modules of `package` its import statements load, wherever they stand.

    `from a import b` counts `a.b` when that is a module; importing `a.b.c` also runs the
    packages `a` and `a.b`, except those the importer itself lives in (already loading).
    """
    modules = module_files(root, package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        here = name if is_package else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        edges: set[str] = set()
        for target in targets:
            module = known(target)
            if module is None:
                continue
            parts = module.split(".")
            for depth in range(1, len(parts) + 1):
                loaded = ".".join(parts[:depth])
                if loaded in modules and not (name + ".").startswith(loaded + "."):
                    edges.add(loaded)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for after in graph[node]:
            if after not in index:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], index[after])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_sandbox_has_no_import_cycle() -> None:
    graph = import_graph(ROOT, "sandbox")
    assert "sandbox.errors" in graph["sandbox.client"]
    assert cycles(graph) == []


def test_client_and_runtime_base_do_not_import_each_other() -> None:
    graph = import_graph(ROOT, "sandbox")
    assert "sandbox.runtimes.base" not in graph["sandbox.client"]
    assert "sandbox.client" not in graph["sandbox.runtimes.base"]


def test_runtime_base_still_exports_the_errors() -> None:
    assert sandbox.runtimes.base.SandboxError is sandbox.errors.SandboxError
    assert sandbox.runtimes.base.SandboxConnectionError is sandbox.errors.SandboxConnectionError


def test_the_scanner_finds_lazy_type_checking_and_relative_cycles(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub import c\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n"
    )
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "sub" / "c.py").write_text("from ..a import x\n")
    (pkg / "d.py").write_text("import pkg.sub.c\n")
    graph = import_graph(tmp_path, "pkg")
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert graph["pkg.d"] == {"pkg.sub", "pkg.sub.c"}  # the package runs first
    assert graph["pkg.sub.c"] == {"pkg.a"}  # its own packages are already loading
    (pkg / "a.py").write_text("import pkg.sub\n")
    assert ["pkg.a", "pkg.sub", "pkg.sub.c"] in cycles(import_graph(tmp_path, "pkg"))
