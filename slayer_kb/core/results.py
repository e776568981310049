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


@dataclass
class SaveResult:
    memory_id: str
    resolved_entities: list[str]
    warnings: list[str]
    action: str  # created | replaced | revised (through its topic key) | duplicate (counted)
    title: str | None = None
    type: str | None = None
    suggested_topic_key: str | None = None
    commit: str | None = None

    @property
    def message(self) -> str:
        """Engram's reply text (``Memory saved: "TITLE" (TYPE)``) or a SLayer-style line."""
        if self.title is not None:
            return engram.format_save_reply(self.title, self.type or "manual", self.suggested_topic_key)
        return f"Memory {self.action}: {self.memory_id}"

    def to_json(self) -> dict[str, Any]:
        return {
            "memory_id": self.memory_id,
            "resolved_entities": self.resolved_entities,
            "warnings": self.warnings,
            "action": self.action,
            "suggested_topic_key": self.suggested_topic_key,
            "message": self.message,
        }


@dataclass
class ForgetResult:
    deleted_id: str
    stripped_from: list[str]
    soft: bool = False
    commit: str | None = None
    kept: list[str] = field(default_factory=list)  # --force: the user's versions set aside

    @property
    def action(self) -> str:
        return "soft-deleted" if self.soft else "forgotten"

    def to_json(self) -> dict[str, Any]:
        data = {"deleted_id": self.deleted_id, "action": self.action, "stripped_from": self.stripped_from,
                "soft": self.soft}
        return {**data, "kept": self.kept} if self.kept else data


@dataclass
class ChangeResult:
    """What ``update`` or ``restore`` did to one memory, and the memory as it now is."""

    memory: dict[str, Any]  # Memory.to_dict()
    action: str  # updated | restored
    warnings: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # --force: the user's versions set aside

    def to_json(self) -> dict[str, Any]:
        data = {**self.memory, "action": self.action, "warnings": self.warnings}
        return {**data, "kept": self.kept} if self.kept else data


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


class Stats(TypedDict):
    """What a KB holds, and whether search by meaning is on."""

    memories: int
    sessions: int
    prompts: int
    projects: list[str]
    types: dict[str, int]
    search_by_meaning: str


@dataclass
class SearchResult:
    memories: list[Hit]
    example_queries: list[Hit]
    entities: list[dict[str, Any]]
    resolved_input_entities: list[str]
    warnings: list[str] = field(default_factory=list)
    # What the agent need not act on: how the answer was made (some of the words, part of the
    # KB with sentence vectors).
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class MaintenanceResult:
    """What ``maintain`` did: the index's segments and the object store, before and after."""

    segments: tuple[int, int]
    loose_objects: tuple[int, int]
    packs: tuple[int, int]
    pack_bytes: tuple[int, int]

    def to_json(self) -> dict[str, Any]:
        return {name: {"before": before, "after": after} for name, (before, after) in asdict(self).items()}


@dataclass
class SyncReport:
    """What bringing the index up to date with the files did."""

    updated: int = 0
    removed: int = 0
    catalog_changed: bool = False
    rebuilt: bool = False
    problems: list[MemoryFileError] = field(default_factory=list)
