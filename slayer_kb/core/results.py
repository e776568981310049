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
class IndexWritten:
    """What a write process tells its warm server of the index (daemon/writer.py): ``key``
    identifies the index's content now (None: unknown), and ``indexed`` holds the signatures
    (mtime in ns, size, inode) at which it indexed the memory files it was asked about."""

    key: Any
    indexed: dict[str, tuple[int, int, int]] = field(default_factory=dict)
