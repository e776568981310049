"""What the operations return: typed results, each with the one ``to_json`` that both ``--json``
and the MCP tools print.

A search hit, a timeline and the stats are ``TypedDict``s rather than dataclasses: they are JSON
records that the CLI, the MCP tools and library callers read by key (as SLayer's and Engram's
replies are read), so the value is its own JSON form, and the type checker still knows each field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

from . import engram
from .errors import MemoryFileError
from .memory import Memory
from .problems import Problem
from .session import Session


@dataclass
class SaveResult:
    memory_id: str
    resolved_entities: list[str]
    warnings: list[str]
    action: str  # created | replaced | revised (through its topic key) | duplicate (counted)
    title: str | None = None
    type: str | None = None
    suggested_topic_key: str | None = None
    commit: str | None = None  # None: nothing was committed (a replace with what the memory held)
    # The reply of a tool with its own words for the save (mem_session_summary's), else None.
    reply: str | None = None

    @property
    def message(self) -> str:
        """Engram's reply text (``Memory saved: "TITLE" (TYPE)``, or ``reply``) or a SLayer-style line."""
        if self.reply is not None:
            return self.reply
        if self.title is not None:
            return engram.format_save_reply(self.title, self.type or "manual", self.suggested_topic_key)
        return f"Memory {self.action}: {self.memory_id}"

    def to_json(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "resolved_entities": self.resolved_entities, "warnings": self.warnings,
                "action": self.action, "suggested_topic_key": self.suggested_topic_key, "message": self.message,
                "commit": self.commit}


@dataclass
class ForgetResult:
    deleted_id: str
    stripped_from: list[str]
    soft: bool = False
    commit: str | None = None
    kept: list[str] = field(default_factory=list)  # --force: the user's versions set aside
    # Files that do not parse and may hold the link (ops/unreadlinks.py); given only when some do.
    warnings: list[str] = field(default_factory=list)

    @property
    def action(self) -> str:
        return "soft-deleted" if self.soft else "forgotten"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"deleted_id": self.deleted_id, "action": self.action, "stripped_from": self.stripped_from,
                                "soft": self.soft}
        return {**data, **({"kept": self.kept} if self.kept else {}), **({"warnings": self.warnings} if self.warnings else {})}


@dataclass
class RenameResult:
    """``rename OLD NEW``: a memory given a new id, the ``memory:`` references to it rewritten."""

    old_id: str
    new_id: str
    rewritten: list[str] = field(default_factory=list)  # the memories whose references it rewrote
    commit: str | None = None
    kept: list[str] = field(default_factory=list)  # --force: the user's versions set aside
    warnings: list[str] = field(default_factory=list)  # as ForgetResult's

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"old_id": self.old_id, "new_id": self.new_id, "references_rewritten_in": self.rewritten,
                                "commit": self.commit}
        return {**data, **({"kept": self.kept} if self.kept else {}), **({"warnings": self.warnings} if self.warnings else {})}


@dataclass
class ChangeResult:
    """What ``update`` or ``restore`` did to one memory, and the memory as it now is."""

    memory: dict[str, Any]  # Memory.to_dict()
    action: str  # updated | unchanged (the fields held the values given: no commit) | restored
    warnings: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # --force: the user's versions set aside

    def to_json(self) -> dict[str, Any]:
        data = {**self.memory, "action": self.action, "warnings": self.warnings}
        return {**data, "kept": self.kept} if self.kept else data


class Document(TypedDict):
    """A memory as the index stores it (search/schema.py): its id, its kind, its parsed form
    (``Memory.to_dict``) and, from a ranked look-up, its score."""

    id: str
    kind: str
    data: dict[str, Any]
    score: float | None


class _Hit(TypedDict):
    id: str
    score: float
    title: str | None
    type: str | None
    description: str
    entities: list[str]  # the live ones: a dangling reference is not shown
    matched_entities: list[str]  # those equal to or under an input entity
    project: str | None
    scope: str | None
    created_at: str


