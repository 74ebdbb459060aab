"""The layers of ``docs/architecture.md`` hold: no upward import, no import cycle.

What is walked: every ``.py`` file under ``src/hiddenstate`` is one module (a package is its
``__init__.py``, named after the package). Its syntax tree is walked whole, so **every**
``import`` / ``from ... import`` statement counts wherever it stands: at module level, inside
a function or method (the "lazy" import that hid the old cycles), in a class body, under
``if TYPE_CHECKING:`` and in ``try``/``except ImportError``. A type-checking import counts
because it is still a dependency of the code's meaning (the annotation names a class of the
other layer), and because "only for typing" is how an upward dependency starts.

What an import points to (only imports of ``hiddenstate`` itself count; numpy, torch,
Dask's ``distributed`` are not walked): relative imports are resolved against the importing
module's package; ``import a.b.c`` and ``from a.b import c`` point to the module ``a.b.c``
if that module exists, otherwise ``from a.b import c`` points to ``a.b`` (``c`` is a name
defined in, or re-exported by, ``a.b``). The parents a Python import also executes
(``hiddenstate/__init__.py`` for every import) are not edges: they are implied by the
package tree, not by the code. An import of a ``hiddenstate`` module that does not exist is
an error.

What is checked against the layer table of ``docs/architecture.md`` (ranks, module
patterns):

- every module matches exactly one row;
- no module imports a module of a higher rank ("no upward import");
- no import cycle: the strongly connected components of the module graph (the edges
  above) all have one module; an edge of a module to itself does not count (a package
  ``__init__`` that imports from its own submodules has edges to them, not to itself).
"""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TABLE_DOC = ROOT / "docs" / "architecture.md"
PACKAGE = "hiddenstate"


@dataclass(frozen=True)
class Module:
    name: str        # dotted: hiddenstate.models.hmm
    rel: str         # path under the package root: models/hmm.py
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    nested: bool     # inside a function, class or block, not a plain top-level statement

    def where(self, modules: dict[str, Module]) -> str:
        kind = "nested" if self.nested else "top-level"
        return f"{modules[self.source].rel}:{self.line} ({kind})"


def read_layer_table(doc: Path = TABLE_DOC) -> list[tuple[int, str, list[str]]]:
    """``(rank, layer, patterns)`` rows of the table between the ``layer-table`` markers."""
    text = doc.read_text(encoding="utf-8")
    m = re.search(r"<!-- layer-table:.*?-->(.*?)<!-- end layer-table -->", text, re.S)
    assert m, f"{doc}: no <!-- layer-table: ... --> ... <!-- end layer-table --> block"
    rows = []
    for line in m.group(1).strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].isdigit():
            continue  # header and separator rows
        rows.append((int(cells[0]), cells[1], re.findall(r"`([^`]+)`", cells[2])))
    assert rows, f"{doc}: the layer table has no rows"
    return rows


def find_modules(src: Path = SRC, package: str = PACKAGE) -> dict[str, Module]:
    root = src / package
    out = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = [package, *rel.with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        name = ".".join(parts)
        out[name] = Module(name, rel.as_posix(), path, is_package)
    return out


def _nested_nodes(tree: ast.Module) -> set[int]:
    """ids of the import nodes that are not plain top-level statements."""
    top = {id(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}
    return {id(node) for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top}


def imports_of(module: Module, modules: dict[str, Module], package: str = PACKAGE) -> list[Edge]:
    """Every edge out of ``module`` (see the module docstring for what counts)."""
    tree = ast.parse(module.path.read_text(encoding="utf-8"), filename=str(module.path))
    nested = _nested_nodes(tree)
    edges = []

    def add(target: str, node) -> None:
        if not (target == package or target.startswith(package + ".")):
            return
        if target not in modules:
            raise AssertionError(f"{module.rel}:{node.lineno}: imports {target}, which is not "
                                 f"a module of src/{package}")
        edge = Edge(module.name, target, node.lineno, id(node) in nested)
        if target != module.name and edge not in edges:  # `from m import a, b`: one edge
            edges.append(edge)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.name.split(".")
                if not module.is_package:
                    base = base[:-1]
                if node.level > 1:
                    base = base[:-(node.level - 1)]
                if not base:
                    raise AssertionError(f"{module.rel}:{node.lineno}: relative import beyond "
                                         "the top-level package")
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module
            if not (base_name == package or base_name.startswith(package + ".")):
                continue
            for alias in node.names:
                sub = f"{base_name}.{alias.name}"
                add(sub if sub in modules else base_name, node)
    return edges


def import_graph(src: Path = SRC, package: str = PACKAGE):
    modules = find_modules(src, package)
    edges = [e for m in modules.values() for e in imports_of(m, modules, package)]
    return modules, edges


def rank_of(modules: dict[str, Module], table) -> tuple[dict[str, int], list[str]]:
    """Each module's rank, and the problems: a module matching no row or several."""
    ranks, problems = {}, []
    for name, mod in modules.items():
        rows = [(rank, layer) for rank, layer, pats in table
                if any(fnmatch.fnmatchcase(mod.rel, p) for p in pats)]
        if len(rows) != 1:
            problems.append(f"{mod.rel}: matches {len(rows)} rows of the layer table "
                            f"{rows or ''}; add it to exactly one row of {TABLE_DOC.name}")
        else:
            ranks[name] = rows[0][0]
    return ranks, problems


def upward_imports(modules, edges, ranks, table) -> list[str]:
    layer = {rank: name for rank, name, _ in table}
    out = []
    for e in edges:
        if ranks[e.target] > ranks[e.source]:
            out.append(f"{e.where(modules)}: {e.source} [{ranks[e.source]} "
                       f"{layer[ranks[e.source]]}] imports {e.target} [{ranks[e.target]} "
                       f"{layer[ranks[e.target]]}]")
    return sorted(out)


def cycles(modules, edges) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    succ: dict[str, list[str]] = {m: [] for m in modules}
    for e in edges:
        succ[e.source].append(e.target)
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(succ[nxt])))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def describe_cycle(comp: list[str], modules, edges) -> str:
    inside = set(comp)
    lines = [f"cycle of {len(comp)} modules: {', '.join(comp)}"]
    for e in sorted(edges, key=lambda e: (e.source, e.line)):
        if e.source in inside and e.target in inside:
            lines.append(f"    {e.where(modules)}: {e.source} -> {e.target}")
    return "\n".join(lines)


