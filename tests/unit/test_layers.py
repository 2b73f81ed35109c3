"""The package layers of src/odradek (docs/DESIGN.md, "Layers"): a package imports only from its own layer
and the layers below it. Every import counts: at module level, inside functions (lazy imports), under
`if TYPE_CHECKING:`, and `importlib.import_module` / `__import__` of a literal name. (A module name held
in a variable, as in the `odradek` command's tool table, is not seen.)

A failure names the importing module, the line and the imported module. To place a new package, add it
to LAYERS; an upward import is fixed by moving code down, not by widening ALLOWED.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PACKAGE = "odradek"


class Layer(NamedTuple):
    packages: tuple[str, ...]
    independent: bool = False  # its packages may not import one another


# Lowest first: the top-level modules and packages of `odradek` (and the `pyspark_odradek` shim beside it).
LAYERS: list[Layer] = [
    # helpers and the key catalogue: no imports of ours
    Layer(("aio", "fsutil", "interrupts", "java_text", "config_keys", "ratelog")),
    Layer(("config_key_types",)),  # generated from the catalogue
    Layer(("protocol",)),
    Layer(("linear_regex",)),  # the engine of client-sent patterns: groups, server, console and cli use it
    Layer(("config",)),
    Layer(("storage",)),
    Layer(("cluster",)),
    Layer(("replication",)),
    Layer(("security",)),
    # the coordinators, on `coordinator`, the runtime of the internal-topic-backed state
    Layer(("coordinator", "groups", "txn")),
    Layer(("server",)),
    Layer(("serde",)),  # clients' side of a schema registry: the wire format, a REST client, Avro
    Layer(("admin_client", "spark"), independent=True),
    Layer(("pipelines", "connect", "schema_registry"), independent=True),
    Layer(("cli", "console", "pyspark_odradek"), independent=True),
]

# Known upward imports (importer, imported module), each to be deleted with the change that removes it
# (test_allow_list_is_current fails once one is stale). None today: the coordinator runtime took the last
# ones away (groups/ and txn/ used the server's internal-topic machinery and the Broker).
ALLOWED: set[tuple[str, str]] = set()


class Import(NamedTuple):
    importer: str  # module name
    path: Path
    line: int
    imported: str  # module name


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def source_files() -> list[Path]:
    files = sorted((SRC / PACKAGE).rglob("*.py"))
    shim = SRC / "pyspark_odradek"
    files += sorted(shim.rglob("*.py")) if shim.is_dir() else [p for p in [SRC / "pyspark_odradek.py"] if p.exists()]
    return files


def imports_of(path: Path) -> list[Import]:
    """Every import of an `odradek` module in `path`, wherever it sits in the file."""
    importer = module_name(path)
    package = importer.split(".") if path.name == "__init__.py" else importer.split(".")[:-1]
    found: list[Import] = []

    def add(name: str | None, node: ast.AST) -> None:
        if name and (name == PACKAGE or name.startswith(PACKAGE + ".")):
            found.append(Import(importer, path, getattr(node, "lineno", 0), name))

    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                # `from odradek import config` / `from odradek.server import tls` import modules by name
                submodule = f"{module}.{alias.name}"
                add(submodule if alias.name != "*" and is_module(submodule) else module, node)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = ast.unparse(node.func)
            if func in ("importlib.import_module", "import_module", "__import__") and isinstance(node.args[0].value, str):
                add(node.args[0].value, node)
    return found


def is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def top_package(module: str) -> str:
    """`odradek.server.tls` -> `server`; `pyspark_odradek.x` -> `pyspark_odradek`; the root `odradek` -> ''."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return parts[0]
    return parts[1] if len(parts) > 1 else ""


def layer_index() -> dict[str, int]:
    index = {"": -1}  # the root package (`odradek.__version__`): below everything
    for i, layer in enumerate(LAYERS):
        for name in layer.packages:
            index[name] = i
    return index


def violations(files: list[Path]) -> list[str]:
    index = layer_index()
    problems = []
    for path in files:
        for imp in imports_of(path):
            src, dst = top_package(imp.importer), top_package(imp.imported)
            where = f"{imp.path.relative_to(ROOT)}:{imp.line}: {imp.importer} imports {imp.imported}"
            if src not in index:
                problems.append(f"{where}: package '{src}' is in no layer (add it to LAYERS in {__name__})")
                continue
            if dst not in index:
                problems.append(f"{where}: package '{dst}' is in no layer (add it to LAYERS in {__name__})")
                continue
            if src == dst or _allowed(imp):
                continue
            if index[dst] > index[src]:
                problems.append(f"{where}: upward import ('{src}' is below '{dst}')")
            elif index[dst] == index[src] and LAYERS[index[src]].independent:
                problems.append(f"{where}: '{src}' and '{dst}' are independent (same layer)")
    return problems


def _allowed(imp: Import) -> bool:
    return any(imp.importer == a and (imp.imported == b or imp.imported.startswith(b + ".")) for a, b in ALLOWED)


def test_packages_import_only_from_lower_layers() -> None:
    problems = violations(source_files())
    assert not problems, "imports against the layers:\n" + "\n".join(problems)


def test_every_package_is_in_a_layer() -> None:
    index = layer_index()
    missing = sorted({top_package(module_name(p)) for p in source_files()} - set(index))
    assert not missing, f"packages in no layer: {missing} (add them to LAYERS)"


def test_allow_list_is_current() -> None:
    seen = {(imp.importer, imp.imported) for path in source_files() for imp in imports_of(path)}
    stale = sorted((a, b) for a, b in ALLOWED
                   if not any(i == a and (m == b or m.startswith(b + ".")) for i, m in seen))
    assert not stale, f"ALLOWED lists imports that no longer exist, delete them: {stale}"


def test_checker_sees_lazy_type_only_and_relative_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = tmp_path / "src"
    (src / PACKAGE / "storage").mkdir(parents=True)
    (src / PACKAGE / "cli").mkdir()
    for init in (src / PACKAGE / "__init__.py", src / PACKAGE / "storage" / "__init__.py",
                 src / PACKAGE / "cli" / "__init__.py"):
        init.write_text("")
    (src / PACKAGE / "cli" / "tool.py").write_text("from odradek.storage import log\n")  # downward: fine
    bad = src / PACKAGE / "storage" / "log.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from odradek.server.broker import Broker\n"
        "def f():\n"
        "    from ..cli import tool\n"
        "    import importlib\n"
        "    importlib.import_module('odradek.console.app')\n"
        "from odradek import protocol\n"  # downward: fine
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "SRC", src)
    problems = violations(sorted((src / PACKAGE).rglob("*.py")))
    assert [p.split(": ")[0] for p in problems] == [f"src/{PACKAGE}/storage/log.py:{n}" for n in (3, 5, 7)]
    assert "odradek.storage.log imports odradek.server.broker" in problems[0]
    assert "odradek.storage.log imports odradek.cli.tool" in problems[1]
    assert "odradek.storage.log imports odradek.console.app" in problems[2]