class Hit(_Hit, total=False):
    """A memory as a search, ``list`` or timeline shows it."""

    query: dict[str, Any] | None  # an example query's SlayerQuery
    learning: str  # with --full


class Timeline(TypedDict):
    """The memories saved just before and after one, in its session, oldest first."""

    session_id: str | None
    session: dict[str, Any] | None  # the session file, when there is one
    before: list[Hit]
    focus: Hit
    after: list[Hit]
    warnings: list[str]  # the id moved on this clone (store/moves.py)


class _Counts(TypedDict):
    memories: int
    sessions: int
    prompts: int
    projects: list[str]
    types: dict[str, int]  # the memories of each type
    untyped: int  # the memories with no type (SLayer's learnings), not among the types
    search_by_meaning: str


class Stats(_Counts, total=False):
    """What a KB holds, and whether search by meaning is on; ``warnings`` name the session
    files skipped, when there are any."""

    warnings: list[str]


def fell_back_note(one: str, many: str) -> str:
    """The note of a bucket that holds hits but none with every word of the question."""
    return f"No {one} has all the words of the question; showing {many} with some of them or close in meaning."


@dataclass
class SearchResult:
    memories: list[Hit]
    example_queries: list[Hit]
    entities: list[dict[str, Any]]
    resolved_input_entities: list[str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # how it was made (some of the words...): not to act on

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def merged(self, limit: int) -> tuple[list[Hit], list[str]]:
        """Both buckets as one list, best first (Engram has no example queries), and the notes
        of that list: it fell back to some of the words only when every bucket it draws on did."""
        hits = sorted(self.memories + self.example_queries, key=lambda h: -h["score"])[:limit]
        shown = {id(h) for h in hits}
        buckets = {fell_back_note("memory", "memories"): self.memories,
                   fell_back_note("example query", "example queries"): self.example_queries}
        notes = [n for n in self.notes if n not in buckets]
        drawn = [note for note, bucket in buckets.items() if any(id(h) in shown for h in bucket)]
        if drawn and all(note in self.notes for note in drawn):
            notes.append(fell_back_note("memory", "memories"))
        return hits, notes


@dataclass
class CacheTrim:
    """What keeping the sentence-vector cache within its bound did (search/eviction.py)."""

    before: int  # bytes of the file (and its write-ahead log) before
    after: int  # and after
    limit: int  # the bound, bytes (SLAYER_KB_CACHE_MAX_MB)
    unread_rows: int  # rows removed under keys this version never reads
    texts: int  # texts whose vectors were removed, least recently used first
    problem: str | None = None  # why it could not be trimmed (a full disk, a file it cannot write) or shrunk


@dataclass
class MaintenanceResult:
    """What ``maintain`` did: the index's segments, the object store and the vector cache, before and after."""

    segments: tuple[int, int]
    loose_objects: tuple[int, int]
    packs: tuple[int, int]
    pack_bytes: tuple[int, int]
    vector_cache: CacheTrim

    def to_json(self) -> dict[str, Any]:
        counts = {name: {"before": before, "after": after} for name, (before, after) in
                  ((field, getattr(self, field)) for field in ("segments", "loose_objects", "packs", "pack_bytes"))}
        return {**counts, "vector_cache": asdict(self.vector_cache)}


@dataclass
class SyncReport:
    """What bringing the index up to date with the files did."""

    updated: int = 0  # memory files read, soft-deleted and unreadable ones too
    soft_deleted: int = 0  # of those read, the memories forget kept (restore, get --deleted)
    live: int = 0  # of those read, the memories list and stats count
    removed: int = 0
    catalog_changed: bool = False
    rebuilt: bool = False
    problems: list[MemoryFileError] = field(default_factory=list)


@dataclass
class CascadeResult:
    """What a catalog cascade (``delete_*``) or ``prune`` did."""

    deleted: str | None
    commit: str | None
    rewritten: list[str]
    stripped: dict[str, list[str]] = field(default_factory=dict)  # memory id -> entities removed
    dry_run: bool = False
    kept: list[str] = field(default_factory=list)  # --force: the user's versions set aside
    stale_queries: list[str] = field(default_factory=list)  # a delete: example queries naming what it deleted
    broken: list[str] = field(default_factory=list)  # delete-leaf: the model's definitions still reading it
    # prune: memory id -> {link to a renamed memory: the link to its new id} it pointed there
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # prune --dry-run: why its list is unreliable

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"commit": self.commit, "rewritten": self.rewritten}
        if self.deleted is None:
            data.update(stripped=self.stripped, dry_run=self.dry_run)
        else:
            data = {"deleted": self.deleted, **data, "stale_queries": self.stale_queries}
        # Said only when there are some: a delete that broke nothing, a prune that relinked nothing.
        optional = (("broken_definitions", self.broken), ("relinked", self.relinked), ("kept", self.kept),
                    ("warnings", self.warnings))
        return data | {key: value for key, value in optional if value}


