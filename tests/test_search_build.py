"""The build of the sentence vectors on two cores (issue 29): two model runs at once, each on a
batch of its own (``encoder.encode``'s workers), making the same vectors bit for bit as one run
at a time, with the build's progress reported a batch at a time as before."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import encoder, sentences
from testing.encoding import loaded_encoder

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere

# Ten memories of several sentences, 100-300 word pieces each, and one longer than a run of the
# model reads at once (its passages): every batch of the build has several model runs to share.
_SENTENCES = [
    "The nightly export to the warehouse runs at two and takes forty minutes on a quiet night.",
    "When the ledger service is redeployed during the export, the connection pool is drained and the job stalls.",
    "We now pause deployments of the ledger between two and three, and the export retries a stalled batch once.",
    "A stalled batch is logged with its offset so that the next run resumes where it stopped.",
    "The retry budget is shared with the reconciliation job, which also reads the ledger at night.",
    "Finance asked for the export to finish before six so that the morning reports are complete.",
    "The warehouse rejects rows whose currency code is not in its reference table; those go to a quarantine table.",
    "Quarantined rows are reviewed each Monday by whoever is on call for the data platform.",
]
NOTES = [(f"Export note {n}", " ".join((_SENTENCES[n:] + _SENTENCES[:n])[: 4 + n % 5])) for n in range(9)]
NOTES.append(("The export runbook, end to end", " ".join(_SENTENCES * 3)))


class Meeting:
    """The model's real session, wrapped to count the runs made at once (``most``). With
    ``meet``, the first two runs each wait until the other has begun: a build that never makes
    two runs at once fails here after a minute, rather than passing by the luck of timing."""

    def __init__(self, session: Any, meet: bool) -> None:
        self._session = session
        self._meet = threading.Barrier(2, timeout=60) if meet else None
        self._lock = threading.Lock()
        self._runs = 0
        self._inside = 0
        self.most = 0
        self.priorities: set[int] = set()  # the niceness of each thread that ran it

    def run(self, *args: Any) -> Any:
        with self._lock:
            self._runs += 1
            self._inside += 1
            self.most = max(self.most, self._inside)
            self.priorities.add(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            waits = self._meet is not None and self._runs <= 2
        try:
            if waits:
                self._meet.wait()  # type: ignore[union-attr]
            return self._session.run(*args)
        finally:
            with self._lock:
                self._inside -= 1


@dataclass
class Built:
    manifest: list[tuple[str, str, bytes]]  # (id, text hash, sentence vector)
    cache: list[tuple[str, str, bytes]]  # (model key, text hash, vector)
    progress: list[tuple[int, int]]
    most_runs_at_once: int


def _build(root: Path, cache: Path, workers: int, monkeypatch: pytest.MonkeyPatch) -> Built:
    """Every sentence vector of the KB at ``root`` made afresh into an empty ``cache``."""
    monkeypatch.setenv("SLAYER_KB_CACHE", str(cache))
    kb = KnowledgeBase(root)
    kb.index.background_vectors = False  # this process makes them
    try:
        kb.reindex()  # the rows find no vector in the empty cache
        assert kb.sentence_coverage() == (0, len(NOTES))
        model = loaded_encoder()
        real = model._session
        model._session = session = Meeting(real, meet=workers > 1)
        progress: list[tuple[int, int]] = []
        try:
            made = kb.index.fill_sentences(lambda done, total: progress.append((done, total)), batch=4, workers=workers)
        finally:
            model._session = real
        assert made == len(NOTES)
        with contextlib.closing(sqlite3.connect(kb.index.dir / "manifest.db")) as db:
            manifest = db.execute("SELECT id, hash, svec FROM vectors ORDER BY id").fetchall()
        with contextlib.closing(sqlite3.connect(cache / sentences.FILE)) as db:
            cached = db.execute("SELECT model, hash, vec FROM sentences ORDER BY model, hash").fetchall()
        return Built(manifest, cached, progress, session.most)
    finally:
        kb.close()


def test_two_workers_make_the_same_vectors_as_one_bit_for_bit(empty_kb: KnowledgeBase, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    empty_kb.index.background_vectors = False
    for title, learning in NOTES:
        empty_kb.save_observation(title=title, content=learning, project="ops")
    root = empty_kb.root
    empty_kb.close()
    one = _build(root, tmp_path / "cache-one", 1, monkeypatch)
    two = _build(root, tmp_path / "cache-two", 2, monkeypatch)

    assert (one.most_runs_at_once, two.most_runs_at_once) == (1, 2)
    assert two.manifest == one.manifest
    assert [svec is not None for _id, _hash, svec in one.manifest] == [True] * len(NOTES)
    assert two.cache == one.cache
    texts = [f"{title}\n{learning}" for title, learning in NOTES]
    keys = {(model, digest) for model, digest, _vec in one.cache}
    # Each memory's whole vector under both keys (MODEL_KEY: its units are made), and its units.
    assert keys == {(key, sentences.text_hash(t)) for t in texts for key in (encoder.WHOLE_KEY, encoder.MODEL_KEY, encoder.UNITS_KEY)}
    # A batch is four memories for each worker: the progress moves as many at a time.
    assert one.progress == [(4, 10), (8, 10), (10, 10)]
    assert two.progress == [(8, 10), (10, 10)]


def test_the_build_takes_at_most_one_worker_a_core(monkeypatch: pytest.MonkeyPatch) -> None:
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(encoder, "BUILD_WORKERS", cores + 3)
    assert encoder.build_workers() == cores
    monkeypatch.setattr(encoder, "BUILD_WORKERS", 1)
    assert encoder.build_workers() == 1


def test_the_second_worker_runs_at_the_builders_priority() -> None:
    """A niced builder (the detached filler) has a niced second worker: the worker's thread is
    made by the builder's for each batch, and a Linux thread starts at its maker's priority."""
    model = loaded_encoder()
    real = model._session
    model._session = session = Meeting(real, meet=True)
    chosen: list[int] = []
    failed: list[BaseException] = []

    def build() -> None:
        me = threading.get_native_id()
        chosen.append(min(os.getpriority(os.PRIO_PROCESS, me) + 5, 19))
        os.setpriority(os.PRIO_PROCESS, me, chosen[0])  # this thread only, gone with it
        try:
            model.encode([f"Note {n} on the nightly export" for n in range(40)], workers=2)  # two runs: 32 and 8
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread below
            failed.append(exc)

    builder = threading.Thread(target=build)
    try:
        builder.start()
        builder.join(120)
    finally:
        model._session = real
    assert not builder.is_alive() and not failed, failed
    assert chosen[0] > os.getpriority(os.PRIO_PROCESS, threading.get_native_id())  # nicer than this thread
    assert session.most == 2
    assert session.priorities == {chosen[0]}
