"""slayer-kb: a git-backed knowledge base of agent memories, in YAML files, searched with Whoosh."""

from __future__ import annotations

import os

# Search multiplies small matrices; on a busy machine BLAS threads cost 5-10 times what they
# save (measured: 18 ms against 2 ms for a 12 x 256 by 256 x 5,000 product on two cores).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from .core.errors import KBError

TYPE_CHECKING = False  # typing is not imported: `slayer-kb` relayed to a server needs none of it

if TYPE_CHECKING:
    from typing import Any

    from .kb import KnowledgeBase

__all__ = ["KBError", "KnowledgeBase", "__version__"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Imported on first use: ``slayer-kb search`` relayed to a watcher never needs Whoosh.
    if name == "KnowledgeBase":
        from .kb import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module 'slayer_kb' has no attribute {name!r}")
