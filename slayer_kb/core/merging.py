"""Two versions of one record, made on two clones, as one: what ``sync`` merges that git cannot.

- A **session** file (``sessions/<id>.yaml``), above all Engram's default session of a project
  (``manual-save-<project>``) that every agent's first save to a new project creates: the union of
  both versions' prompts, the earliest start, the latest end, and both sides' summaries when each
  side ended it anew (``_summaries``).
- A **topic-key memory** (Engram's upsert: each save under the key revises the memory): the
  newest content wins, as it would have had the saves come one after the other, and the
  revisions and duplicates both sides counted are added up, so none is lost.
- Any other **memory whose lines conflict** though no field was changed two ways (two forgets
  on two clones each stripping their ``memory:`` link from one memory, the lines adjacent):
  each field from the side that changed it, the entity lists merged entry by entry.

Pure functions over records; git hands the versions to ``store/mergedriver.py`` during ``sync``'s
rebase, and ``ops/sync.py`` folds and re-counts with them after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from typing import Literal

from .engram import content_hash
from .locate import MEMORY_LINK
from .memory import FIELD_NAMES, Memory, time_order
from .session import Prompt, Session


def merge_sessions(base: Session | None, ours: Session, theirs: Session) -> Session:
    """One session from two versions of it since ``base`` (None when both created it; ``ours``
    wins where both set a plain field). A session started for two projects keeps ``ours``'s, as
    a start on one clone keeps the existing session's; the other side's prompts then name their
    project, so they stay that project's (``mem_context``) and the file shows both."""
    project = ours.project or theirs.project
    prompts: dict[tuple[str, str, str | None], Prompt] = {}
    for side in (ours, theirs):
        for prompt in side.prompts:
            given = prompt.project or side.project  # a prompt names its project only when not the session's
            kept = replace(prompt, project=None if given == project else given)
            prompts.setdefault((kept.created_at, kept.content, kept.project), kept)
    ended = [s.ended_at for s in (ours, theirs) if s.ended_at]
    return Session(
        id=ours.id,
        started_at=min(ours.started_at, theirs.started_at, key=time_order),
        project=project,
        directory=ours.directory or theirs.directory,
        ended_at=max(ended, key=time_order) if ended else None,
        summary=_summaries(base, ours, theirs),
        prompts=sorted(prompts.values(), key=lambda p: time_order(p.created_at)),
    )


def _summaries(base: Session | None, ours: Session, theirs: Session) -> str | None:
    """Both sides' summaries of one session (ended on two clones: each agent said what it did),
    the earlier end's first, a blank line between; one that already holds the other (a summary
    merged before, met again along a rebase) is kept as it is. A side whose summary is the base's
    said nothing new: the other side's stands, even one that replaced the base's (re-ended)."""
    changed = [s for s in (ours, theirs) if base is None or s.summary != base.summary]
    if len(changed) < 2:
        return (changed or [ours])[0].summary
    said = [s.summary for s in sorted(changed, key=lambda s: time_order(s.ended_at or "")) if s.summary]
    if len(said) < 2:
        return said[0] if said else None
    first, last = said
    return last if first in last else first if last in first else f"{first}\n\n{last}"


def last_written(memory: Memory) -> str:
    return memory.updated_at or memory.created_at


Dated = Callable[[], str | None]  # when a side's last commit of the file was authored, asked only if needed