@dataclass
class SessionFiles:
    """The sessions read from their files, newest activity first, and a warning naming each
    session file skipped (broken, or no regular file) with its fix."""

    sessions: list[Session]
    warnings: list[str] = field(default_factory=list)


@dataclass
class SessionResult:
    """What ``session_start``, ``session_end`` or ``save_prompt`` did to a session file."""

    session: dict[str, Any]  # Session.to_dict()
    action: str  # started | ended | prompt saved
    commit: str | None
    warnings: list[str] | None = None  # session_start, session_end; save_prompt when it cut the prompt
    prompt: dict[str, Any] | None = None  # save_prompt only: Prompt.to_dict()
    message: str | None = None  # save_prompt only: Engram's reply text

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"session": self.session, "action": self.action, "commit": self.commit}
        if self.warnings is not None:
            data["warnings"] = self.warnings
        if self.prompt is not None:
            data.update(prompt=self.prompt, message=self.message)
        return data


@dataclass
class CaptureResult:
    """What ``capture_passive`` saved from a text's ``## Key Learnings:`` section."""

    session_id: str
    source: str
    extracted: int = 0
    saved: int = 0
    duplicates: int = 0
    memory_ids: list[str] = field(default_factory=list)
    commit: str | None = None
    skipped: list[int] = field(default_factory=list)  # the numbers (from 1) of learnings not saved
    warnings: list[str] = field(default_factory=list)  # why each was not
    listed_none: str | None = None  # the heading of a section whose only items say none ("- None")

    @property
    def message(self) -> str:
        said = f"Passive capture complete: extracted={self.extracted} saved={self.saved} duplicates={self.duplicates}"
        return f"{said} (the {self.listed_none!r} section lists none)" if self.listed_none else said

    def to_json(self) -> dict[str, Any]:
        return {"extracted": self.extracted, "saved": self.saved, "duplicates": self.duplicates,
                "memory_ids": self.memory_ids, "session_id": self.session_id, "source": self.source,
                "commit": self.commit, "skipped": self.skipped, "message": self.message,
                "warnings": self.warnings}


class SessionTimeline(TypedDict):
    """A session as one timeline, oldest first: ``entries`` of kind start, prompt, memory, end."""

    session: dict[str, Any]  # the session file, or only its id when there is none
    entries: list[dict[str, Any]]


class _Commit(TypedDict):
    commit: str
    date: str
    author: str
    message: str


class LogEntry(_Commit, total=False):
    """A commit that touched a memory (``GitStore.describe_commits``); a merge that took one side's
    version of the file whole, where another side's differs, names them (``ops/memorylog.py``)."""

    kept: str  # the side kept: git's rewritten parent, the side's last commit of the file
    dropped: list[str]  # the sides whose version it dropped
    deleted: bool  # the side kept had deleted the file (a forget): the merge kept no version


@dataclass
class EditResult:
    memory_id: str
    changed: bool
    commit: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "changed": self.changed, "commit": self.commit,
                "warnings": self.warnings}


