"""The package's architecture, read from its imports: data flows one way (records -> catalog ->
git store -> index -> KnowledgeBase -> CLI / MCP / server), with no import cycle, Whoosh and
subprocesses kept to the packages whose job they are, and GitPython unused (docs/architecture.md)."""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import re
import sys
import textwrap
import types
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "slayer_kb"
# Lower layers never import higher ones. The interfaces (last) may use one another: the server
# runs CLI commands, the CLI starts and stops the server.
LAYERS = [
    {"core"}, {"catalog"}, {"store"}, {"search"}, {"transaction", "workspace"}, {"context"}, {"ops"}, {"api"}, {"kb"},
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


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once a process: a dozen checks read every module, and
    parsing it again for each was most of this file's CPU. The checks only read the trees."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of ``_tree(path)``, as ``ast.walk`` yields them (walked once a process)."""
    return tuple(ast.walk(_tree(path)))


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module imported, names taken from it) for every import run at run time (not those
    under ``if TYPE_CHECKING:``), at module level or inside functions."""
    typing_only: set[int] = set()
    for node in _nodes(path):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            typing_only.update(id(n) for part in node.body for n in ast.walk(part))
    module = _name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for node in _nodes(path):
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


class _Imports(Mapping[str, list[tuple[str, list[str]]]]):
    """Each module's imports (``_imports``), read when a test first asks: collecting the tests
    needs the names only, and every worker collects every test (parsing it all took a second)."""

    def __getitem__(self, module: str) -> list[tuple[str, list[str]]]:
        return _imports_of(module)

    def __contains__(self, module: object) -> bool:
        return module in PATHS

    def __iter__(self) -> Iterator[str]:
        return iter(PATHS)

    def __len__(self) -> int:
        return len(PATHS)


@functools.cache
def _imports_of(module: str) -> list[tuple[str, list[str]]]:
    return _imports(PATHS[module])


MODULES = _Imports()


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
    assert _cycle(graph) == []


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """A circle of imports in ``graph`` (module -> the modules it imports), [] if none; between
    packages or inside one (a package's ``__init__`` is a module like any other)."""
    visiting: list[str] = []
    done: set[str] = set()

    def visit(module: str) -> list[str]:
        if module in visiting:
            return visiting[visiting.index(module):] + [module]
        if module in done:
            return []
        visiting.append(module)
        for target in sorted(graph[module]):
            if found := visit(target):
                return found
        visiting.pop()
        done.add(module)
        return []

    return next((found for module in sorted(graph) if (found := visit(module))), [])


def test_the_cycle_check_sees_circles_inside_a_package() -> None:
    assert _cycle({"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "q": {"p.a"}}) == ["p.a", "p.b", "p.c", "p.a"]
    assert _cycle({"p": {"p.a"}, "p.a": {"p"}}) == ["p", "p.a", "p"]
    assert _cycle({"p": {"p.a"}, "p.a": {"q"}, "q": set()}) == []


def _users(top_level: str) -> set[str]:
    return {m for m, found in MODULES.items() if any(t.split(".")[0] == top_level for t, _n in found)}


def test_whoosh_is_imported_only_by_the_search_package() -> None:
    assert {_part(m) for m in _users("whoosh")} == {"search"}


def test_gitpython_is_imported_by_no_module() -> None:
    # Its git processes inherit GIT_DIR and GIT_OBJECT_DIRECTORY from the environment; the
    # store's git runs without them (store/gitenv.py).
    assert _users("git") == set()


def test_subprocesses_are_run_only_where_that_is_the_job() -> None:
    # the store runs git; edit runs the user's editor; the client starts the server, and the
    # server its write process.
    assert _users("subprocess") - {m for m in MODULES if _part(m) == "store"} == {
        "slayer_kb.ops.editing", "slayer_kb.daemon.relay", "slayer_kb.daemon.writer",
    }


def test_only_the_store_runs_git() -> None:
    """A module outside store/ may start a process, but never git: it asks the store."""
    runs_git = {
        m for m in MODULES if _part(m) != "store"
        and any(isinstance(node, ast.Constant) and node.value == "git"
                for node in _nodes(PATHS[m]))
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


# The module that spells the link to a memory (``memory:<id>``); every other one asks it.
LINK_OWNER = "slayer_kb.core.locate"


def test_only_locate_spells_the_link_to_a_memory() -> None:
    """A string (or an f-string's text) ending in 'memory:' builds or takes apart ``memory:<id>``
    by hand: that is ``locate.memory_link`` / ``locate.linked_id``'s job. Commit subjects
    (``memory: save 12``) and prose (``memory:<id>``) go on past the colon."""
    spelt = sorted(
        f"{module}:{node.lineno}" for module, path in PATHS.items() if module != LINK_OWNER
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith("memory:")
        and node.value != ":memory:"  # SQLite's name for a database in memory
    )
    assert spelt == []


def test_no_module_takes_another_modules_private_names() -> None:
    taken = [
        (m, target, name) for m, found in MODULES.items() for target, names in found
        for name in names if target.startswith("slayer_kb") and name.startswith("_") and not name.startswith("__")
    ]
    assert taken == []


# The only module that reaches into Whoosh's private structures; tests/test_whoosh_contract.py
# checks each of its assumptions.
WHOOSH_DOOR = "slayer_kb.search.whoosh_internals"
# The module that imports Whoosh's modules with stand-ins for what they import and no search uses.
WHOOSH_START = "slayer_kb.search.whoosh_start"
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
        (m, target, name) for m, found in MODULES.items() if m not in (WHOOSH_DOOR, WHOOSH_START) for target, names in found
        if target.split(".")[0] == "whoosh"
        for name in names or ["(the module)"] if name not in WHOOSH_PUBLIC.get(target, set())
    }
    assert taken == set(), f"use Whoosh's public API, or add a function to {WHOOSH_DOOR} with a contract test"


def test_every_module_that_imports_whoosh_imports_whoosh_start_first() -> None:
    """Whoosh's modules run once a process, and whichever module imports Whoosh first decides
    whether they ran with whoosh_start's stand-ins (a tenth of the process's start)."""

    def whoosh(node: ast.stmt) -> bool:
        return (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "whoosh" for a in node.names)) or (
            isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "whoosh")

    def start(node: ast.stmt) -> bool:
        return isinstance(node, ast.ImportFrom) and node.level == 1 and not node.module and any(
            a.name == "whoosh_start" for a in node.names)

    late = []
    for module, path in PATHS.items():
        body = _tree(path).body
        first = next((i for i, node in enumerate(body) if whoosh(node)), None)
        if module != WHOOSH_START and first is not None and not any(start(node) for node in body[:first]):
            late.append(module)
    assert late == [], "import whoosh_start (from . import whoosh_start) before Whoosh in these"


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


def _private_reaches(tree: ast.Module) -> list[str]:
    """Each ``x._name`` of a module's ``tree`` whose ``_name`` it does not define."""
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
    assert _private_reaches(_tree(PATHS[module])) == []


def test_the_interfaces_reach_the_operations_only_through_the_library() -> None:
    """The CLI and the MCP server call ``KnowledgeBase`` and its objects (api/), never ``ops``."""
    reaching = {
        (m, target) for m in MODULES if _part(m) in {"cli", "mcp"}
        for target, _names in MODULES[m] + _typing_imports(PATHS[m]) if target.startswith("slayer_kb.ops")
    }
    assert reaching == set()


def _typing_imports(path: Path) -> list[tuple[str, list[str]]]:
    """The modules a file imports under ``if TYPE_CHECKING:`` (relative imports only)."""
    module = _name(path)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: list[tuple[str, list[str]]] = []
    for node in _nodes(path):
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
        if not name.startswith("_") and (inspect.isfunction(member) or inspect.ismethod(member))  # classmethods too
    ]


def _handles() -> tuple[type, ...]:
    from slayer_kb.catalog.resolve import Resolver
    from slayer_kb.kb import KnowledgeBase
    from slayer_kb.transaction import Transaction

    return KnowledgeBase, Resolver, Transaction


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
    imported only for the type checker), with the types it imports for the checker alone: one a
    module imports on use, for the commands that need it only (docs/performance.md)."""
    annotation = getattr(method, "__annotations__", {}).get("return", "Any")
    module = sys.modules[method.__module__]  # type: ignore[attr-defined]
    names = {"Any": typing.Any, **_checker_imports(module), **vars(module)}
    return eval(annotation, names) if isinstance(annotation, str) else annotation


def _checker_imports(module: types.ModuleType) -> dict[str, object]:
    """What ``module`` imports under ``if TYPE_CHECKING:`` (``from X import Y``), imported here."""
    names: dict[str, object] = {}
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    source = importlib.import_module("." * statement.level + (statement.module or ""), module.__package__)
                    names.update({alias.asname or alias.name: getattr(source, alias.name) for alias in statement.names})
    return names


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
    tree = _tree(PATHS[module])
    constants = {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) for target in node.targets if isinstance(target, ast.Name)}
    started = []
    for node in _nodes(PATHS[module]):
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
        m for m in MODULES for node in _nodes(PATHS[m])
        if isinstance(node, ast.Attribute) and node.attr == "executable"
        and isinstance(node.value, ast.Name) and node.value.id == "sys"
    }
    assert uses_executable == {"slayer_kb.core.children"}
    started = {m: found for m in MODULES if (found := _started_modules(m))}
    assert started == {
        "slayer_kb.daemon.relay": ["slayer_kb.daemon.server"],
        "slayer_kb.daemon.writer": ["slayer_kb.daemon.writer"],
        "slayer_kb.store.mergedriver": ["slayer_kb.store.mergedriver"],
        "slayer_kb.search.filler": ["slayer_kb.daemon.sentences"],
        "slayer_kb.store.upkeep": ["slayer_kb.store.upkeep"],
        "slayer_kb.transaction": ["slayer_kb.daemon.compact"],
    }
    for target in {t for found in started.values() for t in found}:
        tree = _tree(PATHS[target])
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), target


def test_every_part_has_a_layer() -> None:
    assert {_part(m) for m in MODULES} <= set(RANK)


def test_the_private_name_check_sees_reaches() -> None:
    source = (
        "import relay\nclass A:\n    __slots__ = ('_slot',)\n    def f(self, ix):\n        self._mine = 1\n"
        "        return self._mine, self._slot, relay._LENGTH, ix._read_toc(), self._inherited, os._exit\n"
    )
    assert _private_reaches(ast.parse(source)) == ["ix._read_toc", "relay._LENGTH", "self._inherited"]


# What a KnowledgeBase, a Context or a Transaction goes by: a variable ``kb``, ``ctx`` or ``tx``,
# an attribute ``kb`` or ``_kb``, or the CLI's ``settings.kb()`` (test_the_handles_go_by_their_names
# keeps it so).
HANDLE_NAMES = {"kb", "ctx", "tx"}
HANDLE_ATTRIBUTES = {"kb", "_kb", "kb()"}
HANDLE_TYPES = {"KnowledgeBase", "Context", "Transaction", "Workspace"}
# What a handle holds that is no part with state of its own, so using it reaches through
# nothing: values (its paths, the catalog's records as loaded) and the library's public objects
# (``kb.history``, ``kb.team``, ``kb.interchange``: the API the CLI and MCP call).
NOT_PARTS = {"root", "memories_dir", "state", "catalog", "history", "team", "interchange"}


def _chain(node: ast.expr) -> list[str]:
    """``a.b().c`` as ["a", "b()", "c"]; [] when it does not start at a name."""
    names: list[str] = []
    call = ""
    while True:
        if isinstance(node, ast.Call):
            node, call = node.func, "()"
        elif isinstance(node, ast.Attribute):
            names.append(node.attr + call)
            node, call = node.value, ""
        elif isinstance(node, ast.Name):
            return [node.id + call, *reversed(names)]
        else:
            return []


def _part_at(chain: list[str]) -> int | None:
    """Where ``chain`` names a handle's part (the place after the handle), None where it names
    none: ``kb.store.head`` -> 1, ``self.kb.store`` -> 2, ``kb.search`` or ``kb.root.name`` -> None."""
    for at, name in enumerate(chain[:-1]):
        if name in (HANDLE_ATTRIBUTES if at else HANDLE_NAMES):
            # (what the handle's own method returns is a result, not a part)
            part = chain[at + 1]
            return at + 1 if part not in NOT_PARTS and not part.endswith("()") else None
    return None


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a module or function, not those of the functions defined in it."""
    own, pending = [], list(ast.iter_child_nodes(scope))
    while pending:
        own.append(node := pending.pop())
        if not isinstance(node, FUNCTIONS):
            pending.extend(ast.iter_child_nodes(node))
    return own


