"""The package's imports respect the layer table of ``docs/DEVELOPING.md``, and form no circle.

Every ``.py`` file of ``python/witprobe`` and ``kernels`` (installed as ``witprobe.kernels``) is
parsed with ``ast``; every import counts: module-level, function-level (lazy), relative, and under
``if TYPE_CHECKING:``. The layer order is read from the one table in ``docs/DEVELOPING.md``
(section "Layers and the allowed import directions"), so it is written down once.

- an import may point to the importer's own layer or to a layer listed before it (never after);
- the imports that run (all but ``TYPE_CHECKING`` ones) form no circle between modules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "witprobe"
SOURCES = {PACKAGE: ROOT / "python" / "witprobe", f"{PACKAGE}.kernels": ROOT / "kernels"}
TABLE_DOC = ROOT / "docs" / "DEVELOPING.md"
TABLE_HEADING = "## Layers and the allowed import directions"


def layer_table(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """``(layer, entries)`` of each row of the table under :data:`TABLE_HEADING`, in order."""
    lines = text.split(TABLE_HEADING, 1)[1].splitlines()
    rows = []
    for line in lines[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or not cells[0].isdigit():
            continue
        rows.append((int(cells[0]), tuple(re.findall(r"`(witprobe(?:\.[A-Za-z0-9_]+)*)`", cells[1]))))
    assert rows and [n for n, _ in rows] == list(range(1, len(rows) + 1)), "layers must be numbered 1, 2, ..."
    return rows


def layer_of(module: str, table: list[tuple[int, tuple[str, ...]]]) -> int | None:
    """The layer of the longest entry that is ``module`` or a package holding it (the bare package
    name matches only its ``__init__``)."""
    best: tuple[int, int] | None = None
    for layer, entries in table:
        for e in entries:
            if module == e or (e != PACKAGE and module.startswith(e + ".")):
                if best is None or len(e) > best[0]:
                    best = (len(e), layer)
    return None if best is None else best[1]


def modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package ``__init__``) of every module of the package."""
    out = {}
    for prefix, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            name = ".".join([prefix] + (parts[:-1] if is_pkg else parts))
            out[name] = (path, is_pkg)
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST, typing_only: bool = False) -> Iterator[tuple[ast.stmt, bool]]:
    """Every import statement under ``tree`` (any depth), with whether it sits under ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, typing_only
        elif isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.body:
                yield from _import_nodes(ast.Module(body=[child], type_ignores=[]), True)
            for child in node.orelse:
                yield from _import_nodes(ast.Module(body=[child], type_ignores=[]), typing_only)
        else:
            yield from _import_nodes(node, typing_only)


def imports_of(source: str, module: str, is_pkg: bool, known: set[str]) -> set[tuple[str, bool]]:
    """``(imported module, typing only)`` for each package module that ``source`` imports.

    A name is resolved to the longest known module it starts with: ``from a.b import c`` imports
    ``a.b.c`` when that is a module, else ``a.b``; relative imports are resolved against ``module``.
    """
    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    package = module if is_pkg else module.rpartition(".")[0]
    found = set()
    for node, typing_only in _import_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in known else origin for a in node.names]
        for t in targets:
            if t == PACKAGE or t.startswith(PACKAGE + "."):
                r = resolve(t)
                if r is not None and r != module:
                    found.add((r, typing_only))
    return found


def import_graph() -> dict[str, set[tuple[str, bool]]]:
    mods = modules()
    known = set(mods)
    return {m: imports_of(path.read_text(encoding="utf-8"), m, is_pkg, known) for m, (path, is_pkg) in mods.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


@pytest.fixture(scope="module")
def table():
    return layer_table(TABLE_DOC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_every_module_has_a_layer(table, graph):
    missing = sorted(m for m in graph if layer_of(m, table) is None)
    assert not missing, f"modules in no row of the layer table of {TABLE_DOC.name}: {missing}"


def test_no_import_points_to_a_higher_layer(table, graph):
    upward = sorted(
        f"{m} (layer {layer_of(m, table)}) imports {t} (layer {layer_of(t, table)})"
        + (" under TYPE_CHECKING" if typing_only else "")
        for m, targets in graph.items() for t, typing_only in targets
        if (layer_of(t, table) or 0) > (layer_of(m, table) or 0)
    )
    assert not upward, "imports against the layer order of docs/DEVELOPING.md:\n" + "\n".join(upward)


def test_no_import_circle(graph):
    runtime = {m: {t for t, typing_only in targets if not typing_only} for m, targets in graph.items()}
    found = circles(runtime)
    assert not found, "import circles (modules that import one another, directly or through others):\n" + "\n".join(
        " <-> ".join(c) for c in found)


def test_the_parser_sees_lazy_relative_and_type_checking_imports():
    known = {"witprobe", "witprobe.a", "witprobe.a.b", "witprobe.a.c", "witprobe.d"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from . import c\n"
        "if TYPE_CHECKING:\n    from witprobe.d import Thing\n"
        "def f():\n    from ..d import x\n    import witprobe.a.c.missing\n"
    )
    assert imports_of(source, "witprobe.a.b", False, known) == {
        ("witprobe.a.c", False), ("witprobe.d", True), ("witprobe.d", False)}
    assert circles({"x": {"y"}, "y": {"z"}, "z": {"x"}, "w": {"x"}}) == [["x", "y", "z"]]
