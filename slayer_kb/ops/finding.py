"""Finding memories: ``search`` through every channel (search/), and the newest memories, each
hit shown with its live entities and, for an example query, a warning when its references went
stale."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import search as channels
from ..catalog.catalog import Catalog
from ..catalog.refs import flatten_refs, query_entities, split_references
from ..context import deleted_error
from ..core import engram
from ..core.errors import InvalidInputError, KBError, NotFoundError
from ..core.ids import check_existing_id, check_id, id_sort_key, is_valid_id
from ..core.inputs import readable
from ..core.locate import MEMORY_LINK, linked_id, memory_link
from ..core.memory import MAX_DESCRIPTION, time_order
from ..core.problems import command, shell_word
from ..core.results import Hit, SearchResult, Stats, Timeline
from ..core.text import first_paragraph, shown_value
from ..search import DEFAULT_LIMIT
from . import sessions

if TYPE_CHECKING:
    from ..catalog.resolve import Resolver
    from ..context import Context

# A question's size limit in bytes (a memory at the default content limit): every word is looked
# up in every field, and the warm server runs one command at a time, so a long question holds
# every command queued behind it. A search costs about 5 ms of CPU a KB of prose (0.3-0.5 s at
# this limit), up to three times that for symbol-like tokens (64 KB of `abc+ ...`: 1.47 s; docs/
# search.md). Refused rather than cut: no part is dropped unsaid.
MAX_QUESTION = 65_536
# A name such as orders.amount or shop.orders.amount: identifiers joined by dots.
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# A bare name as agents write one: snake_case (is_returned, gross_revenue_eur), not inside a
# dotted name. An ordinary word is read as a name only when it is the whole question or in
# backquotes: "orders" in "why are orders late" is English, `orders` or orders alone is a table.
_SNAKE = re.compile(r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+(?![\w]|\.\w)")
_QUOTED = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)`")
_ALONE = re.compile(r"\s*[`'\"]?([A-Za-z_][A-Za-z0-9_]*)[`'\"]?\s*\??\s*")
# A memory named in the question as a link names it (memory:12, memory:kb.paid-revenue), also
# in brackets or quotes; the punctuation after it (memory:12.) is the sentence's, not the id's,
# unless a memory's id has it (``_link_named``).
# Chinese and Japanese put no blank around a link (请看memory:1。然后): only a letter, digit or
# a name's punctuation before it makes it part of another word.
_MEMORY_LINK = re.compile(rf"(?<![A-Za-z0-9_.\-/:]){MEMORY_LINK}[^\s:]+")
_AFTER_LINK = ".,;:!?)]'\"`。，、！？；：）」』】"
# Where a link's id ends inside what follows it: a markdown link's target, or a CJK punctuation
# mark (no id holds one, unless a memory's does: ``_link_named``).
_LINK_END = re.compile(r"\]\(|[。，、！？；：）」』】]")
# A bare name with more readings than this (created_at, status: a column of most models) says
# too little to search by its links; a note asks for the model.
MAX_READINGS = 3


def search(
    kb: Context,
    question: str | None = None,
    entities: list[str] | str | None = None,
    query: dict[str, Any] | None = None,
    *,
    datasource: str | None = None,
    type: str | None = None,
    project: str | None = None,
    scope: str | None = None,
    limit: int = DEFAULT_LIMIT,
    match: str = channels.FUSED,
    full: bool = False,
) -> SearchResult:
    """Memories, example queries and catalog entities for a question, entities and/or a query,
    ranked by words, meaning and entities fused (search/); ``KnowledgeBase.search``. ``limit``
    caps each bucket. ``match``: "fused" (default); "all-first", memories holding every word of
    the question first; "all", only those, ranked by their words and entity tags."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise InvalidInputError("max_results / --limit must be a whole number of at least 1.")
    if match not in channels.MATCHES:
        raise InvalidInputError(f"match must be one of {', '.join(channels.MATCHES)}; got {shown_value(match)}.")
    # Search is lenient: text that is not valid Unicode is searched as what it can be read as.
    question, type, project, scope, datasource = (
        readable(v) for v in (question, type, project, scope, datasource)
    )
    scope = engram.scope_filter(scope)
    if question is not None and (size := len(question.encode("utf-8", "replace"))) > MAX_QUESTION:
        raise InvalidInputError(
            f"The question is {size} bytes; the limit is {MAX_QUESTION} bytes. Ask with the words that matter, "
            "or split it into several searches."
        )
    kb.ensure_fresh()
    warnings = skipped(kb)
    if datasource is not None and datasource not in kb.catalog.datasources:
        known = ", ".join(sorted(kb.catalog.datasources)) or "none"
        raise NotFoundError(f"Unknown datasource {shown_value(datasource)}. Known datasources: {known}.")
    resolver = kb.resolver(given=True)
    inputs, links = _lenient_entities(kb, resolver, entities, query, warnings)
    named = question_names(kb, question or "", resolver, links, every_word=match == channels.ALL)
    warnings += [w for w in named.warnings if w not in warnings]  # a link named by -e as well: told once
    found = channels.run(kb.index, channels.Request(
        question=question or "",
        entities=inputs,
        inputs_given=bool(entities) or query is not None,
        type=engram.normalize_type(type),
        project=engram.normalize_project(project),
        scope=scope,
        datasource=datasource,
        limit=limit,
        full_names=named.full_names,
        named=named.entities,
        unknown_names=named.unknown,
        match=match,
    ))
    warnings += found.warnings
    result = SearchResult([], [], found.catalog, inputs, warnings, named.notes + found.notes)
    # A hit's tags that the inputs or the question's names matched.
    matching = inputs + [e for e in named.entities if e not in inputs]
    result.memories = [hit(kb, doc, matching, full, warnings, False) for doc in found.memories]
    result.example_queries = [hit(kb, doc, matching, full, warnings, True) for doc in found.example_queries]
    return result


