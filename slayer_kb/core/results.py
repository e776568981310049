"""What the operations return: typed results, each with the one ``to_json`` that both ``--json``
and the MCP tools print."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from . import engram
from .errors import MemoryFileError


@dataclass
class SaveResult:
    memory_id: str
    resolved_entities: list[str]
    warnings: list[str]
    action: str  # created | replaced | revised | duplicate
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

    def to_json(self) -> dict[str, Any]:
        data = {"deleted_id": self.deleted_id, "stripped_from": self.stripped_from, "soft": self.soft}
        return {**data, "kept": self.kept} if self.kept else data


@dataclass
class SearchResult:
    memories: list[dict[str, Any]]
    example_queries: list[dict[str, Any]]
    entities: list[dict[str, Any]]
    resolved_input_entities: list[str]
    warnings: list[str] = field(default_factory=list)

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
