"""A bulk sync that leaves its memories' vectors to the background filler (issue 29's first
command on a new clone): words and entities answer at once, the vectors arrive later, exactly
as an inline sync makes them, and a fill stopped half-way is finished by the next one, once."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import corpus
from slayer_kb import KnowledgeBase
from slayer_kb.search import filler
from slayer_kb.search.writing import BULK_THRESHOLD
from slayer_kb.store import state
from slayer_kb.store.state import STATE_DIR
from testing import CliRunner, cli_runner, eventually, git

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere

SIZE = BULK_THRESHOLD + 100  # a bulk write
WORDS = " ".join(sorted(corpus.DOMAIN_WORDS)[:2])


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> corpus.Corpus:
    return corpus.generate(tmp_path_factory.mktemp("corpus") / "kb", SIZE, 3)


def _clone(source: corpus.Corpus, folder: Path) -> Path:
    git(folder.parent, "clone", "-q", str(source.root), str(folder))
    return folder


def _tables(kb: KnowledgeBase) -> dict[str, list[tuple[Any, ...]]]:
    db = sqlite3.connect(kb.index.dir / "manifest.db")
    try:
        return {name: db.execute(f"SELECT * FROM {name} ORDER BY id").fetchall() for name in ("vectors", "tokens")}  # noqa: S608
    finally:
        db.close()


@pytest.fixture
def no_filler_starts(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fillers allowed, server off: the clone's sync defers its vectors."""
    monkeypatch.delenv("SLAYER_KB_NO_FILLER", raising=False)
    monkeypatch.setenv("SLAYER_KB_SERVER", "off")
    yield


def _held(root: Path) -> int:
    """The filler lock of ``root``, held by this test as another filler would hold it: no
    command starts one, and the test makes the vectors itself when it chooses."""
    state.make(root / STATE_DIR)  # as slayer-kb makes it: a folder made otherwise is set aside
    fd = filler.hold(root)
    assert fd is not None
    return fd


def _answer(kb: KnowledgeBase, *args: Any, **kwargs: Any) -> list[tuple[str, float]]:
    found = kb.search(*args, **kwargs)
    return [(m["id"], round(m["score"], 6)) for m in found.memories]


def test_words_and_entities_answer_before_the_vectors_which_then_match_an_inline_build(
    source: corpus.Corpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_filler_starts: None
) -> None:
    # The inline build: no filler may run, so the sync makes every vector itself.
    monkeypatch.setenv("SLAYER_KB_NO_FILLER", "1")
    inline = KnowledgeBase(_clone(source, tmp_path / "inline"))
    inline.ensure_fresh()
    expected = _tables(inline)
    assert len(expected["vectors"]) == SIZE and len(expected["tokens"]) == SIZE
    by_words = _answer(inline, WORDS)
    by_entity = _answer(inline, entities=[source.hot_model])
    inline.close()
    monkeypatch.delenv("SLAYER_KB_NO_FILLER")

    root = _clone(source, tmp_path / "deferred")
    fd = _held(root)
    try:
        kb = KnowledgeBase(root)
        kb.ensure_fresh()
        assert _tables(kb) == {"vectors": [], "tokens": []}  # nothing made yet
        assert kb.index.static_pending() == SIZE
        found = kb.search(WORDS)
        assert found.memories, "words answer at once"
        assert found.notes == [f"Sentence vectors cover 0 of {SIZE} memories, and {SIZE} have no vectors yet: those "
                               "are found by their words and entities until their vectors are made, in the background."]
        # An entity's memories are found by the entity index alone: the same answer as inline.
        assert _answer(kb, entities=[source.hot_model]) == by_entity
        # A warm process (the server) holds the table as it was: no vectors yet.
        warm = KnowledgeBase(root)
        warm.keep_warm()
        assert _answer(warm, WORDS) == _answer(kb, WORDS) != by_words

        # A fill stopped after its first batch (as a killed filler leaves it: each batch is one
        # transaction), then finished by another process's fill, once.
        batches = iter([False, True])
        first = kb.index.fill_static(stop=lambda: next(batches))
        assert 0 < first < SIZE
        assert kb.index.static_pending() == SIZE - first
        kb.close()
        later = KnowledgeBase(root)
        assert later.index.fill_static() == SIZE - first
        assert later.index.fill_static() == 0
        assert later.index.static_pending() == 0
        assert "pending" not in json.loads((later.index.dir / "manifest.json").read_text())
        assert _tables(later) == expected  # every row and token id as the inline sync made them
        assert _answer(later, WORDS) == by_words
        later.close()
        # The warm process takes in the rows the other made: its answer is the inline one too.
        assert _answer(warm, WORDS) == by_words
        warm.close()
    finally:
        os.close(fd)


@pytest.mark.slow  # a detached filler runs the model beside it
def test_the_first_command_answers_and_says_what_meaning_covers(
    source: corpus.Corpus, tmp_path: Path, no_filler_starts: None
) -> None:
    run: CliRunner = cli_runner()
    root = _clone(source, tmp_path / "clone")
    fd = _held(root)
    try:
        proc = run("--kb", root, "search", WORDS, "--json", check=True)
        answer = json.loads(proc.stdout)
        assert len(answer["memories"]) == 10
        assert answer["notes"][0].endswith(f"and {SIZE} have no vectors yet: those are found by their words and "
                                           "entities until their vectors are made, in the background.")
        entity = json.loads(run("--kb", root, "search", "-e", source.hot_model, "--json", check=True).stdout)
        assert entity["memories"] and all(source.hot_model in " ".join(m["entities"]) for m in entity["memories"])
    finally:
        os.close(fd)
    # The lock released, a later command starts the filler, which makes every row.
    kb = KnowledgeBase(root)
    try:
        run("--kb", root, "search", WORDS, "--json", check=True)
        eventually(lambda: kb.index.static_pending() == 0, "the filler made every memory's vectors")
        assert len(_tables(kb)["vectors"]) == SIZE
    finally:
        _end_filler(root)


def _end_filler(root: Path) -> None:
    """End the detached filler the command started for ``root``, by its id."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                args = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"slayer_kb.daemon.sentences" in args and str(root).encode() in args:
                os.kill(int(entry.name), 15)
