"""``validate`` and ``fmt``: the checks a pull request's CI and pre-commit run on memory files.

A memory file is checked against the JSON Schema shipped beside this module
(``memory.schema.json``, usable by editors through yaml-language-server), then against what a
schema cannot say: the id rules and the file name, ids that differ only in letter case or Unicode
normalisation, entities that must be canonical and exist in the catalog, ``memory:`` targets that
must exist, and the canonical formatting ``fmt`` writes. Every problem is ``path:line: message``,
the line being that of the offending key or list item (line 1 for a problem of the file as a
whole).

Paths name memory files, ``memories/`` folders or KB folders. A catalog file (a datasource, a
model, ``priority.yaml``) stands for every memory of its KB, since changing the catalog can leave
any memory's references dangling. The index is not used (validation runs on a fresh CI checkout),
but the parsed catalog the KB's commands cache is, while the catalog files are as it says.

A session file (``sessions/<id>.yaml``, sessions.py) is checked against its own schema
(``session.schema.json``), for a file name that spells its id (one ``session-start`` would
take: no control character, nor in a memory's ``session_id``), and for the canonical form.

A stored example query is checked as search reads it: it must be a SlayerQuery (keys, shapes,
values: ``slayerquery.check_query``, as ``save`` checks it) whose references all resolve against
the catalog (after a cascade the query keeps its text, SLayer's rule, and search warns that it has
stale references; validate reports the same thing, with the fix). Soft-deleted memories, which
search never shows, are not checked for it. With ``--against REF``, auto ids this branch added
that REF already uses are reported too, with the command that renumbers them, and so are links the
branch added to memories REF forgot or to entities REF deleted from the catalog since (``slayer-kb
merge REF`` strips them), and a topic key held twice once merged: a memory the branch added or
gave the key to beside one REF added or changed since (topickeys.py). Validating the whole KB then
checks only the files the branch changed since it parted from REF and the memories a changed datasource or
model file can reach (``teamchecks.catalog_reach``), unless ``priority.yaml`` changed or a
memory was removed (then every file, the checks against REF still of the branch's files; and
looks for a key's other holders only when the branch's files hold one: a key
held twice among files the branch left alone was checked where they came from). A query problem
the branch inherits is a warning (inherited.py). Every problem of every file is reported in one run.
"""

from __future__ import annotations

import contextlib
import os
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from ..catalog.cache import catalog_signature, load_catalog_cached
from ..catalog.catalog import Catalog, load_catalog
from ..catalog.resolve import Resolver
from ..core import yamlio
from ..core.engram import title_problem
from ..core.errors import InvalidIdError, InvalidInputError, KBError, MemoryFileError, ResolutionError
from ..core.fileio import NotRegularFile, TooLarge, not_a_file, read_regular, unusable_folder
from ..core.ids import check_id, check_new_id, fold_id, free_variant
from ..core.inputs import checked_learning, content_limit
from ..core.locate import linked_id, memory_link, memory_path
from ..core.memory import (
    MAX_FILE_BYTES,
    TIME_KEYS,
    Memory,
    alias_line,
    check_conflict_markers,
    dumps,
    first_difference,
    key_line,
    loads,
    too_deep_for_parser,
    too_large,
)
from ..core.nesting import MAX_DEPTH, value_depth
from ..core.outcomes import Report
from ..core.problems import Problem, command, git_command, shell_word, shown, words
from ..core.session import SESSIONS_DIR, case_twins, file_name, id_of_file, printable, unprintable
from ..core.session import dumps as dump_session
from ..core.session import loads as load_session
from ..store import mergemark
from ..store.lineends import LineEnds
from ..store.listing import RACY_SECONDS
from ..store.repo import STATE_DIR, GitStore
from ..store.tracked import untracked_leftovers
from .inherited import inherited_as_warnings
from .mergelinks import MergeRenames, dangling
from .misplaced import misplaced
from .plainmerge import plain_merge_conflicts
from .queryproblem import QueryProblem, query_problem, reported
from .schema_words import item_line, memory_problems, read_times, session_problems
from .teamchecks import branch, branch_files, id_collisions, links_to_gone
from .timechecks import future_times
from .topickeys import holds_a_topic_key, keyed, topic_key_holders, topic_key_twins, topic_keys_taken

