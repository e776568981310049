"""The package's architecture, read from its imports: data flows one way (records -> catalog ->
git store -> index -> KnowledgeBase -> CLI / MCP / server), with no import cycle, and Whoosh,
GitPython and subprocesses kept to the packages whose job they are (docs/architecture.md)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
import typing
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "slayer_kb"
# Lower layers never import higher ones. The interfaces (last) may use one another: the server
# runs CLI commands, the CLI starts and stops the server.
LAYERS = [
    {"core"}, {"catalog"}, {"store"}, {"search"}, {"transaction"}, {"context"}, {"ops"}, {"api"}, {"kb"},
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
    """Not even through imports for the type checker only: a module that names another's types
    depends on it as much (a narrow interface is a ``Protocol`` of its own)."""
    graph = {m: (set(_internal(m)) | {t for t, _n in _typing_imports(PATHS[m]) if t in MODULES}) - {m}
             for m in MODULES}
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


def test_gitpython_is_imported_only_by_the_store() -> None:
    assert {_part(m) for m in _users("git")} == {"store"}


def test_subprocesses_are_run_only_where_that_is_the_job() -> None:
    # the store runs git; edit runs the user's editor; the client starts the server.
    assert _users("subprocess") - {m for m in MODULES if _part(m) == "store"} == {
        "slayer_kb.ops.editing", "slayer_kb.daemon.relay",
    }


def test_only_the_store_runs_git() -> None:
    """A module outside store/ may start a process, but never git: it asks the store."""
    runs_git = {
        m for m in MODULES if _part(m) != "store"
        and any(isinstance(node, ast.Constant) and node.value == "git"
                for node in ast.walk(ast.parse(PATHS[m].read_text(encoding="utf-8"))))
    }
    assert runs_git == set()


# Past this a module holds more than one job (the house rule of CONTRIBUTING.md).
MAX_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(PACKAGE.parent)): count for path in PATHS.values()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_no_module_takes_another_modules_private_names() -> None:
    taken = [
        (m, target, name) for m, found in MODULES.items() for target, names in found
        for name in names if target.startswith("slayer_kb") and name.startswith("_") and not name.startswith("__")
    ]
    assert taken == []


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


def test_the_interfaces_reach_the_operations_only_through_the_library() -> None:
    """The CLI and the MCP server call ``KnowledgeBase`` and its objects (api/), never ``ops``."""
    reaching = {
        (m, target) for m in MODULES if _part(m) in {"cli", "mcp"}
        for target, _names in _imports(PATHS[m]) + _typing_imports(PATHS[m]) if target.startswith("slayer_kb.ops")
    }
    assert reaching == set()


def _typing_imports(path: Path) -> list[tuple[str, list[str]]]:
    """The modules a file imports under ``if TYPE_CHECKING:`` (relative imports only)."""
    module = _name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and inner.level:
                    base = package.split(".")[: len(package.split(".")) - inner.level + 1]
                    found.append((".".join(base + ([inner.module] if inner.module else [])), []))
    return found


def _public_methods() -> list[tuple[str, object]]:
    from slayer_kb import kb
    from slayer_kb.api import history, interchange, team

    classes = [kb.KnowledgeBase, history.History, team.Team, interchange.Interchange]
    return [
        (f"{cls.__name__}.{name}", member) for cls in classes for name, member in inspect.getmembers(cls)
        if not name.startswith("_") and inspect.isfunction(member)
    ]


def _handles() -> tuple[type, ...]:
    from slayer_kb.catalog.resolve import Resolver
    from slayer_kb.transaction import Transaction

    return Resolver, Transaction


# Objects the library hands out to work with, not results of an operation.
HANDLES = _handles()


def _untyped(hint: object) -> list[str]:
    """The parts of a return annotation that are not a typed result: ``Any``, a plain ``dict``,
    a class that is neither a dataclass nor a ``TypedDict`` of ``core``."""
    if hint is typing.Any:
        return ["Any"]
    origin = typing.get_origin(hint)
    if origin is dict:
        return [str(hint)]
    if origin is not None:
        return [part for arg in typing.get_args(hint) for part in _untyped(arg)]
    if hint in (type(None), str, int, bool, float, Path, *HANDLES) or not isinstance(hint, type):
        return []
    typed = dataclasses.is_dataclass(hint) or typing.is_typeddict(hint)
    return [] if typed and hint.__module__.startswith("slayer_kb.core.") else [hint.__qualname__]


def _returns(method: object) -> object:
    """The method's return annotation, evaluated in its module (its parameters' may name types
    imported only for the type checker)."""
    annotation = getattr(method, "__annotations__", {}).get("return", "Any")
    module = vars(sys.modules[method.__module__])  # type: ignore[attr-defined]
    return eval(annotation, {"Any": typing.Any, **module}) if isinstance(annotation, str) else annotation


def test_every_public_method_of_the_library_returns_a_typed_result() -> None:
    from slayer_kb.api import checks

    functions = [(f"checks.{name}", f) for name, f in inspect.getmembers(checks, inspect.isfunction)
                 if f.__module__ == checks.__name__]
    untyped = {
        name: found for name, method in _public_methods() + functions
        if (found := _untyped(_returns(method)))
    }
    assert untyped == {}


def test_the_library_binds_no_function_as_a_class_attribute() -> None:
    """A method is defined in its class (``search = finding.search`` would hide its signature
    from the class and make ``list`` shadow the builtin)."""
    bound = [
        name for name, member in _public_methods()
        if member.__qualname__.split(".")[0] != name.split(".")[0]  # type: ignore[attr-defined]
        and not any(member.__qualname__.startswith(base.__name__ + ".")  # type: ignore[attr-defined]
                    for base in _bases(name))
    ]
    assert bound == []


def _bases(qualified: str) -> list[type]:
    from slayer_kb import kb

    return list(kb.KnowledgeBase.__mro__) if qualified.startswith("KnowledgeBase.") else []


def _started_modules(module: str) -> list[str]:
    """The modules ``module`` starts as background Python processes (``python_child(MODULE)``,
    or ``upkeep.detach(MODULE)``, which passes its argument on)."""
    tree = ast.parse(PATHS[module].read_text(encoding="utf-8"))
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) for target in node.targets if isinstance(target, ast.Name)}
    started = []
    for node in ast.walk(tree):
        called = node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else (
            node.func.attr if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None)
        if called in ("python_child", "detach") and isinstance(node, ast.Call):
            arg = node.args[0]
            if isinstance(arg, ast.Constant):
                started.append(arg.value)
            elif isinstance(arg, ast.Name) and (arg.id == "__name__" or arg.id in constants):
                started.append(module if arg.id == "__name__" else constants[arg.id])
            # else a parameter passed on (upkeep.detach's own): its callers are checked
    return started


def test_background_jobs_are_modules_started_with_python_m() -> None:
    """A child Python process runs a module's ``main`` (``python -I -m``, core/children.py),
    never a ``python -c`` string the architecture test cannot see."""
    uses_executable = {
        m for m in MODULES for node in ast.walk(ast.parse(PATHS[m].read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute) and node.attr == "executable"
        and isinstance(node.value, ast.Name) and node.value.id == "sys"
    }
    assert uses_executable == {"slayer_kb.core.children"}
    started = {m: found for m in MODULES if (found := _started_modules(m))}
    assert started == {
        "slayer_kb.daemon.relay": ["slayer_kb.daemon.server"],
        "slayer_kb.store.mergedriver": ["slayer_kb.store.mergedriver"],
        "slayer_kb.search.filler": ["slayer_kb.daemon.sentences"],
        "slayer_kb.store.upkeep": ["slayer_kb.store.upkeep"],
        "slayer_kb.transaction": ["slayer_kb.daemon.compact"],
    }
    for target in {t for found in started.values() for t in found}:
        tree = ast.parse(PATHS[target].read_text(encoding="utf-8"))
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), target


def test_every_part_has_a_layer() -> None:
    assert {_part(m) for m in MODULES} <= set(RANK)


def test_the_private_name_check_sees_reaches() -> None:
    source = (
        "import relay\nclass A:\n    __slots__ = ('_slot',)\n    def f(self, ix):\n        self._mine = 1\n"
        "        return self._mine, self._slot, relay._LENGTH, ix._read_toc(), self._inherited, os._exit\n"
    )
    assert _private_reaches(source) == ["ix._read_toc", "relay._LENGTH", "self._inherited"]