def newest(
    kb: Context,
    *,
    type: str | None = None,
    project: str | None = None,
    scope: str | None = None,
    limit: int | None = 20,
) -> list[Hit]:
    """Live memories, newest first (``KnowledgeBase.newest``)."""
    kb.ensure_fresh()
    restriction = channels.restrict(
        type=engram.normalize_type(type), project=engram.normalize_project(project), scope=engram.scope_filter(scope))
    docs = kb.documents(None, restriction, limit=limit, sort_newest=True)
    return [hit(kb, doc, [], False, [], doc["data"]["query"] is not None) for doc in docs]


def unmatched(kb: Context, *, type: str | None = None, project: str | None = None,
              scope: str | None = None, action: str = "list") -> list[str]:
    """A warning when a filter of ``newest`` (or of the digest ``action`` asks for: "run context",
    "call mem_context") matches no memory at all (a misspelt type, say), as ``search`` gives: an
    answer that is empty for it is a mistake the agent can fix."""
    type = engram.normalize_type(type)
    unknown = channels.unmatched_filters(kb.index, type, engram.normalize_project(project), scope)
    return [channels.unmatched_warning(unknown, type, "", action)] if unknown else []


# At most this many skipped files are named one by one: a KB with thousands of broken files
# named each after every search, into the agent's context (400 lines for 400 files).
SKIPPED_SHOWN = 10


def skipped(kb: Context) -> list[str]:
    """A warning for each memory file the last look-up could not read and skipped (broken YAML,
    a conflict git left, ...), and each catalog file that could not be used: what ``search`` and
    ``list`` show after their results; past ``SKIPPED_SHOWN``, one line counts the rest."""
    said = [f"{problem} (skipped)" for problem in kb.problems] + [
        problem.shown(kb.root) + " (skipped)" * problem.skipped for problem in kb.catalog.problems]
    if len(said) <= SKIPPED_SHOWN:
        return said
    return said[:SKIPPED_SHOWN] + [f"{len(said) - SKIPPED_SHOWN} more files could not be used either; "
                                   f"'{command(kb.root)} validate' names each of them."]


@dataclass(frozen=True)
class QuestionNames:
    """What the catalog makes of the dotted names in a question (``orders.amount``)."""

    # A name (lower-cased, as the words are) -> the full name it is the end of
    # (``shop.orders.amount``): a memory that writes the full name holds what was asked for.
    full_names: dict[str, str] = field(default_factory=dict)
    # The entities the names mean, each once: memories linked to them are found by their tags.
    entities: list[str] = field(default_factory=list)
    # How each name was read, for the answer's notes.
    notes: list[str] = field(default_factory=list)
    # The names that mean nothing: searched as typed, and by their words.
    unknown: tuple[str, ...] = ()
    # Why a memory link in the question finds nothing (no such memory, a soft-deleted one, an id sync moved), as
    # ``-e memory:<id>`` says.
    warnings: list[str] = field(default_factory=list)