MEMORIES = "memories"


# -- what to check -----------------------------------------------------------------------------


@dataclass
class _Target:
    """The memory files of one KB to check; ``everything`` after a catalog file or a folder."""

    root: Path
    files: dict[Path, str] = field(default_factory=dict)  # absolute path -> shown path
    everything: bool = False
    hook: bool = False  # a catalog file named, as pre-commit names a commit's: inherited.py
    folder: bool = False  # a folder named (not only a catalog file): every file of it was asked for


def targets(paths: Sequence[Path], problems: list[Problem]) -> dict[Path, _Target]:
    targets: dict[Path, _Target] = {}

    def target(root: Path) -> _Target:
        root = root.resolve()
        return targets.setdefault(root, _Target(root))

    for given in paths:
        path = given.absolute()
        if path.is_dir():
            if path.name == MEMORIES:
                target(path.parent).everything = target(path.parent).folder = True
            elif path.name == SESSIONS_DIR:
                for name in _listing(path):
                    target(path.parent).files[path / name] = str(given / name)
            elif (path / MEMORIES).is_dir() or (path / "datasources").is_dir():
                target(path).everything = target(path).folder = True
            else:
                problems.append(Problem(str(given), 1, "not a knowledge base or memories folder"))
        elif path.parent.name == MEMORIES:
            target(path.parent.parent).files[path] = str(given)
        elif _catalog_root(path) is not None:
            kb = target(_catalog_root(path))  # type: ignore[arg-type]
            kb.everything = kb.hook = True
        elif path.parent.name == SESSIONS_DIR:
            target(path.parent.parent).files[path] = str(given)
        elif not path.exists():
            problems.append(Problem(str(given), 1, "no such file"))
        else:
            problems.append(Problem(
                str(given), 1,
                "not a memory or session file: expected <kb>/memories/<id>.yaml or <kb>/sessions/<id>.yaml",
            ))
    return targets


def _catalog_root(path: Path) -> Path | None:
    if path.suffix != ".yaml":
        return None
    if path.parent.name == "datasources" or path.name == "priority.yaml":
        return path.parent.parent if path.parent.name == "datasources" else path.parent
    if path.parent.parent.name == "models":
        return path.parent.parent.parent
    return None


def _listing(memories: Path) -> list[str]:
    """Names in ``memories/`` to check (not dot-files, nor an editor's leftovers git does not track),
    folders included: every command skips them, and the files in one are no memories (``misplaced``);
    none in a folder that is a link out of the KB or no folder (``unusable_folder``, reported)."""
    if unusable_folder(memories.parent, memories.name) is not None:
        return []
    try:
        with os.scandir(memories) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith("."))
        return sorted(set(names) - untracked_leftovers(memories, names))
    except OSError:
        return []


def expand(target: _Target) -> None:
    if target.everything:
        for folder in (target.root / MEMORIES, target.root / SESSIONS_DIR):
            for name in _listing(folder):
                target.files.setdefault(folder / name, shown(folder / name))


# -- validate ----------------------------------------------------------------------------------


