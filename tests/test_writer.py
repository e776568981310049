"""What a warm process takes in of a write another process made for it (daemon/writer.py,
``Context.write_elsewhere`` and ``Context.took_in``; docs/server.md, "The write process"), with
two real ``KnowledgeBase`` objects on one KB: the server's, warm, and the write process's.

The server-level behaviour (the write process's priority, its restart after a kill, no orphan
after ``server stop``, a command settled when it dies) is in test_priority.py, test_exactly_once.py
and test_server.py; reads beside a held write in test_beside.py."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import reading
from slayer_kb.search.leaves import Leaves


def _warm(root: Path) -> KnowledgeBase:
    kb = KnowledgeBase(root)
    kb.keep_warm()
    kb.ensure_fresh()  # as the server's first sync, before it warms up
    kb.warm_up()
    return kb


def _row(kb: KnowledgeBase, memory_id: str) -> np.ndarray:
    table = kb.index.meaning()
    return np.asarray(table.matrix[table.ids.index(memory_id)])


def test_a_write_elsewhere_is_taken_in_without_loading_the_vectors_again(example_kb: KnowledgeBase) -> None:
    server = _warm(example_kb.root)
    writer = KnowledgeBase(example_kb.root)
    table = server.index.meaning()
    before = server.index_written([]).key
    assert "27" not in table.ids

    server.write_elsewhere(frozenset({"memories/27.yaml"}))
    saved = writer.save_memory("Refunds post a day after the order", ["shop.orders.amount"])
    assert saved.memory_id == "27"
    written = writer.index_written(["27"])
    assert written.key != before and set(written.indexed) == {"27"}
    # While the write is not taken in, reads use the table they had, though the index changed.
    assert server.index.meaning() is table and "27" not in table.ids
    assert server.store.view.writing == frozenset({"memories/27.yaml"})

    server.took_in(before, written.key, written.indexed)
    assert server.store.view.writing == frozenset()
    assert server.index.meaning() is table  # its row applied, not the table loaded again
    assert server.index_written([]).key == written.key
    fresh = _warm(example_kb.root)  # the table as a server started now loads it
    assert np.array_equal(_row(server, "27"), _row(fresh, "27"))
    assert server.as_indexed({"27"})  # the watcher's events for it take no turn
    assert [h["id"] for h in server.search("refunds post a day after the order", limit=1).memories] == ["27"]


def test_the_first_search_after_a_write_elsewhere_reopens_nothing(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Taking the write in reopens the searcher and makes the filters' docsets of its new
    segment: the search after it does no refresh work, as the search after it a warm one."""
    server = _warm(example_kb.root)
    writer = KnowledgeBase(example_kb.root)
    server.search("refunds")  # the filters a search uses (the catalog's, the deleted left out)
    before = server.index_written([]).key
    server.write_elsewhere(frozenset({"memories/27.yaml"}))
    writer.save_memory("Refunds post a day after the order", ["shop.orders.amount"])
    written = writer.index_written(["27"])
    server.took_in(before, written.key, written.indexed)

    refreshed: list[str] = []
    reuse, docset = reading.reader_reusing, Leaves.docset
    monkeypatch.setattr(reading, "reader_reusing", lambda *a: (refreshed.append("searcher reopened"), reuse(*a))[1])
    monkeypatch.setattr(Leaves, "docset", lambda *a: (refreshed.append("docset made"), docset(*a))[1])
    assert [h["id"] for h in server.search("refunds post a day after the order", limit=1).memories] == ["27"]
    assert refreshed == []


def test_a_table_older_than_the_write_is_loaded_again(example_kb: KnowledgeBase) -> None:
    server = _warm(example_kb.root)
    writer = KnowledgeBase(example_kb.root)
    table = server.index.meaning()
    writer.save_memory("A change the server never took in", ["shop.orders.amount"])  # 27
    before = writer.index_written([]).key
    server.write_elsewhere(frozenset({"memories/28.yaml"}))
    writer.save_memory("Chargebacks are netted daily", ["shop.orders.amount"])  # 28
    written = writer.index_written(["28"])
    server.took_in(before, written.key, written.indexed)
    again = server.index.meaning()
    assert again is not table and {"27", "28"} <= set(again.ids)


def test_a_file_edited_by_hand_before_the_write_is_taken_in_is_indexed_again(example_kb: KnowledgeBase) -> None:
    server = _warm(example_kb.root)
    writer = KnowledgeBase(example_kb.root)
    before = server.index_written([]).key
    server.write_elsewhere(frozenset({"memories/27.yaml"}))
    writer.save_memory("Refunds post a day after the order", ["shop.orders.amount"])
    written = writer.index_written(["27"])
    # Edited by hand after the write process indexed it, before its server took the write in:
    # the edit's event is queued with the write's own, which the server drops as its own.
    path = example_kb.root / "memories" / "27.yaml"
    path.write_text(path.read_text().replace("Refunds post a day after the order", "Quokkas audit refunds"))
    server.took_in(before, written.key, written.indexed)
    assert not server.as_indexed({"27"})
    assert not server.ready_beside()  # a read waits for its turn, and brings the index up to date
    assert server.ensure_fresh() is not None
    assert [h["id"] for h in server.search("quokkas audit refunds", limit=1).memories] == ["27"]


def test_a_write_elsewhere_with_search_by_meaning_off_is_taken_in(example_kb: KnowledgeBase,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A client with SLAYER_KB_NO_MEANING has the write process leave its row without vectors
    (docs/search.md, "The meaning channel"): the server takes the write in all the same (it
    raised, skipping the rest of ``took_in``), its table loaded again with the row pending."""
    server = _warm(example_kb.root)
    writer = KnowledgeBase(example_kb.root)
    server.index.meaning()
    before = server.index_written([]).key
    server.write_elsewhere(frozenset({"memories/27.yaml"}))
    monkeypatch.setenv("SLAYER_KB_NO_MEANING", "1")  # the client's environment, as the write process runs it
    saved = writer.save_memory("Refunds post a day after the order", ["shop.orders.amount"])
    written = writer.index_written([saved.memory_id])
    monkeypatch.delenv("SLAYER_KB_NO_MEANING")

    server.took_in(before, written.key, written.indexed)
    assert server.store.view.writing == frozenset()
    assert server.as_indexed({"27"})
    assert server.held_coverage() is None  # the server's filler gets a pass, which makes them (background.py)
    table = server.index.meaning()
    assert "27" not in table.ids and table.pending == 1
    assert "27" in [h["id"] for h in server.search("refunds post a day after the order").memories]  # by its words


@pytest.mark.slow  # a write process opening the KB: seconds of CPU
def test_a_write_process_whose_server_is_gone_before_it_is_ready_exits_quietly(
        example_kb_read_only: KnowledgeBase) -> None:
    # A server killed while its write process was starting left that process's traceback
    # (BrokenPipeError) in the server's log, where a user looking into the kill reads it.
    ours, theirs = socket.socketpair()
    with theirs:
        ours.close()  # the server is gone
        done = subprocess.run([sys.executable, "-m", "slayer_kb.daemon.writer", str(example_kb_read_only.root),
                               str(theirs.fileno())], pass_fds=[theirs.fileno()], capture_output=True, text=True,
                              timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
