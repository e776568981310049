"""SLayer interchange: ``import-slayer DIR`` and ``export-slayer DIR`` (Engram's: engramimport.py).

A SLayer storage folder holds one ``memories/<id>.md`` per memory: YAML front matter between two
``---`` lines, then a blank line, then the learning::

    ---
    id: '42'
    description: Paid revenue rule
    entities:
    - shop.orders.amount
    query: {...}               # example-query memories only
    created_at: '2026-11-29T20:42:40Z'
    ---

    Revenue counts paid orders only.

Decisions:

- The body after the front matter (one blank line after ``---`` and the last newline removed) is
  the learning; ``export-slayer`` writes exactly that layout back, so an exported folder imported
  again and exported again gives the same bytes. Front matter keys are written in the order id,
  description, entities, query, created_at, then any Engram fields the memory has.
- Older SLayer folders keep every memory in one ``memories.yaml`` list; ``import-slayer`` reads
  that too.
- Ids and ``created_at`` are kept. An id that already exists in the KB is replaced when the KB's
  memory was made from the folder's (``made_from``: re-importing a folder brings its updates; git
  keeps the old version for ``restore --rev``); an identical memory is skipped. The KB's own, other
  memory under the id stays, and the folder's is imported under a new id (``_own_ids``). One whose file holds an edit not committed (staged or not) refuses the whole import,
  nothing written, as a save to it does (``Transaction.require_committed``). Of files sharing an
  id the first is taken (``memories/*.md`` by name, then ``memories.yaml``), each other skipped
  naming both, so a re-import is stable. Entities are resolved against the KB's catalog (and the
  ids being imported); one that does not resolve is dropped with a warning, as SLayer ignores
  stale tags at retrieval. Unknown front matter keys are dropped with a warning. A title is taken
  as a save takes it (``engram.given_title``: private spans redacted, trimmed; one with nothing
  visible is none; an over-long one skips the memory), each line break in it a space, said in a
  warning: Engram and a hand edit keep a break a save refuses, and the memory is kept. What an
  import changed of a record to take it is said only of a memory it writes, under the id that
  memory got.
- Skipped with a warning, the rest imported: a memory whose query is not a SlayerQuery that SLayer
  1.4.1 would take (``slayerquery.check_query``, as for a save); a file that cannot be read or
  parsed (not UTF-8, no front matter, not a regular file); a learning over the KB's size limit
  (``Context.check_learning``, as for a save); an id missing or not text (an unquoted ``010`` is
  YAML 1.1's 8: the warning says to quote it) or one no file may have; an id a sync or renumber
  moved on this clone (``Context.check_not_moved``: it names a teammate's memory now), with that
  refusal's message and fix; a new memory's id a ``rename`` moved (``Context.renamed_to``: its
  links and the agents told it mean the renamed memory); a memory an earlier import wrote that
  the KB forgot or changed since (slayersince.py), or one the KB updated later than the folder's
  ``updated_at``: the folder imported again must not undo the team's work; the warning names
  ``restore ID --rev`` of the import's commit, after which an import takes the folder's version.
  A link out of the folder (a file's, or the ``memories/`` folder's own) refuses the whole import.
- A link (``memory:ID``) to a memory of the folder the import skipped is dropped with a warning
  naming both, as an entity that does not resolve is: kept, it named nothing, or the KB's own
  unrelated memory of that id. Not a link to one skipped because the KB changed it since, whose
  id still is the folder's memory.
- ``export-slayer`` writes live memories only (SLayer has no soft delete). The folder is outside
  git, so it replaces or removes only files an earlier export wrote, as it wrote them, and removes
  those of memories no longer live (exportrecord.py); another file it would overwrite refuses the
  export, nothing written, unless forced; other files are left alone. The catalog needs no
  export, since a KB's catalog already is in SLayer's layout.
- ``import-engram FILE``: engramimport.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..catalog.resolve import Resolver
from ..core import engram, problems, yamlio
from ..core.errors import ConflictError, InvalidInputError, KBError, StoreError, os_fix
from ..core.fileio import outside, write_whole
from ..core.ids import case_conflict
from ..core.inputs import check_folder_named, given_folder
from ..core.locate import MEMORIES_DIR, linked_id, memory_link
from ..core.memory import Memory, dumps, time_order
from ..core.outcomes import ExportResult, ImportResult
from ..core.session import SESSIONS_DIR
from ..core.text import one_line
from ..store.place import git_dir_refusal
from ..store.repo import Change
from ..store.state import STATE_DIR
from ..transaction import memory_change
from . import exportrecord
from .slayerfile import OutsideLink, format_slayer_file, made_from, memory_from_row, parse_slayer_file, slayer_text
from .slayersince import IMPORTED, Since, since_imports

if TYPE_CHECKING:
    from ..context import Context
    from ..transaction import Transaction


# ---------------------------------------------------------------------------------------------
# SLayer


def _slayer_rows(folder: Path, result: ImportResult, gone: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The memories of the folder's files; a file that cannot be read or parsed is skipped, said
    in ``result`` and its name's id put in ``gone``, as a memory that cannot be taken is (one such
    file refused the whole import)."""
    rows: list[tuple[str, dict[str, Any]]] = []
    memories = folder / "memories"
    if memories.is_dir() and (target := outside(folder, memories)):
        # Each file's own link is checked below; a linked folder leads its plain files out too.
        raise OutsideLink(f"{memories} is a symlink to {target}, outside {folder}: slayer-kb imports only the "
                           "folder's own files. Replace the link with a copy of the folder, or remove it, then retry.")
    if memories.is_dir():
        for path in sorted(memories.glob("*.md")):
            try:
                data = parse_slayer_file(slayer_text(folder, path), str(path))
            except OutsideLink:
                raise
            except InvalidInputError as exc:
                result.skipped += 1
                result.warnings.append(f"{exc} (skipped)")
                gone.add(path.stem)
                continue
            data.setdefault("id", path.stem)
            rows.append((str(path), data))
    listing = folder / "memories.yaml"
    if listing.is_file():
        try:
            items = yamlio.load(slayer_text(folder, listing)) or []
        except yaml.YAMLError as exc:
            raise InvalidInputError(f"{listing}: invalid YAML: {exc}") from None
        if not isinstance(items, list):
            raise InvalidInputError(f"{listing}: expected a list of memories.")
        rows.extend((f"{listing}[{n}]", item) for n, item in enumerate(items) if isinstance(item, dict))
    if not rows and not memories.is_dir() and not listing.is_file():
        raise InvalidInputError(
            f"{folder} is not a SLayer storage folder: it has neither memories/<id>.md files "
            "nor memories.yaml."
        )
    if not rows and not listing.is_file() and any(memories.glob("*.yaml")):
        # A slayer-kb KB given for SLayer's storage: its memories would be left unread, unsaid.
        raise InvalidInputError(
            f"{folder} is a slayer-kb knowledge base (memories/<id>.yaml), not a SLayer storage folder "
            f"(memories/<id>.md): write its memories as SLayer's with '{problems.command(folder)} export-slayer "
            "DIR', then import DIR."
        )
    return rows