def merge_topic_revisions(base: Memory | None, ours: Memory, theirs: Memory,
                          committed: tuple[Dated, Dated] | None = None) -> Memory:
    """One topic-key memory from two clones' revisions of it since ``base`` (None when both
    created it): the newer content, the counts of both sides added up. The id is ``ours``'s.
    ``theirs`` is the side applied last (the commits a rebase replays): it wins a tie, as it would
    had its save come after ``ours`` in one clone (times have a resolution of a second).
    ``committed`` dates each side's commit of the file: a person's edit with plain git sets no
    ``updated_at``, and was made when it was committed, not when the version it edited was saved."""
    at_ours, at_theirs = (_written(base, side, dated) or last_written(side) for side, dated in
                          zip((ours, theirs), committed or (None, None), strict=True))
    newer = theirs if time_order(at_theirs) >= time_order(at_ours) else ours
    if base is not None and (they_forgot := _only_forgot(base, theirs)) != _only_forgot(base, ours):
        # A forget sets no updated_at: within the second of the other side's revision, the tie
        # would hand the forgotten side's older text back.
        newer = ours if they_forgot else theirs

    if base is None and content_hash(ours.learning) != content_hash(theirs.learning):
        # Two memories: each save under the key was a revision; a duplicate count (Engram's "saved
        # this many times", 1 for a new memory, untouched by an upsert) is the kept content's.
        duplicates = newer.duplicate_count
    else:
        duplicates = _summed(base, ours, theirs, "duplicate_count")
    return newer.evolve(
        id=ours.id,
        created_at=min(ours.created_at, theirs.created_at, key=time_order),
        # When both made it, the later side's first save is a revision of the other's memory (two
        # saves, two revisions, even in one second): dated as one, as an upsert is, or the memory
        # would look as old as the text it replaced.
        updated_at=newer.updated_at or (newer.created_at if base is None else None),
        revision_count=_summed(base, ours, theirs, "revision_count"),
        duplicate_count=duplicates,
        deleted_at=_forgotten((ours, at_ours), (theirs, at_theirs)),
    )


def forget_holds(base: Memory, kept: Memory, forgot: Dated, committed: Dated,
                 cascade: Callable[[frozenset[str]], bool]) -> bool | None:
    """For a memory one side forgot (deleted its file: ``forget``) while the other changed it:
    whether the forget, made when ``forgot`` says, holds. Any memory's forget holds against a
    cascade's strip (``cascade``: whether the changing side forgot every memory the links it
    removed named), which leaves nothing to keep. For a topic-key memory (an upsert, an edit by
    hand) the later of the two does, as for a soft forget (``_forgotten``), an edit by hand dated
    by its commit (``committed``: a person's edit made after the forget must not vanish behind
    the ``updated_at`` it left as it was); a forget never loses a tie, nor to a change of the
    memory's links alone (then no date is asked). None for another change of a memory without a
    topic key (a restore, an entity dropped on purpose), or a forget or an edit by hand git cannot
    date: for a person."""
    if (removed := stripped(base, kept)) is not None and cascade(removed):
        return True
    if not (base.topic_key and base.topic_key == kept.topic_key):
        return None
    if not revised(base, kept) and kept.deleted_at == base.deleted_at:
        return True  # only its links changed: no revision to keep
    if (written := _written(base, kept, committed)) is None or (forgot_at := forgot()) is None:
        return None
    return time_order(forgot_at) >= time_order(written)


def stripped(base: Memory, kept: Memory) -> frozenset[str] | None:
    """The ``memory:`` links ``kept`` removed from ``base`` when that is all it changed (a forget's
    cascade: ``updated_at`` stamped, nothing else); None for any other change (a restore, an
    edit, an entity dropped or added) and for none (a file git stops on unchanged is one the
    other side moved: a rename against the forget, which goes to a person)."""
    if revised(base, kept) or kept.deleted_at != base.deleted_at or not set(kept.entities) <= set(base.entities):
        return None
    removed = frozenset(base.entities) - frozenset(kept.entities)
    return removed if removed and all(link.startswith(MEMORY_LINK) for link in removed) else None


def revised(base: Memory, side: Memory) -> bool:
    """Whether ``side`` changes more of ``base`` than its links (a forget's strip) and its forget."""
    return any(getattr(side, name) != getattr(base, name) for name in FIELD_NAMES - _LINKS - {"deleted_at"})


def _written(base: Memory | None, side: Memory, dated: Dated | None) -> str | None:
    """When ``side`` was last written: its ``updated_at``, or, for an edit of ``base`` by hand,
    the time its commit was authored (None when git cannot tell)."""
    if dated is not None and base is not None and _by_hand(base, side):
        return dated()
    return last_written(side)


def _by_hand(base: Memory, side: Memory) -> bool:
    """Whether ``side`` is ``base`` edited with plain git: what it says changed, ``updated_at`` left
    as it was. Not sync's own commits: a fold or recount changes only counts and times (the
    earliest ``created_at``, the kept text's ``updated_at``), a strip (a forget's, a catalog
    delete's) only takes entities away, and sync strips again whatever link a merge brings back."""
    if side.updated_at != base.updated_at:
        return False
    if any(getattr(side, name) != getattr(base, name) for name in _CONTENT):
        return True
    return not set(side.entities) <= set(base.entities)