def question_names(kb: Context, question: str, resolver: Resolver | None = None,
                   read: Mapping[str, bool] | None = None, every_word: bool = False) -> QuestionNames:
    """The catalog entities the question's names mean, as a search reads them: a dotted name
    (a full name, a shorter one the catalog completes, ``customers.email`` ->
    ``shop.customers.email``, a walk of joins) or a bare one (``is_returned``; an ordinary word
    only alone or in backquotes), or, when the name is ambiguous, every reading that resolves (a
    bare name with more than ``MAX_READINGS`` is left to the words, with a note). A dotted name
    that means nothing is searched as typed and by its words. ``read``: the memory links the
    search's entities named, each mapped to whether its memory is live: read once already (and a
    deleted one told), not again. ``every_word``: the search shows only memories holding every
    word (``--all``), so a name's links rank those, they admit none. Public for the benchmark,
    which builds its requests as ``search`` does."""
    from ..search.analysis import fold, symbols  # Whoosh's analysis: a command that only reads files never loads it

    dotted = [name for name in symbols(question, as_typed=True) if _DOTTED.fullmatch(name)]
    plain = fold(question)  # a name typed in fullwidth letters is the name (the words are matched so)
    alone = _ALONE.fullmatch(plain)
    bare = list(dict.fromkeys(([alone.group(1)] if alone else []) + _QUOTED.findall(plain) + _SNAKE.findall(plain)))
    links = list(dict.fromkeys(_link_named(kb, link) for link in _MEMORY_LINK.findall(question)))
    read = read or {}
    warnings = _deleted_by_id(kb, question.strip(), read)
    if not dotted and not bare and not links:
        return QuestionNames(warnings=warnings)
    resolver = resolver or kb.resolver()
    full_names: dict[str, str] = {}
    # As ``-e memory:<id>``: that memory first, the memories linking to it found too (a live one:
    # a soft-deleted memory is found by no search).
    linked = resolver.resolve_leniently(renames_followed(kb, links, warnings), warnings)
    live, deleted = kb.memory_links([link for link in linked if link not in read])
    entities = [link for link in linked if read.get(link, link in live)]
    warnings += deleted
    notes: list[str] = [f"{link!r} names memory {link.removeprefix(MEMORY_LINK)}: it comes first, and "
                        f"{_linked('it', every_word)}." for link in entities]
    unknown: list[str] = []
    for name in dotted + bare:
        found = resolver.candidates(name) or (resolver.candidates(name.lower()) if name != name.lower() else [])
        if not found and "." in name:
            unknown.append(name)  # its words are searched too; a bare name is one word already
        if not found:
            continue
        if len(found) > MAX_READINGS and "." not in name:
            shown = ", ".join(found[:MAX_READINGS]) + f" and {len(found) - MAX_READINGS} more"
            notes.append(f"{name!r} may be any of {len(found)} entities ({shown}); searched as a word only. "
                         f"Write <model>.{name} to find the memories linked to one.")
            continue
        if len(found) == 1 and found[0].lower().endswith("." + name.lower()):
            full_names[name.lower()] = found[0].lower()  # as the index holds words and symbols
        entities.extend(e for e in found if e not in entities)
        notes.append(f"{name!r} names {' or '.join(found)}; {_linked('it' if len(found) == 1 else 'them', every_word)}.")
    return QuestionNames(full_names, entities, notes, tuple(unknown), warnings)


def _linked(it: str, every_word: bool) -> str:
    """What a name's links do to the answer: found too, or (``--all``) ranked, never admitted."""
    return f"memories linked to {it} {'that hold every word rank higher' if every_word else 'are found too'}"


def _deleted_by_id(kb: Context, question: str, read: Mapping[str, bool]) -> list[str]:
    """The memory whose id is the whole question comes first (``search 12``): a soft-deleted one
    is in no answer, and is told as its link ``memory:12`` is (unless ``-e`` named it: told)."""
    link = memory_link(question)
    if link in read or not is_valid_id(question) or not kb.memory_exists(question):
        return []
    return kb.memory_links([link])[1]


