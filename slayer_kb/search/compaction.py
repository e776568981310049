"""Which index segments to merge, and merging them without holding the index while it runs.

A save adds a one-document segment. Saves merge a few small segments themselves (``on_save``:
tiers of MERGE_FACTOR, at most TINY documents, a few milliseconds); everything bigger is merged
by ``compact``, in a background process started after a save (upkeep) or by ``slayer-kb
maintenance``. Merging a few thousand documents takes seconds, and a save must not wait for it,
so a compaction is built in two steps, as Lucene's concurrent merges are:

1. ``build`` (no lock): copy the live documents of the chosen segments into a new segment, in a
   private folder beside the index, where no writer's clean-up can delete its files.
2. ``publish`` (under the KB lock and Whoosh's write lock, a few milliseconds): if the chosen
   segments are all still in the index, mark deleted in the new segment what writers deleted in
   them meanwhile, move its file in and write a table of contents that has it instead of them.
   Otherwise (a reindex, another compaction) it is dropped: a compaction only ever saves time.

A crash leaves at most a private folder (removed by the next ``build``) or an unlisted segment
file (removed by Whoosh's next commit); the table of contents is replaced atomically.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh.reading import SegmentReader
from whoosh.writing import MERGE_SMALL

from . import whoosh_internals as internals

# Segments with more documents than this are merged only by a reindex.
MERGE_LIMIT = 10_000
# Saves merge segments of at most TINY documents, MERGE_FACTOR of one size tier at a time.
TINY = 4
MERGE_FACTOR = 4
# A background compaction starts when this many segments of one tier above TINY pile up.
COMPACT_AT = MERGE_FACTOR
_FOLDER_PREFIX = "merging-"
_LOCK_SECONDS = 30.0


def tier(count: int) -> int:
    """0 for 1 document, 1 for 2 to MERGE_FACTOR, 2 up to MERGE_FACTOR**2, and so on."""
    level, bound = 0, 1
    while count > bound:
        level, bound = level + 1, bound * MERGE_FACTOR
    return level


def _tiers(segments: list[Any], low: int, high: int) -> dict[int, list[Any]]:
    tiers: dict[int, list[Any]] = {}
    for segment in segments:
        if low < segment.doc_count_all() <= high:
            tiers.setdefault(tier(segment.doc_count_all()), []).append(segment)
    return tiers


def on_save(writer: Any, segments: list[Any]) -> list[Any]:
    """The merge policy of a save, an edit, a forget: when one size tier of segments of at most
    TINY documents holds MERGE_FACTOR segments, merge those (the smallest tier first, one tier
    per save). Merging costs a few milliseconds a segment and about one a document, so each save
    merges at most MERGE_FACTOR * TINY documents (Whoosh's own policy made about every fifth save
    merge thousands, 0.1 to 2 s at 10,000 to 50,000 memories)."""
    tiers = _tiers(segments, 0, TINY)
    for level in sorted(tiers):
        if len(tiers[level]) >= MERGE_FACTOR:
            return merged(writer, segments, tiers[level][:MERGE_FACTOR])
    return segments


def on_bulk(writer: Any, segments: list[Any]) -> list[Any]:
    """The merge policy of a rebuild or a cascade: Whoosh's MERGE_SMALL, applied only to
    segments of at most MERGE_LIMIT documents.

    Left alone, MERGE_SMALL lets the small segments it merges grow until a commit folds most of
    the index into one: after a few cascades, one took 77 s instead of 7 (measured at 100,000
    memories). Bigger segments stay as they are until a reindex.
    """
    big = [segment for segment in segments if segment.doc_count_all() > MERGE_LIMIT]
    small = [segment for segment in segments if segment.doc_count_all() <= MERGE_LIMIT]
    return big + MERGE_SMALL(writer, small)


def merged(writer: Any, segments: list[Any], chosen: list[Any]) -> list[Any]:
    """Add the live documents of the ``chosen`` segments to ``writer``'s new segment; the
    segments that stay as they are."""
    for segment in chosen:
        reader = SegmentReader(writer.storage, writer.schema, segment)
        writer.add_reader(reader)
        reader.close()
    return [segment for segment in segments if segment not in chosen]


def wanted(segments: list[Any], everything: bool = False) -> list[Any]:
    """The segments a compaction merges: with ``everything`` (maintenance), all of at most
    MERGE_LIMIT documents; otherwise each tier above TINY that holds COMPACT_AT segments, so a
    document is merged about log4(N) times in all. Fewer than two: nothing to do."""
    if everything:
        chosen = [s for s in segments if s.doc_count_all() <= MERGE_LIMIT]
    else:
        chosen = [s for group in _tiers(segments, TINY, MERGE_LIMIT).values() if len(group) >= COMPACT_AT
                  for s in group]
    return chosen if len(chosen) > 1 else []


@dataclass
class _Source:
    segment_id: str
    deleted: frozenset[int]
    newdocs: dict[int, int]  # its live documents when the merge read it -> their new docnum


@dataclass
class Built:
    """A merged segment waiting in its private folder for ``publish``."""

    folder: Path
    segment: Any
    sources: list[_Source] = field(default_factory=list)


def build(ix: Any, chosen: list[Any], state_dir: Path, codec: Any) -> Built | None:
    """Step 1, with no lock: the live documents of ``chosen`` (segments of ``ix``) copied into
    one new segment in a private folder under ``state_dir``. None when a segment's file is gone
    before it was opened: another compaction (or a reindex) has replaced it already."""
    _remove_abandoned(state_dir)
    folder = state_dir / f"{_FOLDER_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        new, docmaps = internals.copy_segments(ix, chosen, folder, codec)
        sources = [
            _Source(segment.segment_id(), frozenset(segment.deleted_docs()) if segment.has_deletions() else frozenset(), live)
            for segment, live in zip(chosen, docmaps, strict=True)
        ]
        return Built(folder, new, sources)
    except FileNotFoundError:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def publish(ix: Any, built: Built) -> bool:
    """Step 2, under the KB lock: swap the merged segment in for its sources (see the module's
    docstring). False when they changed beyond deletions; the folder is removed either way."""
    lock = ix.lock("WRITELOCK")
    try:
        if not _acquire(lock):
            return False
        try:
            toc = internals.table_of_contents(ix)
            current = {s.segment_id(): s for s in toc.segments}
            if any(source.segment_id not in current for source in built.sources):
                return False
            for source in built.sources:
                segment = current[source.segment_id]
                later = (set(segment.deleted_docs()) if segment.has_deletions() else set()) - source.deleted
                for docnum in later:
                    built.segment.delete_document(source.newdocs[docnum])
            internals.move_segment_files(built.segment, built.folder, ix)
            gone = {source.segment_id for source in built.sources}
            segments = [s for s in toc.segments if s.segment_id() not in gone] + [built.segment]
            internals.write_table_of_contents(ix, toc, segments)
            return True
        finally:
            lock.release()
    finally:
        shutil.rmtree(built.folder, ignore_errors=True)


def _acquire(lock: Any) -> bool:
    """Whoosh's write lock, which a writer of this KB holds only under the KB lock we hold:
    a holder is a process that died; wait for the lock's own recovery a bounded time."""
    deadline = time.monotonic() + _LOCK_SECONDS
    while not lock.acquire(blocking=False):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _remove_abandoned(state_dir: Path) -> None:
    """Private folders of compactions whose process is gone (killed mid-merge)."""
    for folder in state_dir.glob(f"{_FOLDER_PREFIX}*"):
        pid = folder.name[len(_FOLDER_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    """Running: a zombie (killed, not yet reaped by its new parent) counts as gone."""
    if os.path.isdir("/proc/self"):
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
                return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
        except (OSError, IndexError):
            pass  # unreadable: ask the kernel
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