def import_slayer(kb: Context, folder: str | Path) -> ImportResult:
    """A SLayer storage folder's memories into the KB as one commit (see the module doc)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InvalidInputError(f"{folder} is not a folder; give a SLayer storage folder.")
    result = ImportResult(str(folder))
    parsed: dict[str, tuple[str, Memory, list[str]]] = {}  # by id: the first file of each
    gone: set[str] = set()  # ids of the folder's memories skipped: a link to one must not name the KB's
    for where, row in _slayer_rows(folder, result, gone):
        taken: list[str] = []
        try:
            memory = memory_from_row(where, row, taken)
            # A save's size limit and line ends hold here too.
            memory = memory.evolve(learning=kb.check_learning(memory.learning, f"{where}: the learning"))
        except KBError as exc:
            result.skipped += 1
            result.warnings.append(f"{exc} (skipped)")
            gone.update(_ids_named(where, row))
            continue
        if memory.id in parsed:
            # One file a memory: taking the later one too lost the first, and which one a re-import kept flipped.
            result.skipped += 1
            result.warnings.append(f"{where}: id {memory.id!r} is also {parsed[memory.id][0]}'s, which is imported; "
                                   "skipped (give it another id to import it too).")
            continue
        parsed[memory.id] = (where, memory, taken)
    with kb.transaction() as tx:
        kept, since = _kept(kb, parsed, gone, result)
        gone -= set(kept)
        kept = _own_ids(kb, tx, kept, gone, result)
        if moved := [i for i in kept if i not in parsed]:  # an earlier import's id for one: changed since?
            since |= since_imports(kb.store, moved)
        resolver = Resolver(kb.catalog, memory_exists=lambda i: i in kept or (i not in gone and kb.memory_exists(i)))
        changes: list[Change] = []
        for where, memory, taken in kept.values():
            notes: list[str] = []
            entities = _links_kept(kb, memory, gone, notes)
            memory = memory.evolve(entities=resolver.resolve_leniently(entities, notes))
            result.warnings.extend(f"memory {memory.id}: {note}" for note in notes)
            text = dumps(memory)
            path = kb.memories_dir / f"{memory.id}.yaml"
            if path.is_file():
                if path.read_text(encoding="utf-8") == text:
                    result.unchanged.append(memory.id)
                    continue
                if memory.id in since:  # the folder imported again after the KB changed the memory
                    result.skipped += 1
                    result.warnings.append(_since_warning(kb, where, memory.id, since[memory.id]))
                    continue
                result.replaced.append(memory.id)
            else:
                result.imported.append(memory.id)
            result.warnings.extend(taken)
            changes.append(memory_change(memory, text))
        require_committed(tx, changes)
        if changes:
            count = len(result.imported) + len(result.replaced)
            # The folder's own name, '.' too (an empty one ends the subject where slayersince looks for it).
            named = one_line(folder.resolve().name or str(folder))
            result.commit = tx.commit(changes, engram.import_subject(count, f"{IMPORTED} {named}"))
    return result


def _own_ids(kb: Context, tx: Transaction, kept: dict[str, tuple[str, Memory, list[str]]], gone: set[str],
             result: ImportResult) -> dict[str, tuple[str, Memory, list[str]]]:
    """``kept`` with each memory whose id the KB's own, other memory holds (``made_from``) under
    another id: the one an earlier import gave it (the same learning and created_at), else the
    next auto id, said in ``result``; the folder's links to it follow it. The KB's memory stays."""
    moved: dict[str, str] = {}
    for memory_id, (_where, memory, _taken) in kept.items():
        try:
            ours = kb.read(memory_id) if kb.memory_exists(memory_id) else None
        except KBError:  # a file broken here: the import replaces it, as before
            ours = None
        if ours is not None and not made_from(ours, memory):
            moved[memory_id] = ""
    if not moved:
        return kept
    earlier: dict[tuple[str, str], str] = {}
    for memory_id in kb.memory_ids():
        try:
            ours = kb.read(memory_id)
        except KBError:
            continue
        earlier.setdefault((ours.created_at, ours.learning), memory_id)
    for old in moved:
        memory = kept[old][1]
        if (new := earlier.get((memory.created_at, memory.learning), "")) not in kept:
            moved[old] = new
    fresh = iter(_fresh_ids(tx, sum(1 for new in moved.values() if not new), set(kept) | gone))
    cmd = problems.command(kb.root)
    for old, new in moved.items():
        if not new:
            moved[old] = new = next(fresh)
            said = f"imported as memory {new}"
        else:
            said = f"it is memory {new}, which an earlier import gave it"
        result.warnings.append(
            f"{kept[old][0]}: the knowledge base's memory {old} is another memory (another created_at), which "
            f"stays; {said}, and the folder's links to it name {new} (see both: '{cmd} get {old}', "
            f"'{cmd} get {new}').")
    links = {memory_link(old): memory_link(new) for old, new in moved.items()}
    out: dict[str, tuple[str, Memory, list[str]]] = {}
    for memory_id, (where, memory, taken) in kept.items():
        entities = [links.get(ref, ref) if isinstance(ref, str) else ref for ref in memory.entities]
        memory = memory.evolve(id=moved.get(memory_id, memory_id), entities=entities)
        out[memory.id] = (where, memory, taken)
    return out


def _fresh_ids(tx: Transaction, count: int, avoid: set[str]) -> list[str]:
    """``count`` auto ids, none of them in ``avoid`` (the folder's own ids): one drawn and left
    unused is spent, as any a commit draws."""
    ids: list[str] = []
    while len(ids) < count:
        ids += [i for i in tx.next_auto_ids(count - len(ids), tell_slayer=False) if i not in avoid]
    return ids


def require_committed(tx: Transaction, changes: list[Change]) -> None:
    """Refuse (``ConflictError``) an import (import-slayer's, import-engram's) that would write a
    file holding a hand edit, staged or not: the person's work, refused as a save's is, in the
    words without ``--force``, which an import has not. All of them in one check of git's status
    (a check a file took a git process each)."""
    try:
        tx.rewrite(lambda: (changes, None))
    except ConflictError as exc:
        raise ConflictError(exc.for_tools()) from None


def _ids_named(where: str, row: dict[str, Any]) -> set[str]:
    """The ids a link to a memory skipped for its row may name: its id as written, its file's name."""
    named = {row["id"].strip()} if isinstance(row.get("id"), str) else set()
    return named | ({Path(where).stem} if where.endswith(".md") else set())


def _kept(kb: Context, parsed: dict[str, tuple[str, Memory, list[str]]], gone: set[str], result: ImportResult
          ) -> tuple[dict[str, tuple[str, Memory, list[str]]], dict[str, Since]]:
    """The memories to write, by id; each other one skipped, said in ``result``, its id added to
    ``gone`` when the KB's memory of that id is not the folder's. And what the KB changed since
    an import wrote it (``since_imports``): such a memory is skipped unless the folder's
    version, its links resolved, is the KB's (then unchanged)."""
    existing = set(kb.memory_ids())
    incoming = set(parsed)
    renamed = kb.renamed_ids() if incoming - existing else set()
    since = since_imports(kb.store, incoming)
    cmd = problems.command(kb.root)
    kept: dict[str, tuple[str, Memory, list[str]]] = {}
    for where, memory, taken in parsed.values():
        skip, named_here = _skip_reason(kb, where, memory, existing, incoming, renamed, since.get(memory.id), cmd)
        if skip is None:
            kept[memory.id] = (where, memory, taken)
            continue
        result.skipped += 1
        result.warnings.append(skip)
        if not named_here:
            gone.add(memory.id)
    return kept, since


def _skip_reason(kb: Context, where: str, memory: Memory, existing: set[str], incoming: set[str],
                 renamed: set[str], since: Since | None, cmd: str) -> tuple[str | None, bool]:
    """Why the import skips ``memory`` (None: it takes it), and whether the KB's memory of its
    id still is the folder's (edited here since), which a link to it may then name."""
    try:  # the id names a teammate's memory here now: replacing it would lose theirs
        kb.check_not_moved(memory.id)
    except ConflictError as exc:
        return f"{where}: {str(exc).removesuffix('.')}; skipped.", False
    went = kb.renamed_to(memory.id, renamed=renamed) if memory.id not in existing else None
    if went is not None:
        # Agents told the id, and links to it, mean the renamed memory: not another's.
        return (f"memory {memory.id!r} was renamed to {went[0]!r} (commit {went[1][:12]}), which links to it and "
                "agents told it mean; skipped (give it another id in its file to import it)."), False
    clash = case_conflict(memory.id, existing | (incoming - {memory.id}))
    if clash is not None:
        return (f"memory {memory.id!r} clashes with {clash!r} (ids differing only in letter case or Unicode "
                "normalisation collide on macOS and Windows); skipped."), False
    if since is not None and since.forgotten:  # imported again, the folder brought back what the KB forgot
        return _since_warning(kb, where, memory.id, since), False
    if memory.updated_at and memory.id in existing and since is None:  # one an import wrote: changed since, below
        try:
            ours = kb.read(memory.id).updated_at
        except KBError:  # a file broken here: the import replaces it, as before
            ours = None
        if ours and time_order(ours) > time_order(memory.updated_at):
            return (f"{where}: memory {memory.id} was updated in the knowledge base at {ours}, after the folder's "
                    f"version ({memory.updated_at}); skipped, so the import does not undo that. To take the "
                    f"folder's text anyway, put it in with '{cmd} edit {memory.id}'."), False  # the KB's own, not the folder's
    return None, True


def _since_warning(kb: Context, where: str, memory_id: str, since: Since) -> str:
    try:
        what = "forgotten" if since.forgotten or kb.read(memory_id).is_deleted else "changed"
    except KBError:  # a file broken since: changed, as said, and validate names it
        what = "changed"
    return (f"{where}: memory {memory_id} was imported from SLayer storage by commit {since.commit[:12]} and {what} "
            "in the knowledge base since; skipped, so the import does not undo that. To take the folder's version "
            f"anyway, run '{problems.command(kb.root)} restore {memory_id} --rev {since.commit[:12]}' (the version "
            "that import wrote), then import again.")


def _links_kept(kb: Context, memory: Memory, gone: set[str], notes: list[str]) -> list[str]:
    """``memory``'s entities but its links to a memory of the folder the import skipped: the KB's
    memory of that id, if any, is another, which the link must not come to name."""
    kept = []
    for ref in memory.entities:
        target = linked_id(ref.strip()) if isinstance(ref, str) else None
        if target is None or target not in gone:
            kept.append(ref)
            continue
        named = f"the knowledge base's own, unrelated memory {target}" if kb.memory_exists(target) else "no memory"
        notes.append(f"link {memory_link(target)!r} dropped: the folder's memory {target} was skipped (its warning says why), "
                     f"and the link would name {named}. Import that memory as its warning says, then import the "
                     "folder again to keep the link.")
    return kept




# The folders of a KB that an export must not write into.
_OWN_FOLDERS = (MEMORIES_DIR, SESSIONS_DIR, "datasources", "models", STATE_DIR)


def _in_kb(kb: Context, where: Path) -> bool:
    """Whether the resolved ``where`` is the KB's folder or inside one of its own folders."""
    return where == kb.root or any(where.is_relative_to(kb.root / own) for own in _OWN_FOLDERS)


def export_slayer(kb: Context, folder: str | Path, force: bool = False) -> ExportResult:
    """Every live memory as ``FOLDER/memories/<id>.md`` (see the module doc); ``force``: over files
    there that no export wrote, or that changed since (exportrecord.py)."""
    check_folder_named(folder, "the export's folder", f"{problems.command(kb.root)} export-slayer ./slayer-storage")
    where = Path(folder).resolve()
    if _in_kb(kb, where):
        # The KB's memories/ would hold a .md beside each .yaml, which validate would then ask
        # to rename over it.
        raise InvalidInputError(
            f"{folder} is the knowledge base's own folder (or inside its {', '.join(_OWN_FOLDERS)}): the "
            "export would write its memories/<id>.md files among the KB's. Export to another folder, "
            "e.g. ./slayer-storage.")
    target = Path(folder) / "memories"
    # A link there (a storage folder set up to share the KB's memories) leads the writes elsewhere.
    if where != (led := target.resolve()).parent and _in_kb(kb, led):
        raise InvalidInputError(
            f"{target} leads to {led}, inside the knowledge base: the export would write its <id>.md files "
            f"among the KB's own files. Remove the link {target} (the export makes the folder), or export to "
            "another folder, e.g. ./slayer-storage.")
    harm = "the export's files there would be mixed into git's data, where no git command shows them"
    if (why := git_dir_refusal(where, harm, "slayer-storage")) is not None or (
            (why := git_dir_refusal(led, harm, "slayer-storage")) is not None):
        raise InvalidInputError(why)
    kb.ensure_fresh()  # before the folder is made: an index that cannot update leaves no folder
    result = ExportResult(str(folder))
    files: dict[str, bytes] = {}
    unread: set[str] = set()
    for memory_id in kb.memory_ids():
        try:
            memory = kb.read(memory_id)
        except KBError as exc:
            result.problems.append(f"{exc} (not exported)")
            unread.add(f"{memory_id}.md")  # an earlier export's file of it stays: the memory is live
            continue
        if memory.is_deleted:
            result.skipped_deleted.append(memory_id)
            continue
        files[f"{memory_id}.md"] = format_slayer_file(memory).encode("utf-8")
    done = exportrecord.plan(target, files, frozenset(unread))
    if done.foreign and not force:
        shown = ", ".join(done.foreign[:5]) + (f" and {len(done.foreign) - 5} more" if len(done.foreign) > 5 else "")
        raise InvalidInputError(
            f"{target} holds {len(done.foreign)} file(s) the export would overwrite that no export of slayer-kb "
            f"wrote there, or that changed since one did: {shown}. Nothing was written. Move them away or export "
            f"to another folder, or run '{problems.command(kb.root)} export-slayer {problems.shell_word(str(folder))} "
            "--force' to overwrite them.")
    # A write that fails (a full disk, a folder that takes no file) leaves no half export: the
    # folders and files it added go (given_folder), the failing file with them.
    with given_folder(target, "the export's folder"):
        for name, data in files.items():
            path = target / name
            try:
                write_whole(path, data, target / f".{name}.partial")  # an earlier export's file stays whole
            except OSError as exc:
                raise StoreError(f"Cannot write {path}: {exc.strerror or exc}; {os_fix(exc)}. The files this export "
                                 "added were removed.") from None
            result.written.append(name.removesuffix(".md"))
        try:
            exportrecord.finish(target, done)
        except OSError as exc:
            raise StoreError(f"Cannot write {target / exportrecord.RECORD}: {exc.strerror or exc}; {os_fix(exc)}.") from None
    result.overwritten = [name.removesuffix(".md") for name in done.foreign]
    result.removed = [name.removesuffix(".md") for name in done.stale]
    result.problems += [f"{target / name} was written by an earlier export and changed since; its memory is no longer "
                        "live, and the file was left: delete it if SLayer should not serve it." for name in done.changed]
    return result
