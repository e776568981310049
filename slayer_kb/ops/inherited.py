"""Query problems a branch inherits, which ``validate`` reports as warnings, not failures.

``validate --against REF`` checks what a branch changed, and the pre-commit hook's validate of a
catalog file every memory of the KB. A memory's example query may fail there though the branch
never touched it: written by an earlier release that took forms this one refuses (``amount :
sum``, ``count(distinct x)`` in a filter), it fails every pull request of a team, one that only
adds a column included, until someone rewrites memories nobody touched. So a query problem that
the same query already has at the base (where the branch parted from REF; HEAD for the hook),
checked against the base's catalog with this release's rules, is a warning naming the memory and
its fix. Only what failed at the base is inherited: every reference that fails here failed there,
of the same kind (stale or invalid), whatever each catalog's message lists (columns suggested,
models holding a name); a refused item's words and, where the source model is refused, the query's
other references are compared too (``refs.reference_problems``). A query the branch wrote or
changed, one a catalog change of the branch broke, and one with a new failing reference beside an
old one still fail, named by the new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..catalog.catalog import Catalog
from ..catalog.resolve import Resolver
from ..core.fileio import NotRegularFile, TooLarge, read_regular
from ..core.locate import memory_path
from ..core.memory import MAX_FILE_BYTES
from ..core.problems import INVALID_QUERY, STALE_QUERY, Problem
from ..store.repo import GitStore, find_toplevel
from .queryproblem import QueryProblem, query_of, query_problem, reported
from .snapshot import blobs_at, catalog_at
from .teamchecks import Branch


def inherited_as_warnings(problems: list[Problem], warnings: list[Problem], compared: Branch | None, hook: bool,
                          root: Path, ids: set[str], queries: Mapping[str, tuple[QueryProblem, str]]) -> list[Problem]:
    """``problems`` of the KB at ``root`` without the query problems it inherits from the base,
    which go to ``warnings``. The base: where the branch parted from ``compared``'s revision;
    HEAD when ``hook`` (a catalog file named, as pre-commit names the files of a commit).
    ``ids``: the KB's memory ids; ``queries``: the query problem each of ``problems`` reports, and
    its fix, by memory id."""
    ours = [p for p in problems if p.kind in (INVALID_QUERY, STALE_QUERY)]
    base = _base(compared, hook, root) if ours else None
    if base is None:
        return problems
    store, rev, label = base
    wanted = [(rev, memory_path(Path(p.path).stem)) for p in ours]
    catalog: list[Catalog] = []  # read from git once, and only where a query is the same there
    inherited = set()
    newly: dict[int, Problem] = {}  # failing for a reference that did not fail at the base: named
    for problem, data in zip(ours, blobs_at(store, wanted), strict=True):
        query = query_of(data)
        if query is None or query != query_of(_read(root / memory_path(Path(problem.path).stem))):
            continue
        if (found := queries.get(Path(problem.path).stem)) is None:  # a query problem validate did not read
            continue
        at_head, fix = found
        catalog = catalog or [catalog_at(store, rev)]
        new = at_head.since(query_problem(query, Resolver(catalog[0], ids.__contains__)))
        if new is None:
            inherited.add(id(problem))
        elif new.message != at_head.message:
            newly[id(problem)] = Problem(problem.path, problem.line, reported(new, fix), new.kind)
    warnings.extend(Problem(p.path, p.line, f"{p.message}; the query is so at {label} already: not this "
                            "branch's doing, so it fails nothing", p.kind) for p in ours if id(p) in inherited)
    return [newly.get(id(p), p) for p in problems if id(p) not in inherited]

def _base(compared: Branch | None, hook: bool, root: Path) -> tuple[GitStore, str, str] | None:
    """The repository, the revision to compare with and its name as shown; None: nothing to
    compare with (no --against and no catalog file named, or no git repository or commit)."""
    if compared is not None:
        return compared.store, compared.base or compared.against_sha, compared.against
    if not hook or find_toplevel(root) is None:
        return None
    store = GitStore(root)
    if store.git("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False).returncode != 0:
        return None
    return store, "HEAD", "HEAD"


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path, limit=MAX_FILE_BYTES)
    except (OSError, NotRegularFile, TooLarge):
        return None
