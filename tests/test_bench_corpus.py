"""The benchmark's corpus generator: deterministic, and every file it writes is a valid memory
whose references resolve in the catalog it generated."""

from __future__ import annotations

from pathlib import Path

from bench import corpus  # the repository root is on pytest's pythonpath
from slayer_kb.catalog.catalog import load_catalog
from slayer_kb.catalog.refs import query_entities
from slayer_kb.catalog.resolve import Resolver
from slayer_kb.core.ids import check_id
from slayer_kb.core.memory import loads

SIZE = 50


def _files(root: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((root / "memories").iterdir())}


def test_generator_is_deterministic_and_valid(tmp_path: Path) -> None:
    made = corpus.generate(tmp_path / "a", SIZE, seed=7)
    corpus.write_catalog(tmp_path / "b", corpus.generate_catalog(7))
    corpus.write_memories(tmp_path / "b", SIZE, seed=7, workers=1)
    files = _files(made.root)
    assert files == _files(tmp_path / "b")
    assert len(files) == SIZE
    assert corpus.git(made.root, "status", "--porcelain") == ""

    catalog = load_catalog(made.root)
    assert not catalog.problems
    resolver = Resolver(catalog, memory_exists=lambda i: f"{i}.yaml" in files, check_id=check_id)
    hot = 0
    for name, text in files.items():
        memory = loads(text, name[:-5])
        assert 20 <= len(memory.learning.split()) <= 400
        for entity in memory.entities:
            if entity.startswith("memory:"):
                assert f"{entity[7:]}.yaml" in files
            else:
                assert catalog.entity_exists(entity), entity
        if memory.query is not None:
            found, _ = query_entities(memory.query, resolver)
            assert set(found) <= set(memory.entities)
        hot += any(e == made.hot_model or e.startswith(made.hot_model + ".") for e in memory.entities)
    assert hot == made.hot_count == SIZE // corpus.HOT_EVERY


def test_other_seed_differs(tmp_path: Path) -> None:
    for seed in (1, 2):
        corpus.write_memories(tmp_path / str(seed), 5, seed=seed, workers=1)
    assert _files(tmp_path / "1") != _files(tmp_path / "2")


def test_the_corpus_becomes_basic_memory_notes(tmp_path: Path) -> None:
    """The side-by-side with basic-memory (bench/peer.py) gives it the same memories as notes."""
    from bench import peer
    from slayer_kb.core.memory import Memory, dumps

    (tmp_path / "kb" / "memories").mkdir(parents=True)
    for memory in (Memory(id="12", learning="Refunds are booked on the payout day.\n", created_at="2026-11-01T09:00:00Z"),
                   Memory(id="kb.x", learning="Use the warehouse.\n", created_at="2026-11-01T09:00:00Z", title="Where")):
        (tmp_path / "kb" / "memories" / f"{memory.id}.yaml").write_text(dumps(memory), encoding="utf-8")
    assert peer.notes_of(tmp_path / "kb", tmp_path / "notes") == 2
    assert (tmp_path / "notes" / "12.md").read_text(encoding="utf-8") == (
        "---\ntitle: memory 12\ntype: note\n---\n\nRefunds are booked on the payout day.\n")
    assert (tmp_path / "notes" / "kb.x.md").read_text(encoding="utf-8") == (
        "---\ntitle: memory kb.x\ntype: note\n---\n\nWhere\n\nUse the warehouse.\n")