@dataclass
class Shown:
    """A memory as it was at a revision (``show``)."""

    memory: Memory
    text: str
    rev: str | None  # None: the work tree
    deleted_in: str | None = None
    warnings: list[str] = field(default_factory=list)  # the id moved on this clone (store/moves.py)
    folded: tuple[str, str] | None = None  # deleted_in folded it: (the id kept, how, Context.folded_in)

    def to_json(self) -> dict[str, Any]:
        return {**self.memory.to_dict(), "rev": self.rev, "deleted_in": self.deleted_in,
                "folded_into": self.folded and self.folded[0], "warnings": self.warnings}


@dataclass
class RestoreResult:
    """``restore --rev``: the memory as it now is, as ``update`` and a soft-delete's ``restore``
    give it (``ChangeResult``), with the revision it came from and the commit. ``action`` is
    ``unchanged`` when the memory was already as it was at the revision (no commit, no file written)."""

    memory_id: str
    rev: str
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None
    memory: dict[str, Any] = field(default_factory=dict)  # Memory.to_dict()
    action: str = "restored"

    def to_json(self) -> dict[str, Any]:
        return {**self.memory, "action": self.action, "warnings": self.warnings,
                "memory_id": self.memory_id, "rev": self.rev, "commit": self.commit}


@dataclass
class RenumberResult:
    onto: str
    mapping: dict[str, str] = field(default_factory=dict)
    rewritten: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"onto": self.onto, "renumbered": self.mapping, "references_rewritten_in": self.rewritten,
                "commit": self.commit}


@dataclass
class AcceptResult:
    """``renumber --accept``: an id sync moved now means the memory it names."""

    accepted: str
    moved_to: str

    def to_json(self) -> dict[str, Any]:
        return {"accepted": self.accepted, "moved_to": self.moved_to}


@dataclass
class MergeResult:
    """``slayer-kb merge``: REF merged into the branch (with the KB's merge driver)."""

    ref: str
    action: str  # merged | fast-forward | up to date
    head: str
    push: str = "slayer-kb sync"  # what sends the branch, run from where the user is (rebase.push_step)
    folded: dict[str, str] = field(default_factory=dict)  # this branch's memory -> REF's, one topic key
    deduplicated: dict[str, str] = field(default_factory=dict)  # this branch's memory -> REF's, one save made on both
    unlinked: dict[str, list[str]] = field(default_factory=dict)  # memory -> forgotten ids stripped (unlinks.py)
    cascaded: dict[str, list[str]] = field(default_factory=dict)  # memory -> deleted entities stripped (unlinks.py)
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {renamed id: new id} (unlinks.py)
    relinked_merged: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {folded id: id kept} (unlinks.py)
    # A memory one side folded into another that the other side forgot, edited or renamed since (carry.follow_folds):
    # {its id: {kept, change, renamed (the new id, for renamed), folded_on (REF or 'this branch')}}.
    followed: dict[str, dict[str, str]] = field(default_factory=dict)
    # What sync's revalidation would say of the branch's memories on top of REF (revalidation.py):
    # the problems it refuses to push, and the stale and untouched invalid example queries it lets through.
    problems: list[str] = field(default_factory=list)
    stale_queries: list[str] = field(default_factory=list)
    untouched_queries: list[str] = field(default_factory=list)  # path:line: message, as SyncResult's
    # Session files both sides started for two projects: {session, upstream (REF's), here, kept}.
    session_projects: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # a memory this clone holds that REF's commits replaced

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "action": self.action, "head": self.head, "push": self.push, "merged": self.folded,
                "deduplicated": self.deduplicated,
                "unlinked": self.unlinked, "cascaded": self.cascaded, "relinked": self.relinked, "relinked_merged": self.relinked_merged, "problems": self.problems,
                "stale_queries": self.stale_queries, "untouched_queries": self.untouched_queries,
                "session_projects": self.session_projects, "followed": self.followed, "warnings": self.warnings}