def _scopes(scope: ast.AST, outer: dict[str, str]) -> Iterator[tuple[list[ast.AST], dict[str, str]]]:
    """Each module or function's own nodes, with the locals it sees that hold a copy of a handle's
    part (``store = kb.store``: {"store": "kb.store"}); a function sees its caller's (a closure)
    unless its parameters take the name."""
    own = _own_nodes(scope)
    taken = {a.arg for a in ast.walk(scope.args) if isinstance(a, ast.arg)} if isinstance(scope, FUNCTIONS) else set()
    copies = {name: part for name, part in outer.items() if name not in taken}
    for node in own:
        pairs: list[tuple[ast.expr, ast.expr | None]] = []
        if isinstance(node, ast.Assign):
            for target in node.targets:
                value = node.value
                if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
                    pairs += zip(target.elts, value.elts, strict=True)  # store, index = kb.store, kb.index
                else:
                    pairs.append((target, value))
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
            pairs.append((node.target, node.value))
        for target, value in pairs:
            chain = _chain(value) if isinstance(value, ast.Attribute) else []
            # (a handle copied to a handle's name is judged as a handle)
            if isinstance(target, ast.Name) and target.id not in HANDLE_NAMES and _part_at(chain) == len(chain) - 1:
                copies[target.id] = ast.unparse(value)
    yield own, copies
    for node in own:
        if isinstance(node, FUNCTIONS):
            yield from _scopes(node, copies)


