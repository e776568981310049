"""The work of one pass of the sentence filler (``Meaning.fill_sentences``): the memories that
lacked a sentence vector when it began, in id order (a first build's backlog: 37-81 minutes on
two free cores at 100,000 memories, docs/performance.md), and, taken ahead of them before each
batch, in a batch of their own, those whose rows were written since (a memory saved, or edited:
a new text hash). A save during a long build is then found by meaning once the batch under way
is done, not after the whole backlog.

What was written since is read from the manifest's log of the rows written lacking a sentence
vector (``vectors.write``, ``vectors.written_since``): a seek to the entries after the newest one
the pass has seen, its mark, 6-7 microseconds a batch at 100,000 memories, against 0.9-3 s of
model time a batch of 64 on two free cores (docs/performance.md). The log's numbers only grow,
so an edit of the memory written last is an entry of its own, where its row takes the same rowid
again. When the log no longer holds the mark (the table was written whole: a rebuild, every
vector made again; or more than ``vectors.LOG_KEPT`` entries were written since the last look),
the pass lists its work again and takes every entry the log holds first: a save after a rebuild
is still made ahead of the backlog.

A pass of stand-ins (``final`` False: a large first build's int8 pass, docs/search.md) lists the
rows with no sentence vector at all; a final pass, those lacking the shipped graph's (none, or a
stand-in). Either way a row written since is taken ahead (``fresh``), and made final at once."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from . import vectors


@dataclass
class Backlog:
    todo: list[tuple[str, str]]  # (id, text hash), in the order they are made
    mark: int  # the log's newest entry the pass has seen (``vectors.newest_row``)
    done: int = 0  # taken so far
    at: int = 0  # where the rest of ``todo`` begins
    final: bool = True  # the rows lacking a final vector (else: lacking any)
    fresh: bool = False  # whether the last ``take`` took rows written since

    @classmethod
    def listed(cls, db: sqlite3.Connection, final: bool = True) -> Backlog:
        """The rows lacking a final sentence vector now (not ``final``: any), in id order."""
        # The mark first: a row written between the two reads is listed and seen again as
        # written since (taken once, ahead), never missed.
        mark = vectors.newest_row(db)
        return cls(vectors.missing_sentences(db, final), mark, final=final)

    def left(self) -> int:
        return len(self.todo) - self.at

    def take(self, db: sqlite3.Connection, size: int) -> list[tuple[str, str]]:
        """The next rows to make, at most ``size``: those written since the last look, alone
        (their vectors are written once they are made, not once a
        batch of the backlog is), else the next of the list. Each is checked again before it
        is made (``vectors.still_missing``): one made meanwhile, or by another process, is not
        made twice."""
        since = vectors.written_since(db, self.mark)
        if since.lost:  # written whole, replaced, or pruned past the mark: listed again
            self.todo, self.at = vectors.missing_sentences(db, self.final), 0
        fresh, self.mark = since.rows, since.mark
        self.fresh = bool(fresh)
        if fresh:
            ahead = {m for m, _digest in fresh}
            # An edited memory still listed further on is made once, for its new text.
            self.todo, self.at = fresh + [row for row in self.todo[self.at :] if row[0] not in ahead], 0
            size = min(size, len(fresh))
        chunk = self.todo[self.at : self.at + size]
        self.at += len(chunk)
        self.done += len(chunk)
        return chunk
