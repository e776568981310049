"""The object store stays compact: every few commits a background repack packs the loose objects
slayer-kb's commits leave, unless the user turned git's automatic upkeep off."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import compaction, whoosh_internals
from slayer_kb.search.schema import CODEC
from slayer_kb.store import upkeep
from slayer_kb.store.repo import Change
from testing import commit_all, fsck, git


def loose(root: Path) -> int:
    return upkeep.loose_objects(root / ".git" / "objects")


def saves(kb: KnowledgeBase, count: int) -> None:
    for n in range(count):
        kb.save_observation(title=f"note {n}", content=f"upkeep note number {n}")


def commits(kb: KnowledgeBase, count: int) -> None:
    """``count`` commits of a new memory file each, by the store that commits every save (which
    counts them for upkeep), without a save's index work: for tests of git's side alone."""
    for n in range(count):
        with kb.store.locked():
            kb.store.commit([Change(f"memories/c{n}.yaml", f"learning: note {n}\n".encode())], f"memory: save c{n}")


def test_commits_are_packed_in_the_background(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    saves(kb, 3 * upkeep.EVERY)
    # Each save leaves four loose objects (blob, two trees, commit): well past the threshold, so
    # a repack starts every EVERY commits. A background job (a repack, an index compaction) still
    # at work when the count came due leaves it due, and the next commit starts one: on a loaded
    # machine the last 20-odd commits can be waiting for it.
    state = kb.root / ".slayer-kb"
    for n in range(upkeep.EVERY + 1):
        assert upkeep.wait(state, 60), "the background repack did not finish"
        if loose(kb.root) < upkeep.LOOSE:
            break
        kb.save_observation(title=f"one more {n}", content=f"commit {n} after the repack")
    assert upkeep.wait(state, 60), "the background repack did not finish"
    assert loose(kb.root) < upkeep.LOOSE
    packs = list((kb.root / ".git" / "objects" / "pack").glob("*.pack"))
    assert packs
    assert subprocess.run(["git", "fsck", "--connectivity-only"], cwd=kb.root, capture_output=True).returncode == 0
    assert KnowledgeBase(kb.root).get("1").to_dict()["learning"] == "upkeep note number 0"
    assert git(kb.root, "status", "--porcelain") == ""


def test_gc_auto_zero_turns_it_off(empty_kb: KnowledgeBase) -> None:
    kb = empty_kb
    git(kb.root, "config", "gc.auto", "0")
    packs = sorted((kb.root / ".git" / "objects" / "pack").glob("*.pack"))  # the new KB's, as cloned
    commits(kb, 2 * upkeep.EVERY)
    assert upkeep.wait(kb.root / ".slayer-kb", 60)  # a repack started after all would be done now
    assert loose(kb.root) >= 4 * 2 * upkeep.EVERY
    assert sorted((kb.root / ".git" / "objects" / "pack").glob("*.pack")) == packs


def segment_sizes(kb: KnowledgeBase) -> dict[str, int]:
    from whoosh import index as windex

    ix = windex.open_dir(str(kb.root / ".slayer-kb" / "index"))
    return {segment.segment_id(): segment.doc_count_all() for segment in whoosh_internals.segments(ix)}


def found(kb: KnowledgeBase, words: str) -> list[str]:
    return sorted(hit["id"] for hit in KnowledgeBase(kb.root).search(words, match="all", limit=1000).memories)


def test_saves_merge_small_segments_in_tiers_and_never_a_grown_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A save adds its segment; when MERGE_FACTOR segments of one size tier (of at most TINY
    documents) pile up, it folds those into its own. A segment past TINY stays as it is."""
    monkeypatch.setattr(compaction, "TINY", 4)
    monkeypatch.setattr(compaction, "MERGE_FACTOR", 2)  # tiers: 1 | 2 | 3-4 | grown
    monkeypatch.setattr(compaction, "COMPACT_AT", 100)
    kb = KnowledgeBase.init(tmp_path / "kb")
    for n in range(5):
        (kb.root / "memories" / f"seed-{n}.yaml").write_text(
            f"learning: seed steady {n}\ncreated_at: '2026-01-01T00:00:00Z'\n", encoding="utf-8")
    commit_all(kb.root, "five memories by hand")
    assert found(kb, "steady") == [f"seed-{n}" for n in range(5)]  # indexed as one segment
    grown = set(segment_sizes(kb))
    assert list(segment_sizes(kb).values()) == [5]
    history = []
    for n in range(12):
        kb.save_memory(f"steady save {n}", ["memory:seed-0"])
        sizes = segment_sizes(kb)
        assert grown <= set(sizes)
        history.append(sorted(size for sid, size in sizes.items() if sid not in grown))
    assert history == [
        [1], [1, 1], [3],  # two of tier 0 and the save's own memory: 3 documents
        [1, 3], [1, 1, 3], [3, 3],
        [7],  # two of tier 2 (3 documents each): 7, grown
        [1, 7], [1, 1, 7], [3, 7], [1, 3, 7], [1, 1, 3, 7],
    ]
    assert found(kb, "steady") == sorted([*(f"seed-{n}" for n in range(5)), *(str(n) for n in range(1, 13))])