def _link_named(kb: Context, link: str) -> str:
    """``memory:<id>`` as the question means it: without the punctuation after it (and a markdown
    link's target, ``[memory:3](url)``), unless a memory's id ends so."""
    memory_id = link.removeprefix(MEMORY_LINK)
    bare = _LINK_END.split(memory_id, maxsplit=1)[0].rstrip(_AFTER_LINK)
    if not bare or bare == memory_id:
        return link
    with contextlib.suppress(KBError):
        check_id(memory_id)
        if kb.memory_exists(memory_id):
            return link
    return memory_link(bare)


def renames_followed(kb: Context, refs: list[str], warnings: list[str]) -> list[str]:
    """``refs`` with each ``memory:<id>`` of an id a rename moved to a memory still there
    (``renamed_to``) as the link to that memory, each told in ``warnings``: agents told the old id
    mean it, as ``get`` of the id says (it was dropped as "No memory with id")."""
    out: list[str] = []
    for ref in refs:
        memory_id = linked_id(ref.strip()) if isinstance(ref, str) else None
        went = None
        if memory_id is not None and is_valid_id(memory_id) and not kb.memory_exists(memory_id):
            went = kb.renamed_to(memory_id)
        if went is None:
            out.append(ref)
            continue
        out.append(memory_link(went[0]))
        warnings.append(f"entity {shown_value(ref)}: memory '{memory_id}' was renamed to '{went[0]}' in commit "
                        f"{went[1][:12]}, so {memory_link(went[0])} was searched for; use that id.")
    return out


def _lenient_entities(kb: Context, resolver: Resolver, entities: Any, query: Any,
                      warnings: list[str]) -> tuple[list[str], dict[str, bool]]:
    """The entities that resolve, and of their memory links, whether each one's memory is live."""
    refs: list[str] = []
    if entities:
        refs = split_references(entities) if isinstance(entities, str) else flatten_refs(entities)
        # A blank reference (``-e ''``) names nothing: told, as a reference that resolves to nothing is.
        blank = [entities] if isinstance(entities, str) else list(entities)
        if any(isinstance(ref, str) and not split_references(ref) for ref in blank):
            warnings.append("entity '' dropped: an entity reference is blank; give one such as orders.amount, "
                            "or leave it out.")
    out = resolver.resolve_leniently(renames_followed(kb, refs, warnings), warnings)
    live, deleted = kb.memory_links(out)
    warnings += deleted
    links = {entity: entity in live for entity in out if linked_id(entity) is not None}
    if query is not None:
        try:
            found, _notes = query_entities(query, resolver)
        except KBError as exc:
            warnings.append(f"query dropped: {exc}")
        else:
            out.extend(e for e in found if e not in out)
    return out, links


def hit(
    kb: Context, doc: Mapping[str, Any], inputs: list[str], full: bool, warnings: list[str], has_query: bool
) -> Hit:
    """A stored document as a search hit: its live entities, those matching the inputs, and a
    warning when an example query's references went stale."""
    data = doc["data"]
    live = [e for e in data["entities"] if _entity_live(kb, e)]
    hit: Hit = {
        "id": data["id"],
        "score": round(float(doc.get("score") or 0.0), 4),
        "title": data["title"],
        "type": data["type"],
        "description": data["description"] or first_paragraph(data["learning"], MAX_DESCRIPTION),
        "entities": live,
        "matched_entities": [e for e in live if any(e == i or e.startswith(i + ".") for i in inputs)],
        "project": data["project"],
        "scope": data["scope"],
        "created_at": data["created_at"],
    }
    if has_query:
        hit["query"] = data["query"]
        problem = _query_problem(kb, data["query"])
        if problem is not None and problem[0]:
            warnings.append(
                f"example_query {memory_link(data['id'])}: attached query has stale references "
                f"({problem[1]}); re-save to clean."
            )
        elif problem is not None:  # written as SLayer reads no query: re-saving it fails too
            warnings.append(
                f"example_query {memory_link(data['id'])}: attached query is not a valid SlayerQuery "
                f"({problem[1]}); correct it with '{command(kb.root)} edit {shell_word(data['id'])}'."
            )
    if full:
        hit["learning"] = data["learning"]
    return hit


