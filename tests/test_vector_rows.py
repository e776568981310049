"""A vectors row of the index's SQLite manifest that ``vectors.rows`` could not have written (a
scale of 1e308, NaN, a vector of the wrong length: a tampered or damaged manifest) is never
scored as it is: the search that meets it makes the memory's row again from its text, ranks as
before, warns of nothing, and writes the repaired row back (vectors.sound, meaning.py)."""

from __future__ import annotations

import sqlite3
import threading
import warnings
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import embedding, filler
from testing import eventually, json_of

pytestmark = pytest.mark.skipif(embedding.key() is None, reason="search by meaning is not installed")

QUESTION = "how is the fiscal year defined"


def manifest(kb: KnowledgeBase) -> sqlite3.Connection:
    return sqlite3.connect(kb.root / ".slayer-kb" / "index" / "manifest.db", isolation_level=None)


def rows(kb: KnowledgeBase, ids: list[str]) -> dict[str, tuple]:
    db = manifest(kb)
    try:
        return {r[0]: r[1:] for r in db.execute(
            f"SELECT id, vec, scale FROM vectors WHERE id IN ({', '.join('?' * len(ids))})", ids)}  # noqa: S608
    finally:
        db.close()


def tamper(kb: KnowledgeBase, ids: list[str]) -> None:
    """Three kinds of bad row: an overflowing scale, NaN (stored as NULL), a short vector."""
    db = manifest(kb)
    try:
        db.execute("UPDATE vectors SET scale = 1e308 WHERE id = ?", (ids[0],))
        db.execute("UPDATE vectors SET scale = ? WHERE id = ?", (float("nan"), ids[1]))
        db.execute("UPDATE vectors SET vec = x'0102' WHERE id = ?", (ids[2],))
    finally:
        db.close()


def test_a_tampered_row_is_rebuilt_by_the_search_that_meets_it(example_kb: KnowledgeBase, invoke_cli) -> None:  # noqa: ANN001
    root = example_kb.root
    before = invoke_cli("--kb", root, "search", QUESTION, "--json")
    assert before.returncode == 0, before.stderr
    ranked = [m["id"] for m in json_of(before)["memories"]]
    good = rows(example_kb, ranked[:3])
    tamper(example_kb, ranked[:3])
    assert rows(example_kb, ranked[:3]) != good
    after = invoke_cli("--kb", root, "search", QUESTION, "--json", env={"PYTHONWARNINGS": "error"})
    assert (after.returncode, after.stdout) == (0, before.stdout), after.stderr
    assert "Warning" not in after.stderr
    assert rows(example_kb, ranked[:3]) == good


def test_a_warm_process_loads_no_bad_row(example_kb: KnowledgeBase) -> None:
    """A process that holds the table (the server, MCP) checks each row as it loads them."""
    kb = KnowledgeBase(example_kb.root)
    kb.keep_warm()
    expected = [(m["id"], m["score"]) for m in kb.search(QUESTION).memories]
    ids = [memory_id for memory_id, _score in expected]
    good = rows(kb, ids[:3])
    warm = KnowledgeBase(Path(example_kb.root))
    warm.keep_warm()
    tamper(warm, ids[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = [(m["id"], m["score"]) for m in warm.search(QUESTION).memories]
    assert found == expected
    assert rows(kb, ids[:3]) == good


def every_row(kb: KnowledgeBase) -> dict[str, tuple]:
    db = manifest(kb)
    try:
        return {r[0]: r[1:] for r in db.execute("SELECT id, vec, scale, svec FROM vectors")}
    finally:
        db.close()


def test_a_command_with_search_by_meaning_off_leaves_the_vectors_to_the_next(indexed_example_kb: KnowledgeBase,
                                                                             invoke_cli) -> None:  # noqa: ANN001
    """SLAYER_KB_NO_MEANING turns search by meaning off for its process alone: a save under it
    neither drops the other memories' vectors from the index (every one of them was deleted, and
    the next command made them all again) nor makes its own memory's; the next command without
    it makes that one and answers as before (docs/search.md, "The meaning channel")."""
    kb, root = indexed_example_kb, indexed_example_kb.root
    before = json_of(invoke_cli("--kb", root, "search", QUESTION, "--json"))["memories"]
    kept = every_row(kb)
    saved = invoke_cli("--kb", root, "save", "Parcels that miss the courier's cut-off leave on Monday",
                       "--title", "Late parcels", "--json", env={"SLAYER_KB_NO_MEANING": "1"})
    new = json_of(saved)["memory_id"]
    assert every_row(kb) == {**kept, new: (None, None, None)}
    after = json_of(invoke_cli("--kb", root, "search", QUESTION, "--json"))["memories"]
    assert [hit["id"] for hit in after][:3] == [hit["id"] for hit in before][:3]
    made = every_row(kb)
    assert {m: row for m, row in made.items() if m != new} == kept
    assert made[new][0] is not None and made[new][1] is not None


def test_a_command_makes_the_vectors_left_while_a_filler_holds_its_batch(indexed_example_kb: KnowledgeBase,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The next command makes the static vectors a command with search by meaning off left
    without waiting for the filler's batch lock: a filler's pass holds it while it waits for the
    lock or turn that command holds, and the two waited for each other for good (a warm server
    wedged)."""
    kb, root = indexed_example_kb, indexed_example_kb.root
    monkeypatch.setenv("SLAYER_KB_NO_FILLER", "1")
    monkeypatch.setenv("SLAYER_KB_NO_MEANING", "1")
    left = KnowledgeBase(root).save_memory("Parcels that miss the courier's cut-off leave on Monday", ["shop.orders.amount"]).memory_id
    monkeypatch.delenv("SLAYER_KB_NO_MEANING")
    saved: list[str] = []
    with filler.batch(root):  # a filler's pass, between two chunks
        command = threading.Thread(target=lambda: saved.append(
            KnowledgeBase(root).save_memory("Returns are refunded within five days", ["shop.orders.amount"]).memory_id))
        command.start()
        eventually(lambda: saved, "the save while a filler holds its batch lock")
    command.join()
    made = every_row(kb)
    assert made[left][0] is not None and made[left][1] is not None
    assert made[saved[0]][0] is not None


class Killed(BaseException):
    """The process killed at that point (nothing after it runs)."""


def test_rows_left_without_vectors_stay_marked_when_the_command_is_killed(indexed_example_kb: KnowledgeBase,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The index state marks rows left without vectors before they are committed: a command with
    search by meaning off killed between the rows' commit and the state's write left them
    unmarked, and no later command made their vectors."""
    kb, root = indexed_example_kb, indexed_example_kb.root
    monkeypatch.setenv("SLAYER_KB_NO_FILLER", "1")
    monkeypatch.setenv("SLAYER_KB_NO_MEANING", "1")
    with monkeypatch.context() as kill:
        kill.setattr("slayer_kb.search.manifest.problems", lambda db: (_ for _ in ()).throw(Killed()))
        with pytest.raises(Killed):  # just after the rows' COMMIT
            KnowledgeBase(root).save_memory("Parcels that miss the courier's cut-off leave on Monday", ["shop.orders.amount"])
    monkeypatch.delenv("SLAYER_KB_NO_MEANING")
    left = {m for m, row in every_row(kb).items() if row[0] is None}
    assert len(left) == 1
    KnowledgeBase(root).search(QUESTION)
    assert all(every_row(kb)[m][0] is not None for m in left)