@dataclass
class RebaseResult:
    """``slayer-kb rebase``: the rebase (with the KB's merge driver) finished or was aborted."""

    onto: str
    action: str  # rebased | aborted
    head: str
    push: str = "slayer-kb sync"  # what sends the branch: a force push once pushed commits were rewritten
    merged: dict[str, str] = field(default_factory=dict)  # this branch's memory -> the upstream's, one topic key
    deduplicated: dict[str, str] = field(default_factory=dict)  # ... the upstream's, one save made on both
    unlinked: dict[str, list[str]] = field(default_factory=dict)  # memory -> forgotten ids stripped (unlinks.py)
    cascaded: dict[str, list[str]] = field(default_factory=dict)  # memory -> deleted entities stripped (unlinks.py)
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {renamed id: new id} (unlinks.py)
    relinked_merged: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {folded id: id kept} (unlinks.py)
    problems: list[str] = field(default_factory=list)  # as MergeResult's
    stale_queries: list[str] = field(default_factory=list)
    untouched_queries: list[str] = field(default_factory=list)
    session_projects: dict[str, dict[str, str]] = field(default_factory=dict)  # as MergeResult's
    # As MergeResult's, of this run's picks (carry.follow_folds): folded_on the upstream's name.
    followed: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"onto": self.onto, "action": self.action, "head": self.head, "push": self.push, "merged": self.merged,
                "deduplicated": self.deduplicated,
                "unlinked": self.unlinked, "cascaded": self.cascaded, "relinked": self.relinked, "relinked_merged": self.relinked_merged, "problems": self.problems,
                "stale_queries": self.stale_queries, "untouched_queries": self.untouched_queries,
                "session_projects": self.session_projects, "followed": self.followed}


@dataclass
class SyncResult:
    remote: str
    branch: str
    pulled: int = 0
    pushed: int = 0
    pushed_by_merge: int = 0  # of ``pushed``, the commits a merge took in from another branch (main's)
    pushed_again: int = 0  # of ``pushed``, commits the upstream held before a rewrite (a force push) dropped them
    renumbered: dict[str, str] = field(default_factory=dict)
    # Spans of ids ("1-100") whose block another clone leased once the remote lost this clone's ref.
    given_up: list[str] = field(default_factory=list)
    merged: dict[str, str] = field(default_factory=dict)
    deduplicated: dict[str, str] = field(default_factory=dict)  # this clone's memory -> the upstream's, one save
    resolved: list[str] = field(default_factory=list)
    # Topic-key memories one side forgot that the other changed later (an upsert, an edit): the change held (store/replay.py).
    unforgotten: list[str] = field(default_factory=list)
    # Memories this clone changed that the upstream forgot later: the forget held, the change is dropped.
    dropped: list[str] = field(default_factory=list)
    unlinked: dict[str, list[str]] = field(default_factory=dict)  # memory -> forgotten ids stripped (unlinks.py)
    cascaded: dict[str, list[str]] = field(default_factory=dict)  # memory -> deleted entities stripped (unlinks.py)
    relinked: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {renamed id: new id} (unlinks.py)
    relinked_merged: dict[str, dict[str, str]] = field(default_factory=dict)  # memory -> {folded id: id kept} (unlinks.py)
    # A memory one side folded into another that the other side forgot, edited or renamed since, as MergeResult's:
    # merging, carry.follow_folds; rebasing, the upstream folded it and this branch changed it (folds.carry_dropped,
    # forgotten_folded), change 'dropped' for an edit of a field the memory kept holds another way (edit: its git show).
    followed: dict[str, dict[str, str]] = field(default_factory=dict)
    # Memories pushed whose example query names what the catalog no longer has (sync's revalidation).
    stale_queries: list[str] = field(default_factory=list)
    # Problems (path:line: message) of invalid example queries pushed as the upstream had them:
    # the branch changed those memories, but not their query (revalidation.py).
    untouched_queries: list[str] = field(default_factory=list)
    # Session files both sides started for two projects: {session, upstream, here, kept}.
    session_projects: dict[str, dict[str, str]] = field(default_factory=dict)
    action: str = "up to date"  # up to date | fast-forward | rebased | pushed (only pushed)
    head: str | None = None
    attempts: int = 0
    # Seconds per phase, one dict per push attempt: lock (the first), queue (for another clone's
    # turn), fetch, pull, push, turn (taking it), wait (after a refused push), finish (the last:
    # re-index, bookkeeping). docs/teams.md.
    timings: list[dict[str, float]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what it pulled that an agent must hear of (syncreport.py)

    def to_json(self) -> dict[str, Any]:
        return {"remote": self.remote, "branch": self.branch, "action": self.action, "pulled": self.pulled,
                "pushed": self.pushed, "pushed_by_merge": self.pushed_by_merge, "pushed_again": self.pushed_again,
                "given_up": self.given_up, "renumbered": self.renumbered, "merged": self.merged,
                "deduplicated": self.deduplicated,
                "resolved": self.resolved, "unforgotten": self.unforgotten, "dropped": self.dropped, "unlinked": self.unlinked,
                "cascaded": self.cascaded, "relinked": self.relinked, "relinked_merged": self.relinked_merged, "stale_queries": self.stale_queries,
                "untouched_queries": self.untouched_queries, "session_projects": self.session_projects, "followed": self.followed,
                "attempts": self.attempts, "head": self.head, "timings": self.timings, "warnings": self.warnings}


@dataclass
class ImportResult:
    source: str
    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: int = 0
    sessions: int = 0
    prompts: int = 0  # import-engram: the prompts added to session files
    warnings: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "imported": self.imported, "replaced": self.replaced,
                "unchanged": self.unchanged, "skipped": self.skipped, "sessions": self.sessions,
                "prompts": self.prompts, "warnings": self.warnings, "commit": self.commit}

    def summary(self) -> str:
        parts = [f"{len(self.imported)} imported"]
        if self.replaced:
            parts.append(f"{len(self.replaced)} replaced")
        if self.unchanged:
            parts.append(f"{len(self.unchanged)} unchanged")
        if self.skipped:
            parts.append(f"{self.skipped} skipped")
        if self.sessions or self.prompts:
            parts.append(f"{self.sessions} new sessions, {self.prompts} prompts")
        return f"From {self.source}: " + ", ".join(parts) + "."