def _entity_live(
    kb: Context, entity: str) -> bool:
    if (memory_id := linked_id(entity)) is not None:
        return kb.memory_exists(memory_id)
    return kb.catalog.entity_exists(entity)


def _query_problem(kb: Context, query: dict[str, Any]) -> tuple[bool, str] | None:
    """Why an example query does not resolve, or None: ``(True, why)`` when its references no
    longer resolve (stale: what a catalog delete leaves), ``(False, why)`` when it is not a
    SlayerQuery (``COUNT(*)``, ``amount : sum``, which older releases took). Kept per catalog (a new
    catalog object is loaded whenever its files change): a warm search returns the same example
    queries again and again, and resolving one took about a millisecond. A query naming a
    memory depends on the memories too, and is resolved every time."""
    global _problems_known
    try:
        key: str | None = json.dumps(query, sort_keys=True, default=str)
    except (TypeError, ValueError):  # keys of mixed types: resolved every time (and found stale)
        key = None
    catalog = kb.catalog
    if _problems_known[0] is not catalog or len(_problems_known[1]) > _PROBLEMS_KEPT:
        _problems_known = (catalog, {})
    known = _problems_known[1]
    if key is not None and key in known:
        return known[key]
    try:
        query_entities(query, kb.resolver())
    except KBError as exc:
        problem: tuple[bool, str] | None = (exc.stale, str(exc))
    else:
        problem = None
    if key is not None and MEMORY_LINK not in key:
        known[key] = problem
    return problem


# (the catalog, query as JSON -> _query_problem's answer); this many answers at most.
_PROBLEMS_KEPT = 10_000
_problems_known: tuple[Catalog | None, dict[str, tuple[bool, str] | None]] = (None, {})


def timeline(kb: Context, memory_id: str, before: int = 5, after: int = 5) -> Timeline:
    """The memories saved just before and after one, in the same session, oldest first; with a
    note when the id moved on this clone (``Context.moved_notes``)."""
    check_existing_id(memory_id, "whose session neighbours to show")
    kb.ensure_fresh()
    try:
        focus = kb.read_with_fix(memory_id)
    except NotFoundError:
        kb.check_not_moved(memory_id)  # merged away: say where the memory went
        raise
    if focus.is_deleted:
        raise deleted_error(focus, kb.root)
    session = focus.session_id
    found = None
    docs = kb.documents(None, channels.restrict(exact={"session_id": session}), limit=None)
    ordered = sorted((d["data"] for d in docs), key=lambda d: (time_order(d["created_at"]), id_sort_key(d["id"])))
    position = next(i for i, d in enumerate(ordered) if d["id"] == memory_id)
    shown = lambda d: hit(kb, {"data": d, "score": 0.0}, [], False, [], False)  # noqa: E731
    with contextlib.suppress(KBError):  # a broken session file: the memories still show
        found = sessions.read(kb, session) if session else None
    return {
        "session_id": session,
        "session": found.to_dict() if found else None,
        "before": [shown(d) for d in ordered[max(0, position - before) : position]],
        "focus": shown(ordered[position]),
        "after": [shown(d) for d in ordered[position + 1 : position + 1 + after]],
        "warnings": kb.moved_notes(memory_id),
    }


def stats(kb: Context) -> Stats:
    """Counts of memories, sessions, prompts, projects and types, and the meaning channel's state."""
    kb.ensure_fresh()
    docs = kb.documents(None, channels.restrict(), limit=None)
    types: dict[str, int] = {}
    untyped = 0  # apart from the types: a memory may have the type 'none'
    projects = set()
    for doc in docs:
        data = doc["data"]
        if data["type"]:
            types[data["type"]] = types.get(data["type"], 0) + 1
        else:
            untyped += 1
        if data["project"]:
            projects.add(data["project"])
    files = sessions.load_all(kb)  # the session files, not the ids memories carry
    known = files.sessions
    stats: Stats = {
        "memories": len(docs),
        "sessions": len(known),
        "prompts": sum(len(s.prompts) for s in known),
        "projects": sorted(projects),
        "types": dict(sorted(types.items())),
        "untyped": untyped,
        "search_by_meaning": kb.meaning_status(),
    }
    # The memories counted are those read: the files skipped are named, as list and search do.
    if warnings := skipped(kb) + files.warnings:
        stats["warnings"] = warnings
    return stats