def _reach_throughs(tree: ast.Module) -> list[str]:
    """Each use of what a handle's part holds, to call, read or set: ``kb.index.documents(...)``,
    ``tx.store.head()``, ``self.kb.store.view.reading(...)``, ``kb.index.warm = True``, and the
    same through a local that copies the part (``store = kb.store`` then ``store.head()``). The
    part's owner gives it a method (``ctx.documents(...)``), or the code that works on the part
    takes it as a parameter (``history.log(kb.store, ...)``). The owner's own code
    (``self.store.head()`` in Context) and a handle's own methods and attributes
    (``kb.search(...)``, ``self.kb.close()``) are no reach-through."""
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    inner |= {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call) and id(node) in inner}
    found = set()
    for own, copies in _scopes(tree, {}):
        for node in own:
            if not isinstance(node, ast.Attribute) or id(node) in inner:
                continue  # a chain is judged whole, from its last attribute
            chain = _chain(node)
            if chain and chain[0] in copies:
                found.add(f"{chain[0]}.{chain[1].removesuffix('()')} ({chain[0]} = {copies[chain[0]]})")
            elif (at := _part_at(chain)) is not None and at < len(chain) - 1:
                found.add(ast.unparse(node))
    return sorted(found)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_nothing_reaches_through_a_knowledge_base_to_its_parts(module: str) -> None:
    assert _reach_throughs(_tree(PATHS[module])) == []


def test_the_reach_through_check_sees_chains() -> None:
    source = (
        "def f(kb, tx, other):\n"
        "    kb.index.documents(None); tx.store.head(); kb.index.searcher().lexicon('x')\n"
        "    self.kb.store.view.reading(kb.catalog); self._runner.kb.store.head()\n"
        "    kb.search('q'); self.kb.close(); kb.history.log('1'); kb.root.joinpath('a')\n"
        "    self.store.head(); other.index.documents(None)\n"
        "    kb.index.warm = True; open(kb.store.lock_path); kb.state / 'x'; f(kb.store)\n"
        "    settings.kb().index.ids(); settings.kb().get('1').to_dict(); KnowledgeBase(root).index.dir\n"
    )
    assert _reach_throughs(ast.parse(source)) == [
        "kb.index.documents", "kb.index.searcher().lexicon", "kb.index.warm", "kb.store.lock_path",
        "self._runner.kb.store.head", "self.kb.store.view.reading", "settings.kb().index.ids", "tx.store.head",
    ]


def test_the_reach_through_check_sees_copies_of_a_part() -> None:
    """A local that copies a handle's part is the part: using what it holds reaches through."""
    source = (
        "def f(kb, ctx, tx):\n"
        "    leases = kb.leases; leases.settings(); idx = ctx.index; idx.x.y()\n"
        "    store, index = self.kb.store, tx.index; store.view.reading(); index.warm = True\n"
        "    g(store); root = kb.root; root.name; kb = tx.kb; kb.search('q'); answer = kb.get('1'); answer.id\n"
        "    def inner(moves):\n"
        "        leases.top_up(); moves.get('1')\n"
        "    moves = kb.moves\n"
        "def other(store):\n"
        "    store.head()\n"
    )
    assert _reach_throughs(ast.parse(source)) == [
        "idx.x (idx = ctx.index)", "index.warm (index = tx.index)", "leases.settings (leases = kb.leases)",
        "leases.top_up (leases = kb.leases)", "store.view (store = self.kb.store)",
    ]


