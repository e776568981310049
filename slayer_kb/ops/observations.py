"""Engram's ``mem_save``: redaction, a topic key's upsert, de-duplication within a window, else a
new memory, with the session it is filed under made in the same commit."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import engram
from ..core.errors import ConflictError, InvalidInputError
from ..core.inputs import check_unicode
from ..core.locate import memory_path
from ..core.memory import Memory, parse_time, utc_now
from ..core.results import SaveResult
from ..core.session import check_session_id
from ..core.text import one_line
from ..transaction import Transaction, memory_change
from . import sessions
from .projects import project_warnings

if TYPE_CHECKING:
    from ..context import Context


def save(
    kb: Context,
    title: str,
    content: str,
    type: str | None = None,
    project: str | None = None,
    scope: str | None = None,
    topic_key: str | None = None,
    session_id: str | None = None,
    entities: Any = None,
    description: str | None = None,
) -> SaveResult:
    """Engram's ``mem_save`` (``KnowledgeBase.save_observation``): redaction, topic-key upsert,
    de-duplication, else a new memory."""
    for name, value in (("title", title), ("content", content), ("type", type), ("project", project),
                        ("scope", scope), ("topic_key", topic_key), ("session_id", session_id),
                        ("entities", entities), ("description", description)):
        check_unicode(value, name)
    given = engram.given_title(title or "")
    if given is None:
        raise InvalidInputError("title is required and must not be blank.")
    title = given
    content = engram.redact_private(content or "")
    content = kb.check_learning(content, "content")
    scope_notes = engram.scope_warnings(scope) + engram.type_warnings(type)
    scope = engram.normalize_scope(scope)
    digest = engram.content_hash(content)
    key = engram.given_topic_key(topic_key)
    project = engram.given_project(project)
    type = engram.given_type(type) or engram.DEFAULT_TYPE
    session_id = (session_id or "").strip() or engram.default_session_id(project)
    description = engram.given_description(description)
    with kb.transaction() as tx:
        existing = tx.live_one(topic_key=key, project=project, scope=scope) if key else None
        # The memory the key revises: a link it holds already is not news (as for update).
        held = existing.entities if existing is not None else ()
        linked, warnings = kb.resolve_entities(entities, held=held) if entities else ([], [])
        warnings.extend(project_warnings(kb, project))
        warnings.extend(scope_notes)
        warnings.extend(engram.topic_key_warnings(topic_key))
        suggestion = None if key else engram.suggest_topic_key(type, title, content)
        fields = dict(title=title, type=type, learning=content)
        if existing is not None:
            return revise(kb, tx, existing, fields, linked, warnings)
        duplicate = _find_duplicate(kb, tx, digest, project, scope, type, title, session_id)
        if duplicate is not None:
            kb.add_duplicate(duplicate.id)
            return SaveResult(
                duplicate.id, duplicate.entities, warnings, "duplicate", title, type, suggestion
            )
        memory_id = tx.next_auto_id()
        now = utc_now()
        memory = Memory(
            id=memory_id,
            learning=content,
            created_at=now,
            title=title,
            type=type,
            description=description,
            entities=linked,
            project=project,
            scope=scope,
            topic_key=key,
            session_id=session_id,
            revision_count=1,
            duplicate_count=1,
        )
        # Engram makes the session when it saves into one: both in the one commit.
        session = sessions.for_save(tx, check_session_id(session_id, "session_id"), project, now)
        commit = tx.commit([memory_change(memory), *session], f"memory: save {memory_id} ({type}: {one_line(title)})")
        return SaveResult(memory_id, linked, warnings, "created", title, type, suggestion, commit)


def revise(
    kb: Context, tx: Transaction, memory: Memory, fields: dict[str, Any], linked: list[str], warnings: list[str]
) -> SaveResult:
    """A topic-key upsert: ``memory``, which holds the key, takes ``fields`` and the links (its
    own when none are given), one revision more, as one commit."""
    tx.require_committed(memory_path(memory.id))
    now = utc_now()
    changed = memory.evolve(
        **fields,
        entities=linked or memory.entities,
        revision_count=(memory.revision_count or 1) + 1,
        duplicate_count=folded_duplicates(kb, memory),
        updated_at=now,
    )
    # Filed into a session (a note's --session), the session is made with it, as a save's is.
    given_session = fields.get("session_id")
    session = sessions.for_save(tx, given_session, changed.project, now) if given_session else []
    commit = tx.commit(
        [memory_change(changed), *session], f"memory: revise {memory.id} (topic {memory.topic_key})"
    )
    kb.fold_duplicates(memory.id)
    return SaveResult(
        memory.id, changed.entities, warnings, "revised", changed.title, changed.type, commit=commit
    )


def key_holder(tx: Transaction, memory_id: str, key: str, project: str | None, scope: str | None) -> str | None:
    """Another live memory holding topic key ``key`` in the project and scope (its id): a save
    under the key would revise only one of the two, and validate refuses the pair."""
    return _holder(tx, memory_id, key, project, engram.normalize_scope(scope))


def _holder(tx: Transaction, memory_id: str, key: str, project: str | None, scope: str) -> str | None:
    holder = tx.live_one(topic_key=key, project=project, scope=scope)
    return holder.id if holder is not None and holder.id != memory_id else None


def check_key_change(tx: Transaction, memory_id: str, key: str | None, project: str | None, scope: str | None,
                     before: Memory | None) -> None:
    """Refuse to give ``memory_id`` topic key ``key`` in ``project`` and ``scope`` when another
    live memory holds it (``key_holder``). Only a change from the key it held ``before`` is
    checked: an agent resends every field, and a pair older code made (which validate reports)
    must not block edits to either memory."""
    if not key:
        return
    scope = engram.normalize_scope(scope)
    if before is not None and (before.topic_key, before.project, engram.normalize_scope(before.scope)) == (
            key, project, scope):
        return
    if (other := _holder(tx, memory_id, key, project, scope)) is not None:
        in_project = f" in project '{project}'" if project else ""
        # The scope named always: a key is held once per project and scope, and a change of
        # scope alone (update --scope personal) meets a holder the message must tell apart.
        raise ConflictError(
            f"topic_key '{key}'{in_project} at scope '{scope}' is already held by memory {other}: one memory holds a "
            f"key, so that a save under it revises that one. Change memory {other} instead, or give "
            "another topic_key."
        )


def without_held_key(tx: Transaction, memory: Memory, warnings: list[str]) -> Memory:
    """``memory`` as a restore brings it back: without its topic key when another live memory
    took the key meanwhile (a save under it while this one was deleted), said in ``warnings``."""
    key = memory.topic_key
    if not key or (other := key_holder(tx, memory.id, key, memory.project, memory.scope)) is None:
        return memory
    warnings.append(f"topic_key '{key}' is held by memory {other} now: restored without it, so that "
                    f"saves under the key keep revising {other}.")
    return memory.evolve(topic_key=None)


def _find_duplicate(
    kb: Context, tx: Transaction, digest: str, project: str | None, scope: str, type: str, title: str,
    session_id: str,
) -> Memory | None:
    """The memory this save repeats: Engram's test (the same content, project, scope, type and
    title, within the window), in the same session, as the mem_save seed's "same session + same
    content hash" has it: a save in another session is that session's own record."""
    cutoff = parse_time(utc_now()) - kb.dedup_window
    for memory in tx.live(content_hash=digest, project=project, scope=scope, type=type, session_id=session_id):
        if memory.title == title and parse_time(memory.created_at) > cutoff:
            return memory
    return None


# Duplicate saves are counted locally (``duplicates.PendingDuplicates``) and folded into the
# memory's next real commit.
def folded_duplicates(kb: Context, memory: Memory) -> int | None:
    """The duplicate count the memory's next commit records: its own and the pending ones."""
    pending = kb.duplicates_pending(memory.id)
    if memory.duplicate_count is None and not pending:
        return None
    return (memory.duplicate_count or 1) + pending
