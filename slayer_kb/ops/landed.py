"""What a command's commit did, as the result the command returns, rebuilt from the commit alone.

A client whose server died after the commit of its command and before the answer
(daemon/settle.py) prints this instead of running the command a second time. The commit's own
message names the operation and its id (``memory: save 28``, ``memory: forget 12 (soft)``,
``memory: restore 5 as of 0123456789ab``, ``session: start ses-1``...); the files it added,
changed and deleted (store/requests.py) say the rest. Warnings the command printed are not in the commit, so they are not repeated.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..catalog.resolve import Resolver
from ..core import engram
from ..core.ids import id_sort_key
from ..core.locate import id_of_path, memory_path
from ..core.memory import Memory, loads
from ..core.outcomes import Landed, RestoreResult
from ..core.results import CascadeResult, ChangeResult, ForgetResult, RenameResult, SaveResult, SessionResult
from ..core.session import Session, session_path
from ..core.session import loads as load_session
from ..store.requests import Landing
from ..store.revisions import resolve_rev
from . import sessions
from .cascade import PRUNE_SUBJECT, stale_queries
from .snapshot import catalog_at, text_at

if TYPE_CHECKING:
    from ..context import Context

# The first line of each commit message an operation writes (the ops modules' ``tx.commit``).
_SAVE = re.compile(r"memory: (?P<verb>save|revise) (?P<id>\S+)(?P<observation> \(.*\))?")
_UPDATE = re.compile(r"memory: (?P<verb>update|restore) (?P<id>\S+)(?: \(.*\))?")
# ``restore --rev``: the revision abbreviated (ops/history.py).
_RESTORE_REV = re.compile(r"memory: restore (?P<id>\S+) as of (?P<rev>[0-9a-f]+)")
_FORGET = re.compile(r"memory: forget (?P<id>\S+)(?P<soft> \(soft\))?")
# ``rename``: the memories whose links it rewrote in its body, in its order (ops/changes.py).
_RENAME = re.compile(r"memory: rename (?P<old>\S+) to (?P<new>\S+)")
_REWROTE = re.compile(r"^Rewrote memory: references in (.+)$", re.MULTILINE)
_DELETE = re.compile(r"catalog: delete (?P<kind>\w+) (?P<entity>\S+)")
_SESSION = re.compile(r"session: (?P<verb>start|end|prompt in) (?P<id>\S+)")
# A prune's body line for each link it pointed at a renamed memory (cascade.prune).
_POINTED = re.compile(r"^Pointed (\S+) at (\S+) \(renamed\) in ", re.MULTILINE)



def result_of(kb: Context, landing: Landing) -> Landed | None:
    """What the operation that made ``landing`` returned (its warnings and the files ``--force``
    kept aside); None for a commit this module cannot read back (an import, a renumbering...)."""
    first = landing.message.split("\n", 1)[0]
    commit = landing.commit
    if match := _SAVE.fullmatch(first):
        memory_id = match["id"]
        memory = _memory_at(kb, commit, memory_id)
        suggestion = None
        if match["verb"] == "revise":
            action = "revised"
        else:
            action = "created" if landing.paths.get(memory_path(memory_id)) == "A" else "replaced"
            if match["observation"] and not memory.topic_key:
                suggestion = engram.suggest_topic_key(memory.type, memory.title, memory.learning)
        return Landed("save", SaveResult(memory_id, memory.entities, [], action, memory.title, memory.type,
                                         suggestion, commit), memory_id)
    if match := _UPDATE.fullmatch(first):
        action = "updated" if match["verb"] == "update" else "restored"
        return Landed(match["verb"], ChangeResult(kb.get(match["id"]).to_dict(), action), match["id"])
    if match := _RESTORE_REV.fullmatch(first):
        memory_id = match["id"]
        restored = _memory_at(kb, commit, memory_id).to_dict()
        return Landed("restore-rev", RestoreResult(memory_id, resolve_rev(kb.store, match["rev"]), [], commit, restored),
                      memory_id)
    if match := _FORGET.fullmatch(first):
        memory_id = match["id"]
        stripped = [] if match["soft"] else [mid for mid in _changed_memories(landing) if mid != memory_id]
        return Landed("forget", ForgetResult(memory_id, stripped, bool(match["soft"]), commit), memory_id)
    if match := _RENAME.fullmatch(first):
        rewrote = _REWROTE.search(landing.message)
        return Landed("rename", RenameResult(match["old"], match["new"], rewrote[1].split(", ") if rewrote else [], commit),
                      match["new"])
    if match := _DELETE.fullmatch(first):
        entity, rewritten = match["entity"], _changed_memories(landing)
        stale: list[str] = []
        if landing.parent:  # the example queries the delete left stale, as resolved before it
            resolver = Resolver(catalog_at(kb.store, landing.parent), memory_exists=kb.memory_exists)
            stale = stale_queries(resolver, {i: _memory_at(kb, commit, i) for i in rewritten},
                                  lambda e: e == entity or e.startswith(entity + "."))
        return Landed("delete", CascadeResult(entity, commit, rewritten, stale_queries=stale), entity)
    if PRUNE_SUBJECT.fullmatch(first):
        return Landed("prune", _prune_result(kb, landing))
    if match := _SESSION.fullmatch(first):
        return _session_result(kb, landing, match["verb"], match["id"])
    return None


def _prune_result(kb: Context, landing: Landing) -> CascadeResult:
    """A prune's answer: each link a memory lost, pointed at a renamed memory where the commit's
    body says so (``Pointed OLD at NEW (renamed) in ...``), else stripped."""
    pointed_at = dict(_POINTED.findall(landing.message))
    stripped: dict[str, list[str]] = {}
    relinked: dict[str, dict[str, str]] = {}
    for memory_id in _changed_memories(landing):
        after = set(_memory_at(kb, landing.commit, memory_id).entities)
        before = _memory_at(kb, landing.parent, memory_id).entities if landing.parent else []
        removed = [entity for entity in before if entity not in after]
        if dropped := [entity for entity in removed if entity not in pointed_at]:
            stripped[memory_id] = dropped
        if moved := {entity: pointed_at[entity] for entity in removed if entity in pointed_at}:
            relinked[memory_id] = moved
    return CascadeResult(None, landing.commit, list(dict.fromkeys([*stripped, *relinked])), stripped,
                         relinked=relinked)


def _session_result(kb: Context, landing: Landing, verb: str, session_id: str) -> Landed:
    session = _session_at(kb, landing.commit, session_id)
    if verb == "start":
        return Landed("session-start", SessionResult(session.to_dict(), "started", landing.commit), session_id)
    if verb == "end":
        return Landed("session-end", SessionResult(session.to_dict(), "ended", landing.commit, []), session_id)
    return Landed("save-prompt", sessions.prompt_result(session, landing.commit), session_id)


def _changed_memories(landing: Landing) -> list[str]:
    """The memories the commit rewrote (not added or deleted), in id order as the ops walk them."""
    found = [mid for path, how in landing.paths.items() if how == "M" and (mid := id_of_path(path)) is not None]
    return sorted(found, key=id_sort_key)


def _memory_at(kb: Context, commit: str, memory_id: str) -> Memory:
    path = memory_path(memory_id)
    return loads(text_at(kb.store, commit, path) or "", memory_id, path)


def _session_at(kb: Context, commit: str, session_id: str) -> Session:
    path = session_path(session_id)
    return load_session(text_at(kb.store, commit, path) or "", session_id, path)
