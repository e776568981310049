"""slayer-kb: a git-backed knowledge base of agent memories, in YAML files, searched with Whoosh."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import KBError

if TYPE_CHECKING:
    from .kb import KnowledgeBase

__all__ = ["KBError", "KnowledgeBase", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Imported on first use: ``slayer-kb search`` relayed to a watcher never needs Whoosh.
    if name == "KnowledgeBase":
        from .kb import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module 'slayer_kb' has no attribute {name!r}")
