"""Concurrent writers: several processes saving at once lose nothing and never share an auto id."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from testing import fsck, git

WRITER = """
import sys
from slayer_kb import KnowledgeBase
kb = KnowledgeBase(sys.argv[1])
for n in range(int(sys.argv[3])):
    kb.save_memory(f"writer {sys.argv[2]} note {n}", ["orders.amount"])
"""


def run_writers(root: Path, processes: int, saves: int) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(root), str(w), str(saves)], stderr=subprocess.PIPE, text=True
        )
        for w in range(processes)
    ]
    errors = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * processes, errors


def check_outcome(kb: KnowledgeBase, expected: int) -> None:
    ids = kb.memory_ids()
    assert len(ids) == expected
    assert sorted(ids, key=int) == [str(n) for n in range(1, expected + 1)]
    texts = {kb.read(i).learning for i in ids}
    assert len(texts) == expected
    assert git(kb.root, "status", "--porcelain") == ""
    assert fsck(kb.root).returncode == 0
    assert len(git(kb.root, "log", "--format=%s", "--grep=^memory: save").splitlines()) == expected
    assert kb.search(entities=["orders.amount"], limit=1000).memories.__len__() == expected


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_four_writers_share_nothing(catalog_kb: KnowledgeBase) -> None:
    run_writers(catalog_kb.root, 4, 5)
    check_outcome(catalog_kb, 20)


@pytest.mark.slow
def test_eight_processes_fifty_saves_each(catalog_kb: KnowledgeBase) -> None:
    run_writers(catalog_kb.root, 8, 50)
    check_outcome(catalog_kb, 400)