def _handle_names(tree: ast.Module) -> list[str]:
    """The names that hold a handle, read from parameters annotated with its type, values built
    by its class or copied from a handle's name, and ``with ... .transaction() as NAME``."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            names += [a.arg for a in args if a.annotation is not None
                      and HANDLE_TYPES & set(ast.unparse(a.annotation).strip("'\"").replace("|", " ").split())]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and (
                isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                and node.value.func.id in HANDLE_TYPES
                or isinstance(node.value, ast.Name) and node.value.id in HANDLE_NAMES):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.append(target.attr if isinstance(target, ast.Attribute) else ast.unparse(target))
        elif isinstance(node, ast.withitem) and isinstance(node.context_expr, ast.Call) \
                and _chain(node.context_expr.func)[-1:] == ["transaction"] and node.optional_vars is not None:
            names.append(ast.unparse(node.optional_vars))
    return names


def test_the_handle_name_check_sees_handles() -> None:
    source = (
        "def f(base: KnowledgeBase, ctx: 'Context | None', n: int):\n"
        "    other = KnowledgeBase(root); self.held = ctx; store = ctx.store\n"
        "    with base.transaction() as work: pass\n"
    )
    assert _handle_names(ast.parse(source)) == ["base", "ctx", "other", "held", "work"]


def test_the_handles_go_by_their_names() -> None:
    """The reach-through check knows a handle by its name, so a handle goes by no other."""
    other = {
        (m, name) for m, path in PATHS.items() for name in _handle_names(_tree(path))
        if name not in HANDLE_NAMES | HANDLE_ATTRIBUTES
    }
    assert other == set()


# Commands that run an interface rather than an operation: the warm server (``server start``,
# ``status``, ``stop``, and ``watch``, the server in the foreground), the MCP server (``mcp``,
# whose tools are checked one by one below), and the shell's completion script.
INTERFACE_COMMANDS = {"server start", "server status", "server stop", "watch", "mcp", "completion"}


# KnowledgeBase's methods that manage the object rather than run an operation.
LIFECYCLE = {"close", "keep_warm", "warm_up"}


def _library() -> dict[str, set[str]]:
    """The library's public methods, by the object that holds them: ``kb`` (KnowledgeBase),
    its objects ``history``, ``team``, ``interchange``, and the ``checks`` functions."""
    methods: dict[str, set[str]] = {}
    for qualified, _member in _public_methods():
        cls, name = qualified.split(".")
        methods.setdefault({"KnowledgeBase": "kb"}.get(cls, cls.lower()), set()).add(name)
    from slayer_kb.api import checks

    methods["checks"] = {name for name, f in inspect.getmembers(checks, inspect.isfunction)
                         if f.__module__ == checks.__name__}
    return methods


def _library_calls(function: typing.Callable[..., object]) -> list[str]:
    """The library methods ``function`` calls, as ``holder.method``: ``kb.search(...)``,
    ``settings.kb().history.log(...)``, ``KnowledgeBase.init(...)``, ``checks.validate(...)``."""
    library = _library()
    tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(function))))
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            on = ast.unparse(node.func.value)
            holder = next((h for h in ("history", "team", "interchange") if on.endswith(f".{h}")), None)
            if holder is None:
                holder = {"kb": "kb", "settings.kb()": "kb", "KnowledgeBase": "kb", "checks": "checks"}.get(on)
            if holder is not None and node.func.attr in library[holder] - LIFECYCLE:
                calls.append(f"{holder}.{node.func.attr}")
    return calls


def _commands() -> dict[str, typing.Callable[..., object]]:
    """Every command of the CLI, walked from the root group (``server start``...), by its callback."""
    import click

    from slayer_kb.cli import cli

    found: dict[str, typing.Callable[..., object]] = {}
    pending: list[tuple[str, click.Command]] = [("", cli)]
    while pending:
        prefix, group = pending.pop()
        assert isinstance(group, click.Group)
        context = click.Context(group)
        for name in group.list_commands(context):
            command = group.get_command(context, name)
            assert command is not None
            if isinstance(command, click.Group):
                pending.append((f"{prefix}{name} ", command))
            else:
                assert command.callback is not None
                found[prefix + name] = command.callback
    return found


def test_every_command_calls_the_library() -> None:
    """A command parses its arguments, calls the library (KnowledgeBase, its objects, ``checks``)
    and prints the result: one with no library call does the work itself."""
    commands = _commands()
    assert INTERFACE_COMMANDS <= set(commands)
    alone = sorted(name for name, callback in commands.items()
                   if name not in INTERFACE_COMMANDS and not _library_calls(callback))
    assert alone == []


def test_every_mcp_tool_calls_the_library() -> None:
    from slayer_kb.mcp import tools

    listed = {spec.name: spec.handler for spec in tools.tools()}
    assert listed and set(listed) == set(tools.HANDLERS)
    alone = sorted(name for name, handler in listed.items() if not _library_calls(handler))
    assert alone == []


def test_the_library_call_check_sees_calls() -> None:
    def command(settings: typing.Any, kb: typing.Any, checks: typing.Any) -> None:
        settings.kb().history.log("1"), kb.search("q"), checks.validate([]), kb.index.documents(None)
        settings.kb().close(), kb.team.nothing()

    assert sorted(_library_calls(command)) == ["checks.validate", "history.log", "kb.search"]


# (not CHANGELOG.md: it names what modules were, as history)
DOCS = sorted((PACKAGE.parent / "docs").glob("*.md")) + [
    PACKAGE.parent / name for name in ("README.md", "CONTRIBUTING.md", "SECURITY.md")
]
PACKAGES = "|".join(sorted({_part(m) for m in MODULES if "." in m.removeprefix("slayer_kb.")}))
# A file of the package as the docs name it: ``slayer_kb/daemon/relay.py``, ``store/view.py``
# (not another project's ``slayer/core/...``), or a module or name as ``slayer_kb.daemon.compact``.
NAMED_FILE = re.compile(rf"(?<![\w/.])(?:slayer_kb/)?(?:{PACKAGES})/\w+\.(?:py|c|yaml)\b")
NAMED_MODULE = re.compile(r"(?<![\w/.])slayer_kb(?:\.\w+)+")


def _resolves(dotted: str) -> bool:
    """``dotted`` is a module of the package, or a name one defines."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        if module in MODULES:
            target: object = importlib.import_module(module)
            for name in parts[cut:]:
                if not hasattr(target, name):
                    return False
                target = getattr(target, name)
            return True
    return False


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(PACKAGE.parent)))
def test_every_module_the_docs_name_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    files = {f for f in NAMED_FILE.findall(text) if not (PACKAGE / f.removeprefix("slayer_kb/")).is_file()}
    modules = {m for m in NAMED_MODULE.findall(text) if not _resolves(m)}
    assert (files, modules) == (set(), set())


def _module_map() -> set[str]:
    """The files architecture.md's module map names, relative to the package."""
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Module map", 1)[1].split("\n## ", 1)[0]
    named: set[str] = set()
    package = ""
    for row in re.findall(r"^\| *([^|]*?) *\| *([^|]*?) *\|", section, re.MULTILINE):
        if row[0].startswith("`"):
            package = row[0].strip("`")
        elif row[0] == "(top)":
            package = ""
        named |= {package + name for name in re.findall(r"`(\w+\.(?:py|c|yaml))`", row[1])}
    return named


def test_the_module_map_names_every_module_and_only_modules() -> None:
    """docs/architecture.md's table describes the code as it is: each module (a package's
    ``__init__`` and ``__main__`` aside) is in it, and nothing that is gone."""
    modules = {
        str(path.relative_to(PACKAGE)) for path in PATHS.values()
        if path.name not in ("__init__.py", "__main__.py")
    }
    named = _module_map()
    assert modules - named == set(), "add these to docs/architecture.md's module map"
    assert {n for n in named if not (PACKAGE / n).is_file()} == set()
