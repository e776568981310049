"""``Workspace``: the parts of a KB a ``transaction.Transaction`` works on, as a ``Protocol`` of
the transaction's layer: ``context.Context`` has them, and the transaction (and the operations
that take only what it needs, sessions.py) import nothing above it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from .core.errors import MemoryFileError
    from .core.memory import Memory
    from .search.index import Index
    from .search.monitor import ChangeMonitor
    from .store.leases import IdLeases
    from .store.repo import GitStore
    from .store.statefiles import IdCache

T = TypeVar("T")


class Workspace(Protocol):
    """The parts of a KB a transaction works on (``context.Context`` has them), named here so
    that transaction.py imports nothing above it."""

    root: Path
    author: str | None
    max_content: int
    memories_dir: Path
    store: GitStore
    id_cache: IdCache
    leases: IdLeases
    monitor: ChangeMonitor | None
    problems: list[MemoryFileError]

    @property
    def index(self) -> Index: ...

    def read(self, memory_id: str) -> Memory: ...

    def read_settled(self, read: Callable[[], T]) -> T: ...

    def tell(self, warning: str) -> None: ...

    def tell_leases(self) -> None: ...

    def read_with_text(self, memory_id: str, indexed: tuple[str | None, dict[str, Any]] | None = None
                       ) -> tuple[Memory, str]: ...

    def highest_auto_id(self) -> int: ...

    def recheck_catalog(self) -> None: ...
