"""Engram's JSON export into the KB: ``import-engram FILE``.

``import-engram`` gives each observation it imports the next auto id (ids are drawn for those only:
a commit spends every id drawn, a lease's too) and skips an observation whose content
hash, project, scope, type and title equal a memory already in the KB (or earlier in the file).
Engram's SQLite times (``2026-03-01 10:20:30``, UTC) become ``2026-03-01T10:20:30Z``. Its
sessions and user prompts become session files (``sessions/<id>.yaml``, sessions.py): an
existing session gains only what it lacks and the prompts it does not have yet; one whose id
differs only in letter case from another's (Engram's ids are case-sensitive, macOS's file names
not) is skipped with its prompts, said, the rest imported. Soft-deleted observations are
imported soft-deleted; one whose live memory the KB holds (deleted in Engram since its import)
is skipped, said as deleted there, not as a duplicate: an import forgets nothing. Everything in
one commit.

A live observation with a ``topic_key`` revises in place the live memory holding the key in its
project and scope (kb.py's save: CLI.md's "revised"), one earlier in the export included, so the
key is never held twice. One older than a memory of the KB holding its key (its ``updated_at``,
else ``created_at``) is skipped: that is the export imported again, and taking it would undo the
later observation's revision each time.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import engram, nesting
from ..core.errors import InvalidInputError
from ..core.inputs import check_unicode, given_text, read_given_file
from ..core.memory import Memory, utc_now
from ..core.outcomes import ImportResult
from ..core.problems import command
from ..core.session import check_session_id
from ..core.text import kind_of, one_line
from ..search import lookups
from ..store.repo import Change
from ..transaction import memory_change
from . import sessions
from .interchange import require_committed

if TYPE_CHECKING:
    from ..context import Context
    from ..transaction import Transaction


_ENGRAM_TIME = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\Z")


def engram_time(value: Any) -> str | None:
    """Engram's SQLite ``YYYY-MM-DD HH:MM:SS`` (UTC) or an ISO time -> ``YYYY-MM-DDTHH:MM:SSZ``."""
    if not isinstance(value, str) or not value.strip():
        return None
    match = _ENGRAM_TIME.match(value.strip())
    if not match:
        return None
    date, clock, _fraction, zone = match.groups()
    try:  # the shape of a time, but none the calendar has (2026-02-30, 25:00), or before year 1
        moment = _dt.datetime.fromisoformat(f"{date}T{clock}")
        if zone and zone != "Z":
            sign = 1 if zone[0] == "+" else -1
            hours, minutes = int(zone[1:3]), int(zone[-2:])
            moment -= sign * _dt.timedelta(hours=hours, minutes=minutes)
    except (ValueError, OverflowError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# A duplicate test's key's memory: how a warning names it, its id, whether it is live.
_Held = tuple[str, str, bool]


def _dedup_key(
    content: str, project: str | None, scope: str | None, type_: str | None, title: str | None
) -> tuple[str, ...]:
    """Engram's duplicate test: same content hash, project, scope, type and title."""
    scope = engram.normalize_scope(scope)
    return (engram.content_hash(content), project or "", scope, type_ or engram.DEFAULT_TYPE, title or "")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def import_engram(kb: Context, file: str | Path) -> ImportResult:
    """Engram's JSON export (``{"observations": [...], "sessions": [...]}`` or a bare list)."""
    path = Path(file)
    try:
        text = given_text(read_given_file(path, "the export"))
    except ValueError as exc:  # not UTF-8
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); give Engram's JSON export.") from None
    data = nesting.loads(text, str(path), "give Engram's JSON export.")
    if isinstance(data, dict):
        for name in ("observations", "sessions", "prompts"):
            if data.get(name) is not None and not isinstance(data[name], list):
                raise InvalidInputError(f"{path}: '{name}' must be a list, as in Engram's export, not "
                                        f"{kind_of(data[name])}.")
        observations, session_rows = data.get("observations") or [], data.get("sessions") or []
        prompt_rows = data.get("prompts") or []
    elif isinstance(data, list):
        observations, session_rows, prompt_rows = data, [], []
    else:
        raise InvalidInputError(f"{path}: expected an object with 'observations' or a list of observations.")
    result = ImportResult(str(path))
    with kb.transaction() as tx:
        # Each key and the memory holding it (whether live), which a duplicate's warning names.
        seen = {
            _dedup_key(d["learning"], d["project"], d["scope"], d["type"], d["title"]):
                (f"memory {d['id']}", d["id"], d.get("deleted_at") is None)
            for d in (doc["data"] for doc in kb.documents(lookups.memories(), limit=None))
        }
        # Ids are drawn only for the memories made (each drawn one is spent, a lease's too): a first
        # pass without ids, into a scratch result, counts them, as a skip or a revision takes none.
        dry = ImportResult(result.source)
        planned = _memories(kb, tx, observations, path.name, dict(seen), repeat(""), dry)
        # The memories it revises, before an id is drawn: in one check, as import-slayer's.
        require_committed(tx, [planned[memory_id] for memory_id in dry.replaced])
        # Engram's sessions and user prompts become session files (sessions.py), in the same commit;
        # their files checked before an id is drawn too, their warnings said after the memories'.
        session_warnings: list[str] = []
        session_changes, result.sessions, result.prompts = sessions.import_engram(
            tx, session_rows, prompt_rows, path.name, session_warnings, engram_time)
        changes = _memories(kb, tx, observations, path.name, seen, iter(tx.next_auto_ids(len(dry.imported))), result)
        result.warnings += session_warnings
        if changes or session_changes:
            extra = f", {result.sessions} new sessions, {result.prompts} prompts" if session_changes else ""
            result.commit = tx.commit(
                [*changes.values(), *session_changes], engram.import_subject(len(changes), f"observations{extra} from Engram ({one_line(path.name)})"))
    return result