# -- the checks on hiddenstate ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def graph():
    modules, edges = import_graph()
    table = read_layer_table()
    ranks, problems = rank_of(modules, table)
    return modules, edges, table, ranks, problems


def test_every_module_is_in_exactly_one_layer(graph):
    modules, _, table, _, problems = graph
    assert len(modules) > 50  # the walk found the package
    assert not problems, "\n".join(problems)
    assert len({rank for rank, _, _ in table}) == len(table), "two rows with the same rank"


def test_no_upward_import(graph):
    modules, edges, table, ranks, problems = graph
    if problems:
        pytest.skip("a module has no layer (see test_every_module_is_in_exactly_one_layer)")
    bad = upward_imports(modules, edges, ranks, table)
    assert not bad, f"{len(bad)} upward imports:\n" + "\n".join(bad)


def test_no_import_cycle(graph):
    modules, edges, *_ = graph
    comps = cycles(modules, edges)
    assert not comps, "\n".join(describe_cycle(c, modules, edges) for c in comps)


def test_the_public_face_is_imported_by_nothing(graph):
    """``hiddenstate/__init__.py`` re-exports the library; a module that imports it depends on
    everything (the old ``from .. import __version__`` in the report did)."""
    modules, edges, *_ = graph
    users = [e.where(modules) for e in edges if e.target == PACKAGE]
    assert not users, users


# -- the checker finds what it must find (a tiny package written here) -----------------------------
def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def test_checker_sees_nested_imports_and_resolves_relative_ones(tmp_path):
    """A cycle hidden behind a function-level import, an upward import under ``if
    TYPE_CHECKING``, ``from . import sub`` (a module) and ``from .pkg import name`` (a name of
    the package) are all found; a same-rank import and a third-party import are not
    reported."""
    _write(tmp_path, {
        "toy/__init__.py": "from .high import run\n",
        "toy/low/__init__.py": "from .core import f\n",
        "toy/low/core.py": (
            "from typing import TYPE_CHECKING\nimport numpy\n"
            "if TYPE_CHECKING:\n    from ..high import run\n"
            "def f():\n    from .. import mid\n    return mid\n"),
        "toy/low/peer.py": "from . import core\n",
        "toy/mid.py": "from .low import f\n",
        "toy/high.py": "import toy.low.core\ndef run():\n    pass\n",
    })
    modules, edges = import_graph(tmp_path, "toy")
    got = {(e.source, e.target, e.nested) for e in edges}
    assert got == {
        ("toy", "toy.high", False),
        ("toy.low", "toy.low.core", False),
        ("toy.low.core", "toy.high", True),      # TYPE_CHECKING block
        ("toy.low.core", "toy.mid", True),       # function-level, `from .. import mid`
        ("toy.low.peer", "toy.low.core", False),
        ("toy.mid", "toy.low", False),           # `from .low import f`: f is a name
        ("toy.high", "toy.low.core", False),
    }
    table = [(2, "top", ["__init__.py", "high.py"]), (1, "mid", ["mid.py"]),
             (0, "low", ["low/*"])]
    ranks, problems = rank_of(modules, table)
    assert not problems
    bad = upward_imports(modules, edges, ranks, table)
    assert [b.split(":")[0] for b in bad] == ["low/core.py", "low/core.py"]
    assert cycles(modules, edges) == [["toy.high", "toy.low", "toy.low.core", "toy.mid"]]


def test_checker_flags_unplaced_modules_and_missing_targets(tmp_path):
    _write(tmp_path, {"toy/__init__.py": "", "toy/a.py": "from .b import x\n",
                      "toy/b.py": "x = 1\n", "toy/c.py": "from .nothere import y\n",
                      "toy/sub/d.py": ""})
    modules = find_modules(tmp_path, "toy")
    ranks, problems = rank_of(modules, [(1, "one", ["a.py"]), (0, "rest", ["?.py", "__init__.py"])])
    assert sorted(p.split(":")[0] for p in problems) == ["a.py", "sub/d.py"]  # 2 rows; none
    assert ranks == {"toy": 0, "toy.b": 0, "toy.c": 0}
    with pytest.raises(AssertionError, match="toy.nothere"):
        imports_of(modules["toy.c"], modules, "toy")


if __name__ == "__main__":  # print the graph: python tests/test_layers.py
    mods, es = import_graph()
    rk, _ = rank_of(mods, read_layer_table())
    for e in sorted(es, key=lambda e: (e.source, e.target)):
        print(f"{e.source} [{rk.get(e.source)}] -> {e.target} [{rk.get(e.target)}]  "
              f"{e.where(mods)}", file=sys.stdout)
