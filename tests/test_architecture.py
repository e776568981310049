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


def test_every_part_has_a_layer() -> None:
    assert {_part(m) for m in MODULES} <= set(RANK)
