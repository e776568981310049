"""``python -m slayer_kb.daemon.compact ROOT``: the background job a save starts when index
segments have piled up (transaction.py): merge them, then pack the loose objects if that is due.
Started isolated, out of the KB (``core.children``), by the store's upkeep runner."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from ..kb import KnowledgeBase

    (root,) = argv if argv is not None else sys.argv[1:]
    kb = KnowledgeBase(root)
    kb.as_background_job()
    kb.background_upkeep()
    return 0


if __name__ == "__main__":
    sys.exit(main())
