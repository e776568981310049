"""Catalog deletes that cascade into memories, and ``prune``.

Deleting a datasource, a model, or a model's column / named measure / custom aggregation strips
that entity and every entity below it (``shop.orders`` strips ``shop.orders.amount``, never
``shop.orders_archive``) from every memory's ``entities``, in the same single commit that removes
the catalog file or entry. Only the ``entities`` block of a memory changes (``with_entities``): its
text, stored query, ``created_at`` and key order keep their bytes. A memory left with no entities
is kept. The stored query of an example-query memory is not rewritten (SLayer's rule); search
reports it as stale, the delete's reply names it (``stale_queries``), and ``sync`` pushes it.

Decisions where the seed is silent:

- ``delete-model NAME`` without ``--datasource`` refuses a name found in several datasources: a
  delete never relies on the priority list to pick its victim.
- Other models' joins to a deleted model are left as they are: the catalog is SLayer's, and a
  dangling join is SLayer's to report. Resolution through such a join fails with a clear message.
- Deleting a datasource also removes it from ``priority.yaml``.
- A catalog file is edited by removing the lines of the deleted list item only, so comments and
  SLayer's formatting survive; when that cannot be done exactly (a flow-style list, an emptied
  list), the file is written again from its parsed data.
- A catalog file that is a symlink, or lies in a symlinked folder, is never deleted or rewritten:
  the cascade refuses and names the link. Deleting through it would remove the link's target
  (another model's file, or a file outside the KB).
- ``prune`` strips references that are neither an existing canonical entity (or memory) nor
  resolvable; a hand-written reference that still resolves (``orders.amount``) stays, and
  ``validate`` asks for its canonical form.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..catalog import leafuses
from ..catalog.catalog import Datasource, Model, through_joins
from ..catalog.refs import query_entities
from ..core import yamlio
from ..core.errors import (
    AmbiguousEntityError,
    CatalogError,
    ConflictError,
    InvalidInputError,
    KBError,
    NotFoundError,
    UsageError,
)
from ..core.fileio import read_regular
from ..core.ids import check_id
from ..core.locate import linked_id, memory_link, memory_path
from ..core.memory import Memory, with_entities
from ..core.problems import command
from ..core.results import CascadeResult
from ..core.text import listed, shown_value
from ..search import lookups
from ..store.absent import CATALOG_PATHS, edited, first_absent
from ..store.guesses import moved_to
from ..store.renames import link_target
from ..store.repo import Change
from ..transaction import Transaction, memory_change
from .mergelinks import fold_target

if TYPE_CHECKING:
    from ..catalog.resolve import Resolver
    from ..context import Context

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
# A commit message names this many rewritten memories; --json names them all.
MESSAGE_IDS = 50




# -- the deletes -------------------------------------------------------------------------------


def delete_model(
    kb: Context, model: str, datasource: str | None = None, *, force: bool = False
) -> CascadeResult:
    """Delete a model (``orders`` or ``shop.orders``) and strip it and its leaves from memories.
    ``force``: files holding uncommitted work are rewritten from HEAD (``Transaction.rewrite``)."""

    name, datasource = _model_named(model, datasource)  # a usage error is told before the KB's state

    def catalog_changes() -> tuple[str, str, list[Change]]:
        found = _find_model(kb, name, datasource)
        return found.entity, "model", [Change(_kb_path(kb, found.path, "delete"), None)]

    with kb.transaction() as tx:
        return _cascade(kb, tx, catalog_changes, force)


def delete_datasource(kb: Context, name: str, *, force: bool = False) -> CascadeResult:
    """Delete a datasource, its models and its place in ``priority.yaml``."""
    _catalog_name(name, "DS", "shop", counts=(1,))

    def catalog_changes() -> tuple[str, str, list[Change]]:
        datasource = _find_datasource(kb, name)
        changes = [Change(_kb_path(kb, path, "delete"), None) for path in _datasource_files(kb, datasource)]
        priority = _priority_without(kb.root / "priority.yaml", name)
        if priority is not None:
            changes.append(Change(_kb_path(kb, kb.root / "priority.yaml", "rewrite"), priority.encode("utf-8")))
        return name, "datasource", changes

    with kb.transaction() as tx:
        result = _cascade(kb, tx, catalog_changes, force)
        # git keeps no folders; an empty models/<ds>/ would still read as a datasource.
        with contextlib.suppress(OSError):
            (kb.root / "models" / name).rmdir()
        return result


def delete_leaf(kb: Context, ref: str, *, force: bool = False) -> CascadeResult:
    """Delete a column, named measure or custom aggregation given as ``DS.MODEL.LEAF``."""
    ds_name, model_name, leaf = _catalog_name(ref, "DS.MODEL.LEAF", "shop.orders.amount", counts=(3,)).split(".")
    broken: list[str] = []

    def catalog_changes() -> tuple[str, str, list[Change]]:
        model = _find_model(kb, model_name, ds_name)
        kind = model.leaf_kind(leaf)
        if kind is None:
            raise NotFoundError(
                f"Model '{model.entity}' has no column, measure or aggregation {shown_value(leaf)}. "
                f"Its leaves: {sorted(model.leaves())}."
            )
        path = _kb_path(kb, model.path, "rewrite")
        text = read_regular(kb.root / path).decode("utf-8")
        kept = _model_without_leaf(text, leaf)
        # The model's own measures and joins that read the leaf: left broken, said (validate says so too).
        broken[:] = [f"{path}: {use.place}" for use in leafuses.uses(yamlio.load(kept)) if use.name == leaf]
        # And what the datasource's models read of it through a join: a join pair's target column,
        # a dotted name (customers.region) in a measure or aggregation parameter.
        models = kb.catalog.datasources[model.datasource].models
        for other in models.values():
            shown = other.path.relative_to(kb.root).as_posix()
            broken.extend(f"{shown}: {key.place}" for key in other.join_keys if (key.target, key.column) == (model.name, leaf))
            broken.extend(f"{shown}: {use.place}" for use in other.through
                          if (reached := through_joins(models, other, use.name)) and reached[0].name == model.name
                          and reached[1] == leaf)
        return f"{model.entity}.{leaf}", kind, [Change(path, kept.encode("utf-8"))]

    with kb.transaction() as tx:
        result = _cascade(kb, tx, catalog_changes, force)
    result.broken = broken
    return result


def _catalog_name(given: str, form: str, example: str, *, counts: tuple[int, ...]) -> str:
    """``given`` stripped, refused unless it is ``form``: one of ``counts`` names joined by dots.
    A path or an empty name would otherwise be looked up as a name (``../../etc`` was "Unknown
    datasource ''")."""
    name = given.strip()
    if not name:
        raise InvalidInputError(f"No name given: give {form}, e.g. {example}.")
    if "/" in name or "\\" in name:
        raise InvalidInputError(
            f"{shown_value(given)} is a path, not a catalog name: give {form} as the catalog names it, e.g. {example}."
        )
    parts = name.split(".")
    if len(parts) not in counts or not all(parts):
        raise InvalidInputError(f"{shown_value(given)} is not {form}: give it as the catalog names it, e.g. {example}.")
    return name


def _find_datasource(kb: Context, name: str) -> Datasource:
    datasource = kb.catalog.datasources.get(name)
    if datasource is None:
        known = ", ".join(sorted(kb.catalog.datasources)) or "none"
        raise NotFoundError(f"Unknown datasource {shown_value(name)}. Known datasources: {known}.")
    return datasource


def _model_named(model: str, datasource: str | None) -> tuple[str, str | None]:
    """The model's name and its datasource (None: any) as MODEL (``orders``, ``shop.orders``)
    and --datasource give them, refused when the two name different datasources."""
    name = _catalog_name(model, "MODEL or DS.MODEL", "orders or shop.orders", counts=(1, 2))
    if datasource is not None:
        datasource = _catalog_name(datasource, "--datasource DS", "shop", counts=(1,))
    if "." in name:
        given, _, name = name.partition(".")
        if datasource is not None and datasource != given:
            raise UsageError(
                f"{shown_value(model)} names datasource {shown_value(given)} but --datasource says "
                f"{shown_value(datasource)}: name the datasource once, in MODEL or with --datasource."
            )
        datasource = given
    return name, datasource


def _find_model(kb: Context, name: str, datasource: str | None) -> Model:
    if datasource is not None:
        found = _find_datasource(kb, datasource).models.get(name)
        if found is None:
            raise NotFoundError(
                f"Unknown model {shown_value(name)} in datasource '{datasource}'. "
                f"Its models: {sorted(kb.catalog.datasources[datasource].models)}."
            )
        return found
    candidates = kb.catalog.models_named(name)
    if not candidates:
        raise NotFoundError(f"Unknown model {shown_value(name)}: no datasource has a model of that name.")
    if len(candidates) > 1:
        raise AmbiguousEntityError(
            f"Model '{name}' exists in datasources {sorted(m.datasource for m in candidates)}; "
            f"say which to delete with --datasource or as '<datasource>.{name}'."
        )
    return candidates[0]


def _datasource_files(kb: Context, datasource: Datasource) -> list[Path]:
    """The datasource file and every model file of its folder, unreadable ones included."""
    files = [datasource.path] if datasource.path is not None else []
    folder = kb.root / "models" / datasource.name
    files.extend(sorted(p for p in folder.glob("*.yaml") if p.is_file()))
    return files


def _kb_path(kb: Context, path: Path, verb: str) -> str:
    """``path`` relative to the KB, refusing a catalog file that is a symlink or lies in a
    symlinked folder: to delete or rewrite it would act on the link's target, which may be
    another model's file or a file outside the KB."""
    try:
        parts = path.relative_to(kb.root).parts
    except ValueError:
        raise CatalogError(
            f"Refusing to {verb} {path}: it is outside the knowledge base {kb.root}."
        ) from None
    rel = "/".join(parts)
    for depth in range(1, len(parts) + 1):
        link = kb.root.joinpath(*parts[:depth])
        if link.is_symlink():
            if depth == len(parts):
                what = "it is a symlink"
                fix = f"Replace the link with a copy of the file it points to, or remove it with 'git rm {rel}'"
            else:
                what = f"folder {'/'.join(parts[:depth])} is a symlink"
                fix = f"Replace {'/'.join(parts[:depth])} with a real folder"
            raise CatalogError(
                f"Refusing to {verb} {rel}: {what} (to {os.readlink(link)}), and slayer-kb never "
                f"deletes or rewrites a file through a link. {fix}, then retry."
            )
    return rel


# -- rewriting memories --------------------------------------------------------------------------


def _cascade(
    kb: Context, tx: Transaction, catalog_changes: Callable[[], tuple[str, str, list[Change]]], force: bool
) -> CascadeResult:
    """Delete what ``catalog_changes()`` says (the entity, its kind, the catalog files' changes)
    and strip the entity from every memory, as one commit; refused when a file it would rewrite
    holds uncommitted work, unless ``force`` (see ``Transaction.rewrite``)."""

    def plan() -> tuple[list[Change], tuple[str, str, dict[str, Memory], dict[str, list[str]], list[str]]]:
        entity, kind, changes = catalog_changes()
        under = lookups.tagged([entity], under=True)
        memories: dict[str, Memory] = {}

        def gone(e: str) -> bool:
            return e == entity or e.startswith(entity + ".")

        stripped = _strip(tx, under, gone, changes, memories)
        stale = stale_queries(kb.resolver(), memories, gone)
        return changes, (entity, kind, memories, stripped, stale)

    changes, (entity, kind, memories, stripped, stale), kept = tx.rewrite(plan, force)
    rewritten = list(stripped)
    message = f"catalog: delete {kind} {entity}"
    if rewritten:
        message += (
            f"\n\nStripped {entity} and everything under it from {len(rewritten)} "
            f"{_memories(len(rewritten))}: {_some(rewritten)}"
        )
    commit = tx.commit(changes, message, memories)
    return CascadeResult(entity, commit, rewritten, stripped, kept=kept, stale_queries=stale)


def stale_queries(resolver: Resolver, memories: dict[str, Memory], gone: Callable[[str], bool]) -> list[str]:
    """The live example-query memories among ``memories`` (those the delete rewrites: ``save``
    tags a query's entities) whose stored query references an entity ``gone`` says is deleted, resolved against the catalog before the delete. The query
    keeps its text (SLayer's rule), so search and ``validate`` will call it stale: the reply
    names them for the user to edit or forget. A query that did not resolve before is not this
    delete's doing and is left out. ``resolver``: the catalog's before the delete."""
    stale = []
    for memory_id, memory in memories.items():
        if memory.query is None or memory.is_deleted:
            continue
        with contextlib.suppress(KBError):
            if any(gone(e) for e in query_entities(memory.query, resolver)[0]):
                stale.append(memory_id)
    return stale


def _strip(
    tx: Transaction,
    matches: lookups.Lookup,
    gone: Callable[[str], bool],
    changes: list[Change],
    memories: dict[str, Memory],
    at_head: frozenset[str] = frozenset(),
    moved: dict[str, str] | None = None,
    pointed: dict[str, dict[str, str]] | None = None,
) -> dict[str, list[str]]:
    """Append a rewrite of every memory holding an entity ``gone`` says to strip (and the
    rewritten memory to ``memories``); those of ``at_head`` as HEAD has them (a dry run's). An
    entity ``moved`` maps is replaced by what it maps to instead, and listed in ``pointed``."""
    moved = moved or {}
    stripped: dict[str, list[str]] = {}
    for memory, text in tx.read_matching(matches, at_head):
        removed = [e for e in memory.entities if gone(e)]
        if removed:
            # A link pointed at one the memory holds already is held once.
            kept = list(dict.fromkeys(moved.get(e, e) for e in memory.entities if not gone(e) or e in moved))
            changes.append(memory_change(memory, with_entities(text, memory, kept)))
            memories[memory.id] = memory.evolve(entities=kept)
            if dropped := [e for e in removed if e not in moved]:
                stripped[memory.id] = dropped
            if pointed is not None and (relinked := {e: moved[e] for e in removed if e in moved}):
                pointed[memory.id] = relinked
    return stripped


def _memories(count: int) -> str:
    return "memory" if count == 1 else "memories"


def _some(ids: list[str]) -> str:
    shown = ", ".join(ids[:MESSAGE_IDS])
    return shown if len(ids) <= MESSAGE_IDS else f"{shown} and {len(ids) - MESSAGE_IDS} more"


# -- prune ---------------------------------------------------------------------------------------


def prune(kb: Context, dry_run: bool = False, *, force: bool = False) -> CascadeResult:
    """Strip every stored reference that no longer resolves, as one commit (``dry_run``: none,
    refused as the run would be). ``force``: files holding uncommitted work are rewritten from
    HEAD (``Transaction.rewrite``)."""

    pointed: dict[str, dict[str, str]] = {}
    merged: set[str] = set()  # the links of ``pointed`` to an id a fold merged away, not renamed
    warnings: list[str] = []  # a dry run's: why its list is unreliable, where the run refuses

    def plan(at_head: frozenset[str] = frozenset()) -> tuple[list[Change], tuple[dict[str, Memory], dict[str, list[str]]]]:
        # A dry run reads HEAD's versions of the files its run sets aside (and then indexes):
        # the links only they hold are the run's to strip too.
        held = _stored_entities(kb) | {e for memory, _ in tx.committed(at_head) for e in memory.entities}
        dangling = sorted(e for e in held if not _live(kb, e))
        changes: list[Change] = []
        memories: dict[str, Memory] = {}
        stripped: dict[str, list[str]] = {}
        pointed.clear()
        warnings.clear()
        if dangling and (refusal := _unreliable(kb, dangling)) is not None:
            if not dry_run:
                raise ConflictError(refusal)
            # A dry run changes nothing: it lists what it reads, and says why that may be wrong.
            warnings.append(f"this list is unreliable, and prune refuses until it is fixed: {refusal}")
        if dangling:
            gone = set(dangling)
            matches = lookups.tagged(dangling)
            stripped = _strip(tx, matches, gone.__contains__, changes, memories, at_head,
                              _renamed_links(kb, dangling, merged), pointed)
        return changes, (memories, stripped)

    with kb.transaction() as tx:
        _refuse_a_skipped_catalog_file(kb)
        changes, (memories, stripped), kept = tx.dry_rewrite(plan, force) if dry_run else tx.rewrite(plan, force, ahead=True)
        rewritten = list(dict.fromkeys([*stripped, *pointed]))
        commit = None
        if changes and not dry_run:
            removed = sorted({e for entities in stripped.values() for e in entities})
            moves = sorted({pair for links in pointed.values() for pair in links.items()})
            said = [f"Stripped {_some(removed)} from {len(stripped)} {_memories(len(stripped))}: {_some(list(stripped))}"
                    ] if removed else []
            said += [f"Pointed {old} at {new} ({'merged' if old in merged else 'renamed'}) in "
                     f"{', '.join(m for m, links in pointed.items() if old in links)}" for old, new in moves]
            commit = tx.commit(changes, f"{prune_subject(len(removed), len(moves))}\n\n" + "\n".join(said), memories)
        return CascadeResult(None, commit, rewritten, stripped, dry_run, kept, relinked=dict(pointed),
                             warnings=list(warnings))


def prune_subject(stripped: int, pointed: int) -> str:
    """A prune commit's subject: the links it stripped and those it pointed at a renamed memory,
    each named (``landed.py`` reads it back: ``PRUNE_SUBJECT``)."""
    links = f"catalog: prune {stripped + pointed} dangling reference{'' if stripped + pointed == 1 else 's'}"
    if not pointed:
        return links
    point = f"point {pointed} at {'a renamed memory' if pointed == 1 else 'renamed memories'}"
    return f"{links}: {f'strip {stripped}, ' if stripped else ''}{point}"


# Old builds wrote "prune 1 dangling references" too.
PRUNE_SUBJECT = re.compile(r"catalog: prune \d+ dangling references?(?:: .+)?")


def _renamed_links(kb: Context, dangling: list[str], merged: set[str]) -> dict[str, str]:
    """Of ``dangling``, each link to a memory a commit renamed, merged into another (a fold's
    commit, added to ``merged``) or moved by hand, still there under its new id
    (``renames.link_target``, ``mergelinks.fold_target``, ``guesses.moved_to``, as validate names
    it), and the link to that id: a memory that lives on is no link to strip (a merge committed
    by hand in a KB with no remote, or made with plain git, whose links no ``sync`` points at it)."""
    olds = {entity: old for entity in dangling if (old := linked_id(entity)) is not None}
    renamed = kb.renamed_ids() if olds else set()
    found = {}
    for entity, old in olds.items():
        if old in renamed:
            to = link_target(kb.store, old)
        elif (to := fold_target(kb.store, old)) is not None:
            merged.add(entity)
        else:
            to = moved_to(kb.store, old)
        if to is not None:
            found[entity] = memory_link(to[0])
    return found


def _refuse_a_skipped_catalog_file(kb: Context) -> None:
    """What a catalog file the catalog skipped defines looks gone, and prune would strip every
    reference to it: a model file that did not parse (a typo, an edit half done) cost four
    memories their links to its model."""
    skipped = [problem for problem in kb.catalog.problems if problem.skipped]
    if skipped:
        count = "1 file" if len(skipped) == 1 else f"{len(skipped)} files"
        raise CatalogError(
            f"prune strips the references that no longer resolve, and the catalog skipped {count} it could not "
            f"read, whose entities would look gone: {'' if len(skipped) == 1 else 'such as '}"
            f"{skipped[0].shown(kb.root)}. Fix it ('{command(kb.root)} validate' lists every problem), then prune."
        )


def _unreliable(kb: Context, dangling: list[str]) -> str | None:
    """Why prune refuses to strip ``dangling`` (None when it may), in the words of its error: a
    file HEAD holds that the work tree lacks (deleted or moved by hand and not committed, or left
    out by a sparse checkout) looks gone, and so does what only a catalog edit not committed
    dropped: what prune strips must be what HEAD lacks."""
    memories = [memory_path(target) for entity in dangling if (target := linked_id(entity)) is not None]
    catalog = list(CATALOG_PATHS) if len(memories) < len(dangling) else []
    if (said := first_absent(kb.store, [*memories, *catalog])) is not None:
        return (f"{said.removesuffix('.')}, then retry. prune strips the links to what HEAD no longer has, "
                "and that file would look gone, so nothing was done.")
    if catalog and (changed := edited(kb.store, catalog)):
        return (f"{listed(changed)} {'has' if len(changed) == 1 else 'have'} changes that are not committed, "
                "and prune strips the links to what the catalog no longer defines: what only an edit not "
                "committed dropped would be stripped in a commit. Commit the catalog change (or undo it), "
                "then retry; nothing was done.")
    return None


def _stored_entities(kb: Context) -> set[str]:
    """Every entity string some indexed document holds (terms of deleted documents may linger;
    they simply match no memory)."""
    return kb.indexed_terms("entities")


def _live(kb: Context, entity: str) -> bool:
    if (target := linked_id(entity)) is not None:
        try:
            check_id(target)
        except KBError:
            return False
        return kb.memory_exists(target)
    if kb.catalog.entity_exists(entity):
        return True
    try:
        kb.resolver().resolve(entity)
    except KBError:
        return False
    return True


# -- editing catalog files -----------------------------------------------------------------------


def _model_without_leaf(text: str, leaf: str) -> str:
    """The model file without every list item named ``leaf`` in columns/measures/aggregations."""
    for section in ("columns", "measures", "aggregations"):
        while True:
            data = yamlio.load(text)
            items = data.get(section) if isinstance(data, dict) else None
            index = next(
                (i for i, item in enumerate(items or [])
                 if isinstance(item, dict) and item.get("name") == leaf),
                None,
            )
            if index is None:
                break
            text = _without_item(text, data, (section,), index)
    return text


def _priority_without(path: Path, name: str) -> str | None:
    """``priority.yaml`` without ``name``, or None when it does not list it."""
    try:
        text = read_regular(path, follow_symlinks=True).decode("utf-8")
        data = yamlio.load(text)
    except (OSError, ValueError, yaml.YAMLError):  # a FIFO is refused, never waited on
        return None
    keys: tuple[str, ...] = ("priority",) if isinstance(data, dict) else ()
    items = data.get("priority") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return None
    while isinstance(items, list) and name in items:
        text = _without_item(text, data, keys, items.index(name))
        data = yamlio.load(text)
        items = data.get("priority") if isinstance(data, dict) else data
    return text


def _without_item(text: str, data: Any, keys: tuple[str, ...], index: int) -> str:
    """``text`` without item ``index`` of the list at ``keys``: only that item's text goes (its
    lines in a block list, its span in a flow list ``[a, b]``) when that gives exactly the expected
    data, else the whole file is dumped again. The dump is the last resort: it drops the file's
    comments and layout, and writes back what the loader read (``on: off`` as ``true: false``)."""
    expected = _removed(data, keys, index)
    for cut in (_cut_lines, _cut_span):
        candidate = cut(text, keys, index)
        if candidate is not None:
            with contextlib.suppress(yaml.YAMLError):
                if yamlio.load(candidate) == expected:
                    return candidate
    return yaml.dump(expected, Dumper=_DUMPER, sort_keys=False, allow_unicode=True,
                     default_flow_style=None)


def _sequence_at(text: str, keys: tuple[str, ...]) -> tuple[yaml.SequenceNode | None, yaml.Node | None]:
    """The list node at ``keys`` in ``text`` and its key's node (None, None: not a list)."""
    node = yamlio.compose(text)
    key_node = None
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None, None
        key_node, node = next(((k, v) for k, v in node.value if k.value == key), (None, None))
    return (node, key_node) if isinstance(node, yaml.SequenceNode) else (None, None)


def _cut_span(text: str, keys: tuple[str, ...], index: int) -> str | None:
    """``text`` without item ``index`` of a flow list (``columns: [{name: a}, {name: b}]``): its
    characters and the comma that parts it from the next item (the last: from the one before)."""
    node, _key = _sequence_at(text, keys)
    if node is None or not node.flow_style:
        return None
    items = node.value
    if index + 1 < len(items):
        start, end = items[index].start_mark.index, items[index + 1].start_mark.index
    elif index > 0:
        start, end = items[index - 1].end_mark.index, items[index].end_mark.index
    else:
        start, end = items[index].start_mark.index, items[index].end_mark.index
    return text[:start] + text[end:]


def _removed(data: Any, keys: tuple[str, ...], index: int) -> Any:
    if not keys:
        return [item for i, item in enumerate(data) if i != index]
    return {k: (_removed(v, keys[1:], index) if k == keys[0] else v) for k, v in data.items()}


def _cut_lines(text: str, keys: tuple[str, ...], index: int) -> str | None:
    node, key_node = _sequence_at(text, keys)
    if node is None or node.flow_style:
        return None
    item = node.value[index]
    start = item.start_mark.line
    if index + 1 < len(node.value):
        end = node.value[index + 1].start_mark.line
    else:
        end = item.end_mark.line + (1 if item.end_mark.column else 0)
    if end <= start:
        return None
    lines = text.splitlines(keepends=True)
    if len(node.value) == 1:
        # The list's last item: SLayer reads "key:" with nothing as null, so write "key: []".
        if key_node is None or key_node.start_mark.line >= start:
            return None
        line = key_node.start_mark.line
        lines[line] = lines[line][: key_node.end_mark.column] + ": []\n"
    return "".join(lines[:start] + lines[end:])
