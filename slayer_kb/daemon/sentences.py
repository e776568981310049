"""``python -m slayer_kb.daemon.sentences ROOT [FD]``: the detached process that makes the
sentence vectors a KB's memories lack when no warm server does (search/filler.py starts it,
handing over ``filler.LOCK`` already held as file descriptor FD). One per KB; niced, so the commands beside it keep their speed. It makes every missing
vector, then stays a while for the memories the next saves add, and exits once nothing changed
for ``LINGER_SECONDS``; one that finds every vector made before it made any (a reindex made
them, or a search started it to mark the KB's texts used in the vector cache: Index.want_marks)
marks them if due and exits, and one whose KB folder is gone exits at once."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import priority
from ..core.errors import StoreError

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

# How long a filler with nothing left to do waits for more saves before it exits: a burst of
# one-shot saves keeps one process (and one loaded model) rather than starting one per save.
LINGER_SECONDS = 30.0
POLL_SECONDS = 0.5


def main(argv: list[str] | None = None) -> int:
    from ..kb import KnowledgeBase
    from ..search import filler

    root, *handed = argv if argv is not None else sys.argv[1:]
    # The lock ``filler.start`` took for this process: held from before it started.
    claim = filler.adopt(Path(root), int(handed[0])) if handed else None
    # SLAYER_KB_WRITE_NICENESS's steps, as the write process and the upkeep jobs take them.
    steps = priority.niceness()
    priority.lower_process(steps)
    priority.lower_session(steps)  # a session of its own (upkeep.detach): niceness alone counts only in it
    kb = KnowledgeBase(root)
    kb.sentences_in_background = False  # this process is the background
    kb.as_background_job()
    try:
        while True:
            with filler.claimed(kb.root, claim) as mine:
                claim = None  # released at the block's end: claimed again, if ever
                if not mine:
                    return 0  # another process fills this KB
                _fill_while_saves_come(kb)
            # A save between our last look and the release saw the lock held and started none
            # (it committed its rows before it tried: Meaning.rows_committed).
            covered, total = kb.sentence_coverage()
            if covered >= total:
                return 0
    finally:
        kb.close()


def _fill_while_saves_come(kb: KnowledgeBase) -> None:
    seen: tuple[int, int] | None = None
    # Only a filler that made vectors waits for more: it was started by a burst of saves. One
    # that finds every vector made (a reindex made them while it started) has no saves coming.
    made = False
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < LINGER_SECONDS:
        now = kb.index_saved()
        if now is None and not Path(kb.root).is_dir():
            return  # the KB is gone
        if now != seen:
            seen = now
            try:
                covered, total = kb.sentence_coverage()
                if covered >= total and not made:
                    kb.mark_vectors_used()  # started by a search (Index.want_marks), or a reindex made them
                    return
                if covered < total:
                    filled = kb.fill_sentences(locked=True)  # the vector cache kept within its bound after it
                    if filled == 0:
                        return  # nothing to make (another process made them) or the encoder failed
                    made = True
            except StoreError:
                seen = None  # the KB lock was held too long (a long reindex): look again
            quiet_since = time.monotonic()
        time.sleep(POLL_SECONDS)


if __name__ == "__main__":
    sys.exit(main())