def _memories(kb: Context, tx: Transaction, observations: list[Any], name: str, seen: dict[tuple[str, ...], _Held],
              ids: Iterator[str], result: ImportResult) -> dict[str, Change]:
    """The observations' memory files by id, a new memory given the next of ``ids``; what each
    observation became (imported, revising a memory, skipped) said in ``result``. ``seen``: the
    duplicate test's key of each memory, which the duplicate's warning names."""
    fix = command(kb.root)
    next_id = next(ids, "")
    changes: dict[str, Change] = {}
    held: dict[tuple[str, str | None, str | None], Memory] = {}  # a topic key's live memory, as revised here
    for n, obs in enumerate(observations):
        where = f"{name}: observation {n + 1}"
        if not isinstance(obs, dict):
            result.skipped += 1
            result.warnings.append(f"{where} is not an object; skipped.")
            continue
        taken: list[str] = []
        memory = _observation(kb, obs, next_id, where, result.warnings, taken)
        if memory is None:
            result.skipped += 1
            continue
        key = _dedup_key(memory.learning, memory.project, memory.scope, memory.type, memory.title)
        if key in seen:
            label, held_id, live = seen[key]
            result.skipped += 1
            if memory.is_deleted and live:
                # Deleted in Engram since the live one was imported: no duplicate, and an import
                # forgets nothing the KB holds (a save here may have made it its own since).
                result.warnings.append(
                    f"{where} was deleted in Engram (deleted_at {memory.deleted_at}); {label} holds its content, title, "
                    f"type, project and scope and is live here, and was left as it is; skipped. To forget it here too, "
                    f"run '{fix} forget {held_id} --soft'.")
            else:
                result.warnings.append(f"{where} is a duplicate of {label}: the same content, title, type, "
                                       "project and scope; skipped.")
            continue
        # Only a live observation upserts, as in Engram: a deleted one with the key is a memory of its own.
        live_key = memory.topic_key if not memory.is_deleted else None
        topic = (live_key, memory.project, memory.scope) if live_key else None
        holder = None if topic is None else held[topic] if topic in held else tx.live_one(
            topic_key=memory.topic_key, project=memory.project, scope=memory.scope)
        if holder is not None and topic not in held and _time(memory) <= _time(holder):
            # An export's older state of the memory (the same export imported again): taking it
            # would undo the revision a later observation made, on every import.
            result.skipped += 1
            result.warnings.append(f"{where} has topic key {memory.topic_key!r}, which memory {holder.id} holds in a "
                                   f"version of {_time(holder)}, as new as the observation's {_time(memory)} or "
                                   "newer; skipped.")
            continue
        if holder is None:
            result.imported.append(memory.id)
            next_id = next(ids, "")
        else:  # the upsert a save with the key makes: a second holder is a twin validate refuses
            taken = []  # said again of the id the observation revises
            memory = _revised(holder, _observation(kb, obs, holder.id, where, result.warnings, taken) or memory)
            if holder.id not in result.imported and holder.id not in result.replaced:
                result.replaced.append(holder.id)
        if topic is not None:
            held[topic] = memory
        seen[key] = (f"observation {n + 1} ({'revising' if holder else 'imported as'} memory {memory.id})", memory.id,
                     not memory.is_deleted)
        result.warnings.extend(taken)
        changes[memory.id] = memory_change(memory)
    return changes


