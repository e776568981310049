"""The package's architecture, read from its imports: data flows one way (records -> catalog ->
git store -> index -> KnowledgeBase -> CLI / MCP / server), with no import cycle, and Whoosh,
GitPython and subprocesses kept to the packages whose job they are (docs/architecture.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "slayer_kb"
# Lower layers never import higher ones. The interfaces (last) may use one another: the server
# runs CLI commands, the CLI starts and stops the server.
LAYERS = [
    {"core"}, {"catalog"}, {"store"}, {"search"}, {"transaction"}, {"ops"}, {"kb"},
    {"cli", "mcp", "daemon", "entry", "__init__", "__main__"},
]
RANK = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}


def _name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str) -> str:
    """The layer a module belongs to: its subpackage, or its own name at the top."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _exists(module: str) -> bool:
    base = PACKAGE.parent / module.replace(".", "/")
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) for every import run at run time (not those
    under ``if TYPE_CHECKING:``), at module level or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            typing_only.update(id(n) for part in node.body for n in ast.walk(part))
    module = _name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [alias.name for alias in node.names]
            submodules = [f"{target}.{n}" for n in names if _exists(f"{target}.{n}")]
            found += [(sub, []) for sub in submodules] or [(target, names)]
            if submodules and len(submodules) < len(names):
                found.append((target, [n for n in names if not _exists(f"{target}.{n}")]))
    return found


PATHS = {_name(path): path for path in sorted(PACKAGE.rglob("*.py")) if "example" not in path.parts}
MODULES = {name: _imports(path) for name, path in PATHS.items()}


def _internal(module: str) -> list[str]:
    return [target for target, _names in MODULES[module] if target.startswith("slayer_kb.") and target in MODULES]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_module_imports_a_higher_layer(module: str) -> None:
    rank = RANK[_part(module)]
    above = [t for t in _internal(module) if RANK[_part(t)] > rank]
    assert not above, f"{module} (layer {_part(module)}) imports {above}, above it"


def test_no_import_cycle() -> None:
    graph = {m: set(_internal(m)) - {m} for m in MODULES}
    visiting: list[str] = []
    done: set[str] = set()

    def visit(module: str) -> None:
        if module in visiting:
            cycle = visiting[visiting.index(module):] + [module]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        visiting.append(module)
        for target in sorted(graph[module]):
            # A package's __init__ importing its own modules is how a package is made.
            if not module.startswith(target + "."):
                visit(target)
        visiting.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)


def _users(top_level: str) -> set[str]:
    return {m for m, found in MODULES.items() if any(t.split(".")[0] == top_level for t, _n in found)}


def test_whoosh_is_imported_only_by_the_search_package() -> None:
    assert {_part(m) for m in _users("whoosh")} == {"search"}


# The only module that reaches into Whoosh's private structures; tests/test_whoosh_contract.py
# checks each of its assumptions.
WHOOSH_DOOR = "slayer_kb.search.whoosh_internals"
# Whoosh's public API as the rest of the package uses it. A name to add here must be public in
# Whoosh's documentation; anything else goes through WHOOSH_DOOR, with a contract test.
WHOOSH_PUBLIC = {
    "whoosh": {"index", "query"},
    "whoosh.analysis": {"STOP_WORDS", "Analyzer", "StemmingAnalyzer", "Token"},
    "whoosh.analysis.tokenizers": {"default_pattern"},
    "whoosh.fields": {"ID", "KEYWORD", "STORED", "TEXT", "Schema"},
    "whoosh.idsets": {"BitSet"},
    "whoosh.index": {"LockError"},
    "whoosh.lang.porter": {"stem"},
    "whoosh.reading": {"SegmentReader"},
    "whoosh.scoring": {"BM25F", "BM25FScorer", "WeightScorer"},
    "whoosh.searching": {"Searcher"},
    "whoosh.writing": {"MERGE_SMALL"},
}


def test_only_the_whoosh_door_imports_whoosh_internals() -> None:
    taken = {
        (m, target, name) for m, found in MODULES.items() if m != WHOOSH_DOOR for target, names in found
        if target.split(".")[0] == "whoosh"
        for name in names or ["(the module)"] if name not in WHOOSH_PUBLIC.get(target, set())
    }
    assert taken == set(), f"use Whoosh's public API, or add a function to {WHOOSH_DOOR} with a contract test"


# Private names of the standard library that are its documented API.
PUBLIC_UNDERSCORED = {"_exit"}


def _defined(tree: ast.Module) -> set[str]:
    """The names a module defines: its functions, classes and variables, attributes it sets on
    ``self`` or ``cls``, and names it spells out (``__slots__``, ``getattr``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
    return names


def _private_reaches(source: str) -> list[str]:
    """Each ``x._name`` of ``source`` whose ``_name`` it does not define."""
    tree = ast.parse(source)
    own = _defined(tree) | PUBLIC_UNDERSCORED
    return sorted({
        ast.unparse(node) for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
        and node.attr not in own
    })


@pytest.mark.parametrize("module", sorted(set(MODULES) - {WHOOSH_DOOR}))
def test_no_module_reaches_into_private_names_it_does_not_define(module: str) -> None:
    """``x._name`` only where this module defines ``_name``: not another slayer_kb module's
    private name (give it a public one), not Whoosh's (go through WHOOSH_DOOR), not one a
    superclass in another module defines."""
    assert _private_reaches(PATHS[module].read_text(encoding="utf-8")) == []


def test_the_private_name_check_sees_reaches() -> None:
    source = (
        "import relay\nclass A:\n    __slots__ = ('_slot',)\n    def f(self, ix):\n        self._mine = 1\n"
        "        return self._mine, self._slot, relay._LENGTH, ix._read_toc(), self._inherited, os._exit\n"
    )
    assert _private_reaches(source) == ["ix._read_toc", "relay._LENGTH", "self._inherited"]