class KBContext:
    """What checking a memory needs to know about its KB, computed once per KB: its catalog and
    memory ids, on disk (:meth:`of`) or at a commit (review, history.py)."""

    def __init__(self, catalog: Catalog, ids: set[str], command: str, root: Path, line_ends: LineEnds | None = None,
                 renames: MergeRenames | None = None) -> None:
        self.catalog = catalog
        self.renames = renames  # a merge in progress's, on disk (``of``); none at a commit
        self.ids = ids
        self.command = command  # slayer-kb as a fix runs it (problems.command)
        self.root = root  # the KB's folder, where a fix's git runs (problems.git_command)
        self.line_ends = line_ends  # on disk; none at a commit, whose blobs are as git stores them
        self.max_content = content_limit()  # a save's size limit of a learning (SLAYER_KB_MAX_CONTENT)
        folded: dict[str, list[str]] = {}
        for memory_id in self.ids:
            folded.setdefault(fold_id(memory_id), []).append(memory_id)
        self.folded = folded
        self.resolver = Resolver(self.catalog, self.ids.__contains__)
        # Each memory's query problem found, and its fix, by memory id: what the inherited check
        # compares with the base's (``inherited``).
        self.queries: dict[str, tuple[QueryProblem, str]] = {}

    @classmethod
    def of(cls, root: Path) -> KBContext:
        names = _listing(root / MEMORIES)
        return cls(_catalog(root), {name[:-5] for name in names if name.endswith(".yaml")}, command(root), root,
                   LineEnds(root), MergeRenames(root))


def as_committed(text: str, line_ends: LineEnds | None, path: str | os.PathLike[str]) -> str:
    """``text`` of the file at ``path`` as git would commit it (``LineEnds.as_committed``)."""
    return text if line_ends is None else line_ends.as_committed(text, path)


def _catalog(root: Path) -> Catalog:
    """The KB's catalog: the parse its commands keep in the state folder while the files are as
    it says (parsing hundreds of model files is most of a validate at 10,000 memories); parsed
    where there is none (a fresh CI checkout)."""
    state = root / STATE_DIR
    if not state.is_dir():
        return load_catalog(root)
    return load_catalog_cached(root, state / "catalog.json", catalog_signature(root, RACY_SECONDS))


def validate(paths: Sequence[Path], against: str | None = None, opened: GitStore | None = None) -> Report:
    """Check memory files (see the module docstring); ``against`` a git revision also reports
    auto ids added on this branch that the revision uses for another memory (``opened``: the
    repository of a KB among them, already open)."""
    report = Report()
    for target in targets(paths, report.problems).values():
        compared = branch(target.root, against, opened) if against is not None else None
        changed = branch_files(compared) if compared is not None and target.everything else None
        reached: dict[Path, str] = {}
        if changed is not None and not changed.whole:
            # Only the branch's own files, and the references of those its catalog changes can
            # reach: the rest was checked where they came from.
            target.files, target.everything, reached = changed.own, False, changed.reached
        expand(target)
        # The files compared with the revision: the branch's own, or those named to check (none
        # for a whole KB without a merge base: there is no "since" to compare).
        own = changed.own if changed is not None else {} if target.everything else target.files
        report.problems.extend(Problem(f"{folder}/", 1, why) for folder in (MEMORIES, SESSIONS_DIR)
                               if (why := unusable_folder(target.root, folder)) is not None)
        # Files git left, not the KB's, or folds a merge killed once committed owes (its 'merge REF' again,
        # not a forget by hand of a topic key's second holder): said first.
        if opened is not None and opened.root == target.root and (
                left := mergemark.interrupted(opened) or mergemark.owed_warning(opened)):
            report.problems.append(Problem(f"{MEMORIES}/", 1, left))
        context = KBContext.of(target.root)
        report.problems.extend(
            Problem(shown(p.path), p.line or 1, f"catalog: {p.message}")
            for p in context.catalog.problems
        )
        report.problems.extend(empty_model_files(context.catalog))
        found: list[Problem] = []
        for path, name in sorted({**target.files, **reached}.items()):
            report.checked += 1
            found.extend(check_file(path, name, context, report.warnings) if path in target.files
                         else reference_problems(path, name, context))
        report.problems.extend(inherited_as_warnings(found, report.warnings, compared, target.hook, target.root,
                                                     context.ids, context.queries))
        # A key held twice needs every holder, not just the branch's files.
        holders = target.files
        if compared is not None and holds_a_topic_key(own):
            holders = {**topic_key_holders(target.root, compared.store), **target.files}
            report.problems.extend(topic_keys_taken(compared, keyed(own), context.command))
        report.problems.extend(topic_key_twins(holders, context.command))
        if compared is not None:
            report.problems.extend(id_collisions(compared, target.files))
            report.problems.extend(links_to_gone(compared, target.files, context.catalog))
            report.problems.extend(plain_merge_conflicts(compared, report.warnings))
    report.problems.sort(key=lambda p: (p.path, p.line))
    report.warnings.sort(key=lambda p: (p.path, p.line))
    return report