def test_maintenance_compacts_the_index_and_packs_the_repository(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")  # no background repack: the command's own work shows
    saves(kb, 12)
    before = found(kb, "upkeep note")
    objects = loose(kb.root)
    segments = len(segment_sizes(kb))
    assert segments > 1 and objects >= 4 * 12
    proc = invoke_cli("--kb", kb.root, "maintenance")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[:2] == [f"index segments: {segments} -> 1", f"loose objects: {objects} -> 0"]
    assert lines[2].startswith("packs: 0 -> 1 (0.0 MB -> ")
    assert lines[3:] == ["vector cache: 0.0 MB -> 0.0 MB (at most 2048 MB)"]  # the encoder is off: no cache
    assert found(kb, "upkeep note") == before and len(before) == 12
    assert segment_sizes(kb) and list(segment_sizes(kb).values()) == [12]
    assert fsck(kb.root).returncode == 0
    again = json.loads(invoke_cli("--kb", kb.root, "maintenance", "--json", check=True).stdout)
    assert again["segments"] == {"before": 1, "after": 1} and again["loose_objects"] == {"before": 0, "after": 0}


def whole_memories_trees(root: Path, larger_than: int) -> int:
    """How many of the memories/ trees of the branch's commits larger than ``larger_than`` bytes
    the packs store whole, not as a delta of another."""
    trees = set(git(root, "log", "--format=%T", "HEAD").split())
    memories = set(git(root, "rev-parse", *(f"{tree}:memories" for tree in trees)).split())  # one process
    whole = 0
    for index in (root / ".git" / "objects" / "pack").glob("*.idx"):
        for line in git(root, "verify-pack", "-v", str(index)).splitlines():
            fields = line.split()
            # "<oid> tree <size> <size in pack> <offset>": five fields; a delta adds depth and base
            whole += len(fields) == 5 and fields[1] == "tree" and fields[0] in memories and int(fields[2]) > larger_than
    return whole


def test_a_repack_stores_one_whole_memories_tree_and_deltas_of_it(empty_kb: KnowledgeBase) -> None:
    """Successive saves' memories/ trees differ by an entry: packed, one is stored whole and the
    others as deltas. Git's threaded delta search starts each thread's share with a whole object;
    at 10,000 memories that was three or four whole trees a pack, 16 KB a save instead of 9."""
    kb = empty_kb
    git(kb.root, "config", "gc.auto", "0")  # only the repack below
    for n in range(1500):  # a tree of 1,500 entries, 63 KB
        (kb.root / "memories" / f"hand-{n:04d}.yaml").write_text(
            f"learning: hand note {n}\ncreated_at: '2026-01-01T00:00:00Z'\n", encoding="utf-8")
    commit_all(kb.root, "many notes")
    commits(kb, 40)  # no index of 1,500 memories built
    upkeep.repack(kb.root)
    assert loose(kb.root) == 0
    assert whole_memories_trees(kb.root, larger_than=50_000) == 1  # of the 41 trees since "many notes"
    # Two threads give two or more only when git splits the work (not on one core, not always):
    # the commands themselves must ask for one.
    assert "--threads=1" in upkeep.REPACK and "pack.threads=1" in upkeep.GC
    assert fsck(kb.root).returncode == 0


def hand_batches(kb: KnowledgeBase, batches: int, size: int) -> None:
    """``batches`` commits of ``size`` memory files made by hand, each indexed as one segment."""
    for batch in range(batches):
        for n in range(size):
            (kb.root / "memories" / f"hand-{batch}-{n}.yaml").write_text(
                f"learning: hand batch {batch} note {n}\ncreated_at: '2026-01-01T00:00:00Z'\n", encoding="utf-8")
        commit_all(kb.root, f"batch {batch}")
        kb.ensure_fresh()


def test_grown_segments_are_compacted_in_the_background(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    size = compaction.TINY + 4
    hand_batches(kb, compaction.COMPACT_AT, size)
    assert sorted(segment_sizes(kb).values()) == [size] * compaction.COMPACT_AT
    saves(kb, 1)  # finds the grown segments and starts the compaction
    assert upkeep.wait(kb.root / ".slayer-kb", 60)
    assert sorted(segment_sizes(kb).values()) == [1, size * compaction.COMPACT_AT]
    assert len(found(kb, "hand batch")) == size * compaction.COMPACT_AT
    assert not list((kb.root / ".slayer-kb").glob("merging-*"))


def test_writes_made_while_a_compaction_merges_are_kept(tmp_path: Path) -> None:
    """The merge runs without the lock: what writers delete from its segments meanwhile stays
    deleted, what they add stays, and searches answer as a fresh process does."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    hand_batches(kb, 3, 5)
    built = kb.index.build_compaction(everything=True)
    assert built is not None
    kb.forget("hand-1-2")
    kb.update("hand-0-0", learning="hand batch rewritten note")
    saved = kb.save_memory("hand batch added while merging", ["memory:hand-2-0"]).memory_id
    with kb.store.locked():
        assert kb.index.publish_compaction(built)
    expected = sorted({f"hand-{b}-{n}" for b in range(3) for n in range(5)} - {"hand-1-2"} | {saved})
    assert found(kb, "hand batch") == expected
    assert kb.search("hand batch note", limit=50).to_json() == KnowledgeBase(kb.root).search("hand batch note", limit=50).to_json()
    assert 15 in segment_sizes(kb).values()  # the merged one: 15 read, 2 deleted since
    kb.reindex()
    assert found(kb, "hand batch") == expected
    assert not list((kb.root / ".slayer-kb").glob("merging-*"))


def test_a_compaction_overtaken_by_a_reindex_changes_nothing(tmp_path: Path) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    hand_batches(kb, 2, 3)
    built = kb.index.build_compaction(everything=True)
    assert built is not None
    kb.reindex()
    before = segment_sizes(kb)
    with kb.store.locked():
        assert not kb.index.publish_compaction(built)
    assert segment_sizes(kb) == before
    assert len(found(kb, "hand batch")) == 6
    assert not built.folder.exists()


# A stress run (-m slow): the default run's background repacks race saves too
# (test_commits_are_packed_in_the_background), and a repack killed mid-way loses nothing below.
@pytest.mark.slow
def test_commits_racing_a_repack_lose_nothing(tmp_path: Path) -> None:
    """git repack runs in another process, again and again, while slayer-kb commits."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    loop = subprocess.Popen(
        ["sh", "-c", "while :; do git repack -d -q --geometric=2; git gc --auto --quiet; done"],
        cwd=kb.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        saves(kb, 30)
    finally:
        os.killpg(loop.pid, signal.SIGTERM)
        loop.wait(timeout=60)
    assert fsck(kb.root).returncode == 0
    assert git(kb.root, "rev-list", "--count", "HEAD").strip() == str(30 + 1)
    assert found(kb, "upkeep note") == sorted(str(n) for n in range(1, 31))
    assert git(kb.root, "status", "--porcelain") == ""


def slow_but(default: float, *delays: float) -> list[object]:
    """A kill's moments: one in the default run, the others with -m slow (fault injection; each
    a new KB, its saves and a repack or compaction, for the same code at another moment)."""
    return [pytest.param(delay, marks=() if delay == default else pytest.mark.slow) for delay in delays]


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
@pytest.mark.parametrize("delay", slow_but(0.05, 0.0, 0.05, 0.2))
def test_a_killed_upkeep_loses_nothing(tmp_path: Path, delay: float) -> None:
    kb = KnowledgeBase.init(tmp_path / "kb")
    git(kb.root, "config", "gc.auto", "0")
    saves(kb, 10)
    state = kb.root / ".slayer-kb"
    upkeep.start(kb.root, state)
    pid = int((state / upkeep.PID).read_text())
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)  # the repack and its git children
    assert upkeep.wait(state, 60)
    assert fsck(kb.root).returncode == 0
    kb = KnowledgeBase(kb.root)
    kb.save_observation(title="after", content="saved after the kill")
    assert found(kb, "upkeep note") == sorted(str(n) for n in range(1, 11))
    assert kb.get("11").to_dict()["learning"] == "saved after the kill"
    assert fsck(kb.root).returncode == 0


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
@pytest.mark.parametrize("delay", slow_but(0.3, 0.1, 0.3, 0.6, 1.0))
def test_a_compaction_killed_at_any_moment_loses_nothing(tmp_path: Path, delay: float) -> None:
    """SIGKILL while the job imports, builds its segment, or swaps it in: the index answers as
    before, the next compaction clears the private folder left behind, and saves go on."""
    kb = KnowledgeBase.init(tmp_path / "kb")
    hand_batches(kb, 6, 30)
    before = found(kb, "hand batch")
    script = "import sys; from slayer_kb.kb import KnowledgeBase; KnowledgeBase(sys.argv[1]).compact_index(everything=True)"
    kb.store.start_upkeep([[sys.executable, "-c", script, str(kb.root)]])
    state = kb.root / ".slayer-kb"
    pid = int((state / upkeep.PID).read_text())
    time.sleep(delay)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    assert upkeep.wait(state, 60)
    kb = KnowledgeBase(kb.root)
    assert found(kb, "hand batch") == before
    saved = kb.save_memory("hand batch after the kill", ["memory:hand-0-0"]).memory_id
    # Where the kill came before the swap, the save starts a compaction of its own: let it end,
    # or the one below may find its segments replaced and (rightly) drop its work.
    assert upkeep.wait(state, 60)
    kb.compact_index(everything=True)
    assert found(kb, "hand batch") == sorted([*before, saved])
    assert len(segment_sizes(kb)) == 1
    assert not list(state.glob("merging-*"))


def test_a_compaction_whose_segments_another_replaced_builds_nothing(tmp_path: Path) -> None:
    """Two compactions (the background one and `maintenance`) may choose the same segments; the
    one that comes second finds their files gone, and drops its work without a trace."""
    from whoosh import index as windex

    kb = KnowledgeBase.init(tmp_path / "kb")
    hand_batches(kb, 3, 5)
    ix = windex.open_dir(str(kb.root / ".slayer-kb" / "index"))
    stale = whoosh_internals.segments(ix)
    kb.compact_index(everything=True)  # the other compaction: merges and deletes their files
    assert compaction.build(ix, stale, kb.root / ".slayer-kb", CODEC) is None
    assert not list((kb.root / ".slayer-kb").glob("merging-*"))
    assert len(found(kb, "hand batch")) == 15