@dataclass
class ExportResult:
    folder: str
    written: list[str] = field(default_factory=list)
    skipped_deleted: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Files of an earlier export removed (their memories no longer live), and others' files
    # overwritten (--force): by id.
    removed: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "written": self.written, "skipped_deleted": self.skipped_deleted,
                "removed": self.removed, "overwritten": self.overwritten, "problems": self.problems}


@dataclass
class Report:
    """What ``validate`` or ``fmt`` found."""

    checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    reformatted: list[str] = field(default_factory=list)  # fmt only: files rewritten (with --check, to be)
    warnings: list[Problem] = field(default_factory=list)  # validate only: valid but misleading (a future time)

    def to_json(self, failed: bool) -> dict[str, Any]:
        return {"ok": not failed, "checked": self.checked, "problems": [p.to_json() for p in self.problems],
                "reformatted": self.reformatted, "warnings": [w.to_json() for w in self.warnings]}


@dataclass
class Landed:
    """The result of the operation a commit made: ``kind`` names the operation (``save``,
    ``update``, ``restore``, ``restore-rev``, ``forget``, ``rename``, ``delete``, ``prune``,
    ``session-start``, ``session-end``, ``save-prompt``) and ``result`` is what it returns."""

    kind: str
    result: SaveResult | ChangeResult | RestoreResult | ForgetResult | RenameResult | CascadeResult | SessionResult
    subject: str = ""  # the id or entity the command was given


@dataclass
class IndexWritten:
    """What a write process tells its warm server of the index (daemon/writer.py): ``key``
    identifies the index's content now (None: unknown), and ``indexed`` holds the signatures
    (mtime in ns, size, inode) at which it indexed the memory files it was asked about."""

    key: Any
    indexed: dict[str, tuple[int, int, int]] = field(default_factory=dict)