def empty_model_files(catalog: Catalog) -> list[Problem]:
    """A 0-byte model file: the catalog takes it as a model of nothing (an empty definition is
    valid), but it is far more often a write cut short or a stray ``touch``."""
    problems = []
    for datasource in catalog.datasources.values():
        for model in datasource.models.values():
            with contextlib.suppress(OSError):  # gone since the catalog was read: nothing to say
                if model.path.stat().st_size == 0:
                    problems.append(Problem(shown(model.path), 1, "catalog: the model file is empty (0 bytes), a model "
                                            "with no columns or measures; write its definition (docs/format.md), "
                                            "or remove the file"))
    return problems


def id_problems(memory_id: str, name: str, context: KBContext) -> list[Problem]:
    """The problems of the id a memory's file ``name`` gives it: one no new memory may take, or one
    colliding with another where a checkout folds case or Unicode (review checks a branch's with it)."""
    problems: list[Problem] = []
    try:
        check_new_id(memory_id)
    except InvalidIdError as exc:
        problems.append(Problem(name, 1, f"the file name is the id: {exc}"))
    others = [i for i in context.folded.get(fold_id(memory_id), []) if i != memory_id]
    if others:
        how = ("letter case" if all(i.casefold() == memory_id.casefold() for i in others)
               else "letter case or Unicode normalisation")
        problems.append(Problem(name, 1, f"id '{memory_id}' differs only in {how} from {', '.join(sorted(others))}: "
                                f"they collide on macOS and Windows checkouts; rename one: {_renaming(memory_id, context)}"))
    return problems


def check_file(path: Path, name: str, context: KBContext, warnings: list[Problem] | None = None) -> list[Problem]:
    """The file's problems; its warnings (timechecks.py) go to ``warnings`` when given."""
    if path.parent.name == SESSIONS_DIR:
        return check_session_file(path, name, context)
    problems: list[Problem] = []

    def add(line: int | None, message: str) -> None:
        problems.append(Problem(name, line or 1, message))

    if (why := misplaced(path, context.command)) is not None:
        add(1, why)
        return problems
    problems.extend(id_problems(path.stem, name, context))
    text = read_text(path, add, MAX_FILE_BYTES)
    if text is not None:
        problems.extend(check_memory_text(text, path.stem, name, context, warnings=warnings))
    return problems


def _renaming(memory_id: str, context: KBContext) -> str:
    """The step that gives memory ``memory_id`` the next id that collides with none, its links
    rewritten (``rename``; the NFC spelling, which a new id must have). Where the two share one
    file (a checkout that folds case), it must hold this memory's version before, and the others'
    are checked out again after, the move having taken the one file."""
    stem = unicodedata.normalize("NFC", memory_id)
    new = free_variant(stem, context.folded)
    others = sorted(f"{MEMORIES}/{i}.yaml" for i in context.folded[fold_id(memory_id)] if i != memory_id)
    own = words(f"{MEMORIES}/{memory_id}.yaml")
    return (f"{context.command} rename {words(memory_id, new)} (it rewrites the {memory_link(memory_id)} links; where the "
            f"two share one file, as on macOS, run {git_command(context.root, f'checkout HEAD -- {own}')} before it "
            f"and {git_command(context.root, f'checkout HEAD -- {words(*others)}')} after it)")


