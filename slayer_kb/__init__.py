"""slayer-kb: a git-backed knowledge base of agent memories, in YAML files, searched with Whoosh."""

from __future__ import annotations

from .errors import KBError
from .kb import KnowledgeBase

__all__ = ["KBError", "KnowledgeBase", "__version__"]
__version__ = "0.1.0"