def _forgotten(ours: tuple[Memory, str], theirs: tuple[Memory, str]) -> str | None:
    """When the merged topic-key memory was forgotten (``forget --soft``, MCP's ``mem_delete``):
    at a side's forget that came after the other side's last revision (which the forget then
    took with it, as one clone's saves one after the other); a revision after the forget brings
    the key back, as the next save under it would. Two forgets keep the first."""
    (mine, _), (other, _) = ours, theirs
    if mine.deleted_at and other.deleted_at:
        return min(mine.deleted_at, other.deleted_at, key=time_order)
    for (side, _), (_, written) in ((ours, theirs), (theirs, ours)):
        if side.deleted_at and time_order(side.deleted_at) >= time_order(written):
            return side.deleted_at
    return None


def soft_forgot(base: Memory, side: Memory) -> bool:
    """Whether ``side`` is ``base`` with only its ``deleted_at`` set (``forget --soft``)."""
    return base.deleted_at is None and side.deleted_at is not None and _only_forgot(base, side)


def _only_forgot(base: Memory, side: Memory) -> bool:
    """Whether ``side`` changed nothing of ``base`` but its forget (or nothing at all)."""
    return side.evolve(deleted_at=base.deleted_at) == base


def _summed(base: Memory | None, ours: Memory, theirs: Memory, name: str) -> int | None:
    """Both sides' counts added up, the base's counted once (a missing count is 1: Engram starts
    both counts of a new memory at 1); None when neither side has one."""
    mine, other = getattr(ours, name), getattr(theirs, name)
    if mine is None and other is None:
        return None
    start = (getattr(base, name) or 1) if base is not None else 0
    return (mine or 1) + (other or 1) - start


def merge_edits(base: Memory, ours: Memory, theirs: Memory) -> Memory | None:
    """One memory from two sides' changes since ``base``: each field from the side that changed it
    (``updated_at`` the later of two), the entities merged entry by entry (what either side
    removed is gone, what either added is there); None when both changed another field in two
    ways (two edits of one memory) or one side forgot it (``forget --soft``) while the other edited
    more than its links: a person merges those, as a forget against an edit."""
    if forgot_against_edit(base, ours, theirs):
        return None
    changed: dict[str, object] = {}
    for name in FIELD_NAMES:
        was, mine, other = getattr(base, name), getattr(ours, name), getattr(theirs, name)
        if mine == other or other == was:
            continue
        if mine == was:
            changed[name] = other
        elif name == "entities":
            gone = (set(was) - set(mine)) | (set(was) - set(other))
            kept = [entity for entity in mine if entity not in gone]
            changed[name] = kept + [entity for entity in other if entity not in gone and entity not in kept]
        elif name == "updated_at":
            changed[name] = max(mine or "", other or "", key=time_order)
        elif name == "deleted_at" and mine and other:  # both forgot it (soft): since the first
            changed[name] = min(mine, other, key=time_order)
        else:
            return None
    return ours.evolve(**changed)


def carry_through_fold(base: Memory, kept: Memory, edit: Memory) -> tuple[Memory, Memory]:
    """What the other side's edit of a folded memory makes of the memory kept: ``base`` is the
    folded one where the sides parted, ``edit`` it there now, ``kept`` the memory it was folded
    into, field by field (not the newer side's whole memory: ``base`` is not ``kept``'s past). A
    field the edit left as it was stays ``kept``'s, one only the edit changed (``kept`` holds
    ``base``'s) is the edit's, the links the edit removed are gone and those it added there.
    Returns (``kept`` with those, ``kept`` with every field the edit changed): the same unless
    both hold a field two ways, which a person weighs. A version that carries a field counts the
    edit's revisions on top of ``kept``'s (none for a field left out) and its later ``updated_at``."""
    safe: dict[str, object] = {}
    every: dict[str, object] = {}
    for name in FIELD_NAMES - _BOOKKEEPING:
        was, mine, other = getattr(base, name), getattr(kept, name), getattr(edit, name)
        if other in (was, mine):
            continue
        if name == "entities":
            removed = set(was) - set(other)
            links = [e for e in mine if e not in removed] + [e for e in other if e not in was and e not in mine]
            if links != mine:  # links the memory kept holds already are no revision of it
                safe[name] = every[name] = links
            continue
        every[name] = other
        if mine == was:
            safe[name] = other
    return _with_edit(kept, base, edit, safe), _with_edit(kept, base, edit, every)