def reference_problems(path: Path, name: str, context: KBContext) -> list[Problem]:
    """The problems of a memory file's entities and query, the checks a catalog change can
    change: for a file the branch did not change (the rest was checked where it came from), at a
    third of ``check_file``'s cost. A file that does not read or parse as a mapping has none."""
    try:
        text = read_regular(path, limit=MAX_FILE_BYTES).decode("utf-8")
        # An alias can expand to gigabytes: never parsed (check_file said so where it came from).
        fields = yamlio.load(text) if alias_line(text) is None else None
    except (OSError, NotRegularFile, TooLarge, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return []
    if not isinstance(fields, dict):
        return []
    found: list[tuple[int | None, str, str]] = []
    if isinstance(fields.get("entities"), list):
        found += ((line, message, "") for line, message in _entity_problems(text, fields["entities"], path.stem, context))
    if isinstance(fields.get("query"), dict) and not fields.get("deleted_at"):
        found += _query_problems(text, fields["query"], path.stem, context)
    return sorted((Problem(name, line or 1, message, kind) for line, message, kind in found), key=lambda p: p.line)


def check_memory_text(text: str, memory_id: str, name: str, context: KBContext,
                      typed: str | None = None, warnings: list[Problem] | None = None) -> list[Problem]:
    """Every problem of one memory file's text, its name and id aside (``check_file``), by line;
    the review of a pull request (history.py) checks the files at its head with it. ``typed``: the
    file as ``fmt`` is told to take it, when not ``name`` (review names files from the KB's folder).
    Its warnings (timechecks.py) go to ``warnings`` when given."""
    return sorted(_text_problems(text, memory_id, name, context, typed or name, warnings), key=lambda p: p.line)


def _text_problems(text: str, memory_id: str, name: str, context: KBContext, typed: str,
                   warnings: list[Problem] | None) -> list[Problem]:
    problems: list[Problem] = []

    def add(line: int | None, message: str, kind: str = "") -> None:
        problems.append(Problem(name, line or 1, message, kind))

    try:
        check_conflict_markers(text, name)
    except MemoryFileError as exc:  # said as every reader says it
        add(exc.line, exc.message)
        return problems
    alias = alias_line(text)
    if alias is not None:
        add(alias, "uses a YAML alias (*name); write the value out instead")
        return problems
    try:
        data = yamlio.load(text)
        deep = value_depth(data, MAX_DEPTH + 1) > MAX_DEPTH + 1
    except yaml.YAMLError as exc:
        if not too_deep_for_parser(exc):
            mark = getattr(exc, "problem_mark", None)
            add(mark.line + 1 if mark else 1, f"invalid YAML: {getattr(exc, 'problem', None) or exc}")
            return problems
        deep = True
    except RecursionError:
        deep = True
    if deep:  # the schema check would recurse as deep: loads says what is wrong
        try:
            loads(text, memory_id, name)
        except MemoryFileError as exc:
            add(exc.line, exc.message)
        return problems
    if not isinstance(data, dict):  # a list or a scalar: said as every reader says it
        try:
            loads(text, memory_id, name)
        except MemoryFileError as exc:
            add(exc.line, exc.message)
        return problems
    times = read_times(text, data, TIME_KEYS)
    if warnings is not None:
        warnings.extend(future_times(times, name, memory_id, context.command))
    schema_problems = list(memory_problems(text, data, times))
    for line, message in schema_problems:
        add(line, message)
    memory: Memory | None = None
    try:
        memory = loads(text, memory_id, name)
    except MemoryFileError as exc:
        if not schema_problems:
            add(exc.line, exc.message)
            return problems
    # Entities and the query are checked whatever else is wrong: one run reports every problem.
    fields = data if isinstance(data, dict) else {}
    entities = fields.get("entities")
    if isinstance(entities, list):
        told = {line for line, _message in schema_problems}  # an item the schema refused is told once
        for line, message in _entity_problems(text, entities, memory_id, context):
            if line not in told:
                add(line, message)
    if isinstance(fields.get("query"), dict) and not fields.get("deleted_at"):
        for line, message, kind in _query_problems(text, fields["query"], memory_id, context):
            add(line, message, kind)
    if memory is not None and memory.session_id is not None and (bad := unprintable(memory.session_id)) is not None:
        add(key_line(text, "session_id"), f"session_id {memory.session_id!r} contains U+{ord(bad):04X}, a control or "
            f"invisible character, which save and session-start refuse; write the id without it, "
            f"e.g. {printable(memory.session_id)!r}")
    if memory is not None and (said := title_problem(memory.title)) is not None:
        add(key_line(text, "title"), said)
    try:
        if memory is not None:
            checked_learning(memory.learning, context.max_content)
    except InvalidInputError as exc:  # the size a save refuses (format.md's Sizes)
        add(key_line(text, "learning"), str(exc))
    if memory is None or schema_problems:
        return problems  # fmt cannot rewrite a file that breaks the schema
    canonical = dumps(memory)
    if canonical != as_committed(text, context.line_ends, memory_path(memory_id)):
        line = first_difference(text, canonical)
        differs = text.splitlines()[line - 1:line]
        # A key read in NFC (memory.COMPOSED_KEYS) looks the same decomposed: say why it differs.
        why = "" if unicodedata.is_normalized("NFC", "".join(differs)) else " (decomposed Unicode, as macOS writes it)"
        add(line, f"not in canonical form{why}; run '{context.command} fmt {shell_word(typed)}'")
    return problems


def check_session_file(path: Path, name: str, context: KBContext) -> list[Problem]:
    """A session file (sessions.py): its name, the session schema, and the canonical form."""
    problems: list[Problem] = []

    def add(line: int | None, message: str) -> None:
        problems.append(Problem(name, line or 1, message))

    if (why := misplaced(path, context.command)) is not None:
        add(1, why)
        return problems
    session_id = id_of_file(path.name)
    if session_id is None:
        session_id = unquote(path.stem)
        wanted = file_name(session_id) if session_id.strip() else "<session id>.yaml"
        add(1, f"the file name is the session's id, with %XX for each byte of a character a portable "
               f"file name cannot hold; for the id {session_id!r} rename it to {wanted}")
    elif (bad := unprintable(session_id)) is not None:
        add(1, f"the file name spells the session id {session_id!r} with U+{ord(bad):04X}, a control or invisible "
               f"character, which session-start refuses; rename the file to a printable id, e.g. "
               f"{file_name(printable(session_id) or 'ses')} (and change the session_id of the memories that name it)")
    if twins := case_twins(path):
        add(1, f"session id {session_id!r} differs only in letter case from {twins[0]!r}: their files collide on macOS "
               f"and Windows checkouts; keep one: move this file's prompts into {file_name(twins[0])}, delete this "
               f"file, and give the memories whose session_id is {session_id!r} the session_id {twins[0]!r}")
    text = _text_to_check(path, name, add)
    if text is None:
        return problems
    try:
        data = yamlio.load(text)
    except (yaml.YAMLError, RecursionError):
        data = None  # load_session below says what is wrong, with the line
    else:
        if not isinstance(data, dict) or value_depth(data, MAX_DEPTH) > 4:
            data = None
    if data is not None:
        schema_problems = list(session_problems(text, data))
        for line, message in schema_problems:
            add(line, message)
        if schema_problems:
            return problems
    try:
        session = load_session(text, session_id, name)
    except MemoryFileError as exc:
        add(exc.line, exc.message)
        return problems
    canonical = dump_session(session)
    if canonical != as_committed(text, context.line_ends, path):
        add(first_difference(text, canonical), f"not in canonical form; run '{context.command} fmt {shell_word(name)}'")
    return problems


def _text_to_check(path: Path, name: str, add: Any) -> str | None:
    """``read_text``, and None too (said with ``add``) for text using a YAML alias, which
    slayer-kb refuses before parsing (an alias can expand to gigabytes), and for a file with
    the markers of an unresolved merge conflict (said as every reader says it)."""
    text = read_text(path, add)
    if text is None:
        return None
    try:
        check_conflict_markers(text, name)
    except MemoryFileError as exc:
        add(exc.line, exc.message)
        return None
    alias = alias_line(text)
    if alias is not None:
        add(alias, "uses a YAML alias (*name); write the value out instead")
        return None
    return text


def read_text(path: Path, add: Any, limit: int | None = None) -> str | None:
    """The file's text, or None (said with ``add``); a memory file over ``limit`` bytes is
    refused by its size, unread."""
    if not path.is_symlink() and not path.exists():
        add(1, "no such file")
        return None
    try:
        return read_regular(path, limit=limit).decode("utf-8")
    except TooLarge as exc:
        add(1, too_large(exc.size))
    except NotRegularFile as exc:
        add(1, f"{not_a_file(exc.kind, path.parent.name)}; slayer-kb skips it")
    except UnicodeDecodeError as exc:
        add(1, f"not UTF-8 text ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        add(1, f"cannot be read: {exc.strerror}")
    return None


def _entity_problems(
    text: str, entities: list[Any], memory_id: str, context: KBContext
) -> Iterator[tuple[int | None, str]]:
    seen: set[str] = set()
    for index, entity in enumerate(entities):
        if not isinstance(entity, str):
            continue  # the schema check has said what it should be
        message = None
        if entity in seen:
            message = f"entity '{entity}' is listed twice; keep one"
        elif (target := linked_id(entity)) is not None:
            try:
                check_id(target)
            except InvalidIdError as exc:
                message = f"'{entity}' is not a memory reference: {exc}"
            else:
                if target not in context.ids:
                    message = dangling(entity, target, context.command, context.renames)
        elif not context.catalog.entity_exists(entity):
            message = _unresolved(entity, context, memory_id)
        seen.add(entity)
        if message is not None:
            yield item_line(text, "entities", index), message


def _query_problems(
    text: str, query: dict[str, Any], memory_id: str, context: KBContext
) -> Iterator[tuple[int | None, str, str]]:
    """What search says of the attached query, with the fix, and the problem's kind: not a
    SlayerQuery (``INVALID_QUERY``: a key SLayer does not have, a wrong shape, a reference not
    written as SLayer reads one: ``COUNT(*)``, ``amount : sum``), or references that no longer resolve (``STALE_QUERY``:
    what a catalog delete leaves, which sync pushes)."""
    found = query_problem(query, context.resolver)
    if found is not None:
        fix = f"fix or remove the query with '{context.command} edit {shell_word(memory_id)}'"
        context.queries[memory_id] = found, fix
        yield key_line(text, "query"), reported(found, fix), found.kind


def _unresolved(entity: str, context: KBContext, memory_id: str) -> str:
    """The resolver's own words (those ``save`` prints), then the fix: the reference it probably
    meant when there is one (a typo), else ``prune`` for an entity the catalog no longer has."""
    try:
        canonical = context.resolver.resolve(entity).entity
    except ResolutionError as exc:
        edit = f"correct it with '{context.command} edit {shell_word(memory_id)}'"
        fix = edit if exc.suggestions else f"{edit}, or, if the catalog dropped it, strip it with '{context.command} prune'"
        # edit and prune refuse till then; prune too while a catalog edit is not committed
        until = context.renames.until_catalog.format(command=context.command) if context.renames else ""
        return f"entity '{entity}' does not resolve: {exc} ({until}{fix})"
    except KBError as exc:
        return f"entity '{entity}' does not resolve: {exc}"
    return f"entity '{entity}' is not canonical; write '{canonical}'"
