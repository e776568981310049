"""``maintenance`` and ``reindex``: the derived state and the repository, on demand."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from ..core.text import counted, warning_lines
from .common import (
    Settings,
    emit,
    json_option,
    pass_settings,
)

if TYPE_CHECKING:
    from ..kb import KnowledgeBase


@click.command()
@json_option
@pass_settings
def maintenance(settings: Settings) -> None:
    """Compact the search index, pack the repository and trim the vector cache now.

    Saves never wait for this: each adds a small index segment, and git's loose objects are
    packed in the background every few commits. Run it to do all three at once, for example
    before measuring the repository's size or after a long agent session. It keeps the user's
    sentence-vector cache (shared by every KB) within SLAYER_KB_CACHE_MAX_MB megabytes (default
    2048), as the fillers do: vectors under keys this version no longer reads go first, then
    those of the texts used least recently. Only here are the file's free pages given back to
    the disk (--json: vector_cache, its bytes before and after, the bound, the rows and texts
    removed, and the problem when it could not be trimmed, a full disk or a file this user cannot
    write, or shrunk, a large file an earlier version made, which the text output prints as a
    warning with its fix).

    \b
    Example:
      slayer-kb maintenance
    """
    result = settings.kb().maintain()
    (seg_before, seg_after), (loose_before, loose_after) = result.segments, result.loose_objects
    (packs_before, packs_after), (bytes_before, bytes_after) = result.packs, result.pack_bytes
    cache = result.vector_cache
    removed = [*([f"{cache.unread_rows} vectors under keys no longer read"] if cache.unread_rows else []),
               *([f"the vectors of {cache.texts} texts used least recently"] if cache.texts else [])]
    emit(settings, result.to_json(), lambda: "\n".join([
        f"index segments: {seg_before} -> {seg_after}",
        f"loose objects: {loose_before} -> {loose_after}",
        f"packs: {packs_before} -> {packs_after} ({bytes_before / 1e6:.1f} MB -> {bytes_after / 1e6:.1f} MB)",
        f"vector cache: {cache.before / 1e6:.1f} MB -> {cache.after / 1e6:.1f} MB (at most {cache.limit / 1e6:.0f} MB"
        + (f"; removed {' and '.join(removed)})" if removed else ")") + warning_lines([cache.problem] if cache.problem else []),
    ]))


class _Bars:
    """Progress bars on stderr, one per stage, fed (done, total) as ``kb.reindex`` reports it:
    a stage's bar appears at its first report (none when it has nothing to do) and ends when the
    next stage's appears."""

    def __init__(self) -> None:
        self._bar: Any = None

    def stage(self, label: str) -> Callable[[int, int], None]:
        last = 0

        def progress(done: int, total: int) -> None:
            nonlocal last
            if last == 0 and (self._bar is None or self._bar.label != label):
                self.close()
                self._bar = click.progressbar(length=max(total, 1), label=label, file=sys.stderr)
                self._bar.__enter__()
            self._bar.update(done - last)
            last = done

        return progress

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def _fill_sentences(kb: KnowledgeBase, progress: Callable[[int, int], None] | None) -> None:
    """The sentence vectors the memories lack, made now (from the cache when it has them),
    unless a thread of this process makes them: the warm server's, whose status shows its
    progress. A detached filler the rebuild started shares the batches (search/filler.py)."""
    if kb.sentences_in_background:
        kb.fill_sentences(progress)


@click.command()
@json_option
@pass_settings
def reindex(settings: Settings) -> None:
    """Rebuild the search index from the files, and make the sentence vectors memories lack.

    It counts the memories it indexed as stats and list count them, and apart from them the
    soft-deleted ones it indexed too (kept for restore and get --deleted); --json: memories,
    soft_deleted, and indexed, every memory file read (unreadable ones too). With a progress
    bar for each on a terminal; sentence vectors made before on this machine come from the
    vector cache. A model file that is not the pinned one makes none: a warning says so, with
    the fix.

    \b
    Example:
      slayer-kb reindex
    """
    kb = settings.kb()
    if sys.stderr.isatty() and not settings.json:
        bars = _Bars()
        try:
            report = kb.reindex(bars.stage("Indexing"))
            _fill_sentences(kb, bars.stage("Sentence vectors"))
        finally:
            bars.close()
    else:
        report = kb.reindex()
        _fill_sentences(kb, None)
    problems = [str(p) for p in report.problems]
    warnings = [w for w in [kb.sentence_problem()] if w]
    data = {"indexed": report.updated, "memories": report.live, "soft_deleted": report.soft_deleted,
            "problems": problems, "warnings": warnings}
    kept = f" ({report.soft_deleted} soft-deleted kept for history)" if report.soft_deleted else ""
    emit(settings, data, lambda: f"Indexed {counted(report.live, 'memory', 'memories')}{kept}" + warning_lines(problems + warnings))
