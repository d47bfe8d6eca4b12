"""No import cycles inside `sandbox/`, counting every import: lazy, TYPE_CHECKING and relative."""

from __future__ import annotations

from pathlib import Path

from import_graph import cycles, import_graph

import sandbox.errors
import sandbox.runtimes.base

ROOT = Path(__file__).resolve().parents[2]


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
