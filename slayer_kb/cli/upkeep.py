"""``maintenance`` and ``reindex``: the derived state and the repository, on demand."""

from __future__ import annotations

import sys

import click

from ..core.text import warning_lines
from .common import (
    Settings,
    emit,
    json_option,
    pass_settings,
)


@click.command()
@json_option
@pass_settings
def maintenance(settings: Settings) -> None:
    """Compact the search index and pack the repository now.

    Saves never wait for this: each adds a small index segment, and git's loose objects are
    packed in the background every few commits. Run it to do both at once, for example before
    measuring the repository's size or after a long agent session.

    \b
    Example:
      slayer-kb maintenance
    """
    result = settings.kb().maintain()
    (seg_before, seg_after), (loose_before, loose_after) = result.segments, result.loose_objects
    (packs_before, packs_after), (bytes_before, bytes_after) = result.packs, result.pack_bytes
    emit(settings, result.to_json(), lambda: "\n".join([
        f"index segments: {seg_before} -> {seg_after}",
        f"loose objects: {loose_before} -> {loose_after}",
        f"packs: {packs_before} -> {packs_after} ({bytes_before / 1e6:.1f} MB -> {bytes_after / 1e6:.1f} MB)",
    ]))


@click.command()
@json_option
@pass_settings
def reindex(settings: Settings) -> None:
    """Rebuild the search index from the files (with a progress bar on a terminal).

    \b
    Example:
      slayer-kb reindex
    """
    kb = settings.kb()
    show = sys.stderr.isatty() and not settings.json
    if show:
        with click.progressbar(length=max(len(kb.index.ids()), 1), label="Indexing", file=sys.stderr) as bar:
            last = [0]

            def progress(done: int, _total: int) -> None:
                bar.update(done - last[0])
                last[0] = done

            report = kb.reindex(progress)
    else:
        report = kb.reindex()
    problems = [str(p) for p in report.problems]
    data = {"indexed": report.updated, "problems": problems}
    emit(settings, data, lambda: f"Indexed {report.updated} memories" + warning_lines(problems))