def carry_upsert_through_fold(base: Memory, kept: Memory, edit: Memory) -> Memory | None:
    """``carry_through_fold`` where the memory kept and the edit of the folded one hold one topic
    key and a field two ways: two saves under the key (an upsert on each side after the fold), so
    the newer one's content, as if the saves had come one after the other (the edit's every
    field, or the memory kept as it is), the edit's revisions counted on top of ``kept``'s. None
    where no field is held two ways or the keys differ (a person weighs two edits)."""
    safe, every = carry_through_fold(base, kept, edit)
    if safe == every or not kept.topic_key or kept.topic_key != edit.topic_key:
        return None
    if time_order(last_written(edit)) >= time_order(last_written(kept)):  # the edit wins a tie, as the later applied
        return every
    revisions = max((edit.revision_count or 1) - (base.revision_count or 1), 0)
    return kept.evolve(revision_count=(kept.revision_count or 1) + revisions) if revisions else kept


def _with_edit(kept: Memory, base: Memory, edit: Memory, changed: dict[str, object]) -> Memory:
    if not changed:
        return kept
    revisions = max((edit.revision_count or 1) - (base.revision_count or 1), 0)
    count = kept.revision_count if kept.revision_count is None and not revisions else (
        (kept.revision_count or 1) + revisions)
    updated = max(kept.updated_at or "", edit.updated_at or "", key=time_order) or None
    return kept.evolve(**changed, revision_count=count, updated_at=updated)


def forgot_against_edit(base: Memory, ours: Memory, theirs: Memory) -> bool:
    """Whether one side soft-deleted the memory while the other changed more than its links:
    two intents a person weighs, wherever in the file the two changes lie."""
    return any(base.deleted_at is None and forgot.deleted_at is not None and edited.deleted_at is None
               and revised(base, edited) for forgot, edited in ((ours, theirs), (theirs, ours)))


# How ``review`` and ``validate --against`` say a "both edited" of ``soft_forget_met``.
BOTH_EDITED = "the two having edited it in two ways"


def soft_forget_met(taken: Memory, mine: Memory, theirs: Memory) -> Literal["kept", "both", "both edited", "edited"]:
    """What ``slayer-kb merge`` makes of a memory one side took in from the other as ``taken`` and
    the compared revision soft-forgot since (``theirs``), which the branch holds as ``mine``: what
    ``merge_edits`` from ``taken`` makes of it (None, a stop for a person). Where the branch forgot
    it too, "both" (it stays forgotten, from the first forget), or "both edited" where the two
    changed it in two ways besides (the merge stops on the two edits); else "kept" (the forget
    stands) or "edited" (a forget against an edit: the merge stops for a person to keep either).
    ``review`` and ``validate --against`` word it each their own way, from this one rule."""
    stops = merge_edits(taken, mine, theirs) is None
    if mine.deleted_at is not None:
        return "both edited" if stops else "both"
    return "edited" if stops else "kept"


_BOOKKEEPING = frozenset({"created_at", "updated_at", "revision_count", "duplicate_count", "deleted_at"})
_LINKS = frozenset({"entities", "updated_at"})  # what a forget's cascade changes in the memories linking it
# What a memory says, as against its bookkeeping (counts, times) and its links.
_CONTENT = FIELD_NAMES - _BOOKKEEPING - {"entities"}


# A fold's commit subject (sync, merge and rebase folding one side's memory into the other's):
# the moves, then why, "(topic KEY)" or "(same save)".
_FOLD_SUBJECT = re.compile(r"memory: merge (\S+ into \S+(?:, \S+ into \S+)*) \((topic .+|same save)\)")


def fold_subject(mapping: dict[str, str], why: str) -> str:
    """The subject of the commit that folds each id of ``mapping`` into the one it maps to."""
    return f"memory: merge {', '.join(f'{old} into {new}' for old, new in mapping.items())} ({why})"


def folded_by(subject: str) -> tuple[dict[str, str], bool] | None:
    """The moves (the folded id -> the id it was folded into) of a fold's commit, read from its
    ``subject``, and whether it folded one save made alike (not a topic key); None for another
    commit."""
    found = _FOLD_SUBJECT.fullmatch(subject)
    if found is None:
        return None
    moves = dict(move.split(" into ") for move in found.group(1).split(", "))
    return moves, found.group(2) == "same save"
