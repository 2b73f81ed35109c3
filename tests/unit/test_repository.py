"""Repository hygiene: no import cycles between modules of src/odradek, and every relative link in the
README and docs/ resolves inside the repository (a user clones only this repository)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "odradek"


def _module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """Modules of ours that `path` imports at run time (imports under `if TYPE_CHECKING:` excluded)."""
    found: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            found.update(a.name for a in node.names if a.name in modules)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            if node.module in modules:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules)

    Visitor().visit(ast.parse(path.read_text()))
    return found


def import_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Strongly connected components of more than one module in the import graph (Tarjan)."""
    paths = {_module_name(p, package): p for p in package.rglob("*.py")}
    graph = {name: _imports(path, set(paths)) - {name} for name, path in paths.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return cycles


def test_no_import_cycles() -> None:
    assert import_cycles() == []


def test_cycle_finder_sees_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "odradek"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from odradek import b\n")
    (pkg / "b.py").write_text("from odradek.a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from odradek import a\n")
    assert import_cycles(pkg) == [["odradek.a", "odradek.b"]]


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_relative_links_resolve_inside_the_repository() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if re.match(r"^[a-z]+:", target):
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []
