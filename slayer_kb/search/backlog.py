"""The work of one pass of the sentence filler (``Meaning.fill_sentences``): the memories that
lacked a sentence vector when it began, in id order (a first build's backlog: 37-81 minutes on
two free cores at 100,000 memories, docs/performance.md), and, taken ahead of them before each
batch, in a batch of their own, those whose rows were written since (a memory saved, or edited:
a new text hash). A save during a long build is then found by meaning once the batch under way
is done, not after the whole backlog.

What was written since is read by the rows' SQLite rowids (``vectors.written_since``): a seek
to the rows after the newest one the pass has seen, a few microseconds a batch at 100,000
memories, against 0.9-3 s of model time a batch of 64 on two free cores (docs/performance.md).
SQLite gives a new row the rowid after the largest; should the newest row be deleted (its file
removed) before a save, the saved row takes its rowid again and waits for the next pass, as
every save did before."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from . import vectors


@dataclass
class Backlog:
    todo: list[tuple[str, str]]  # (id, text hash), in the order they are made
    mark: int  # the newest row the pass has seen (``vectors.newest_row``)
    done: int = 0  # taken so far
    at: int = 0  # where the rest of ``todo`` begins

    @classmethod
    def listed(cls, db: sqlite3.Connection) -> Backlog:
        """The rows lacking a sentence vector now, in id order."""
        # The mark first: a row written between the two reads is listed and seen again as
        # written since (taken once, ahead), never missed.
        mark = vectors.newest_row(db)
        return cls(vectors.missing_sentences(db), mark)

    def left(self) -> int:
        return len(self.todo) - self.at

    def take(self, db: sqlite3.Connection, size: int) -> list[tuple[str, str]]:
        """The next rows to make, at most ``size``: those written since the last look, alone
        and in the order written (their vectors are written once they are made, not once a
        batch of the backlog is), else the next of the list. Each is checked again before it
        is made (``vectors.still_missing``): one made meanwhile, or by another process, is not
        made twice."""
        fresh, self.mark = vectors.written_since(db, self.mark)
        if fresh:
            ahead = {m for m, _digest in fresh}
            # An edited memory still listed further on is made once, for its new text.
            self.todo, self.at = fresh + [row for row in self.todo[self.at :] if row[0] not in ahead], 0
            size = min(size, len(fresh))
        chunk = self.todo[self.at : self.at + size]
        self.at += len(chunk)
        self.done += len(chunk)
        return chunk