def _time(memory: Memory) -> str:
    return memory.updated_at or memory.created_at  # both YYYY-MM-DDTHH:MM:SSZ: ordered as text


def _revised(holder: Memory, observation: Memory) -> Memory:
    """``holder``, the live memory with the observation's topic key, revised in place by it: its
    id, creation time, links and query kept, one revision more (or Engram's count, if higher)."""
    return holder.evolve(
        learning=observation.learning, title=observation.title, type=observation.type,
        session_id=observation.session_id or holder.session_id,
        revision_count=max(observation.revision_count or 0, (holder.revision_count or 1) + 1),
        updated_at=observation.updated_at or utc_now(),
    )


def _observation(kb: Context, obs: dict[str, Any], memory_id: str, where: str, warnings: list[str],
                 notes: list[str]) -> Memory | None:
    """One observation as a memory, held to the rules of a save (sizes, printable keys): an export
    is no way around them. None, said in ``warnings``, when it breaks one. What it changed of the
    observation to take it goes in ``notes``, said only once the memory is imported: a duplicate
    is skipped after, and the next observation gets its id."""
    for key in ("content", "title"):  # str() of a list or object wrote its Python repr as the text
        if obs.get(key) is not None and not isinstance(obs[key], str):
            warnings.append(f"{where}: '{key}' must be text, not {kind_of(obs[key])}; skipped.")
            return None
    content = engram.redact_private(obs.get("content") or "")
    if not content:
        warnings.append(f"{where} has no content; skipped.")
        return None
    try:
        content = kb.check_learning(content, "content")
        title = engram.import_title(obs.get("title") or "", memory_id, where, notes)
        check_unicode(obs, "the observation")
        project = engram.given_project(obs["project"]) if isinstance(obs.get("project"), str) else None
        topic_key = engram.given_topic_key(obs["topic_key"]) if isinstance(obs.get("topic_key"), str) else None
        type = engram.given_type(_text(obs, "type"))
        session_id = _text(obs, "session_id")
        if session_id is not None:
            check_session_id(session_id, "session_id")
    except InvalidInputError as exc:
        warnings.append(f"{where}: {str(exc).removesuffix('.')}; skipped.")
        return None
    scope = obs.get("scope") if isinstance(obs.get("scope"), str) else None
    notes.extend(f"{where}: {said}" for said in engram.scope_warnings(scope))
    created = engram_time(obs.get("created_at"))
    if obs.get("created_at") and created is None:
        notes.append(f"{where}: created_at {obs.get('created_at')!r} is not a time; using now.")
    return Memory(
        id=memory_id,
        learning=content,
        created_at=created or utc_now(),
        title=title,
        type=type or engram.DEFAULT_TYPE,
        project=project,
        scope=engram.normalize_scope(scope),
        topic_key=topic_key,
        session_id=session_id,
        revision_count=_count(obs.get("revision_count")),
        duplicate_count=_count(obs.get("duplicate_count")),
        updated_at=engram_time(obs.get("updated_at")),
        deleted_at=engram_time(obs.get("deleted_at")),
    )



def _text(obs: dict[str, Any], key: str) -> str | None:
    value = obs.get(key)
    return (value.strip() or None) if isinstance(value, str) else None
