"""The index is never stale, without any watcher: whatever changes the files behind the tool's
back (an editor, a rename, ``git checkout``, a catalog edit, a damaged index), the next search
sees exactly the files as they are."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import MemoryFileError
from slayer_kb.search import whoosh_internals
from slayer_kb.search.schema import FORMAT
from slayer_kb.store.listing import Sig
from testing import CliRunner, commit_all, git, json_of

CREATED = "created_at: '2026-11-01T10:00:00Z'\n"


def memory_text(learning: str) -> str:
    return f"learning: |\n  {learning}\n{CREATED}"


def write_memory(root: Path, memory_id: str, learning: str) -> Path:
    path = root / "memories" / f"{memory_id}.yaml"
    path.write_text(memory_text(learning), encoding="utf-8")
    return path


def hit_ids(kb: KnowledgeBase, question: str) -> set[str]:
    result = kb.search(question)
    return {hit["id"] for hit in result.memories + result.example_queries}


def entity_hits(kb: KnowledgeBase, question: str | None = None, entities: list[str] | None = None) -> list[str]:
    return [e["entity"] for e in kb.search(question, entities).entities]


def index_dir(kb: KnowledgeBase) -> Path:
    return kb.root / ".slayer-kb" / "index"


# -- memory files changed behind the tool's back ------------------------------------------------


def test_hand_edit_is_seen_by_the_next_search(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    kb = example_kb
    assert hit_ids(kb, "quokkafresh") == set()
    original = (kb.root / "memories" / "2.yaml").read_text(encoding="utf-8")
    edited = original.replace("Time zones:", "Time zones quokkafresh:")
    assert edited != original
    (kb.root / "memories" / "2.yaml").write_text(edited, encoding="utf-8")

    assert hit_ids(kb, "quokkafresh") == {"2"}
    proc = invoke_cli("--kb", kb.root, "search", "quokkafresh", "--json", check=True)
    data = json_of(proc)
    assert [h["id"] for h in data["memories"] + data["example_queries"]] == ["2"]


def test_new_file_is_found(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    kb = example_kb
    assert hit_ids(kb, "wombatnew") == set()
    write_memory(kb.root, "kb.fresh-note", "The wombatnew rule applies to every order.")
    assert hit_ids(kb, "wombatnew") == {"kb.fresh-note"}
    data = json_of(invoke_cli("--kb", kb.root, "search", "wombatnew", "--json", check=True))
    assert [h["id"] for h in data["memories"]] == ["kb.fresh-note"]


def test_deleted_file_disappears(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    kb = example_kb
    write_memory(kb.root, "kb.doomed", "A numbatgone note that will be deleted.")
    assert hit_ids(kb, "numbatgone") == {"kb.doomed"}
    before = hit_ids(kb, "refunds")
    assert "kb.refund-policy" in before

    (kb.root / "memories" / "kb.doomed.yaml").unlink()
    (kb.root / "memories" / "kb.refund-policy.yaml").unlink()

    assert hit_ids(kb, "numbatgone") == set()
    assert hit_ids(kb, "refunds") == before - {"kb.refund-policy"}
    data = json_of(invoke_cli("--kb", kb.root, "search", "refunds", "--json", check=True))
    assert {h["id"] for h in data["memories"] + data["example_queries"]} == before - {"kb.refund-policy"}
    # a delete only drops the memory from the index: no file is written back
    assert not (kb.root / "memories" / "kb.doomed.yaml").exists()


def test_save_through_temp_file_and_replace(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    path = kb.root / "memories" / "3.yaml"
    old_text = path.read_text(encoding="utf-8")
    assert hit_ids(kb, "platypusswap") == set()
    tmp = kb.root / "memories" / ".3.yaml.tmp"
    tmp.write_text(memory_text("Replaced through a platypusswap temp file."), encoding="utf-8")
    os.replace(tmp, path)

    assert hit_ids(kb, "platypusswap") == {"3"}
    # the old learning is gone from the index: its first distinctive word no longer finds 3
    old_word = next(w for w in old_text.split() if w.isalpha() and len(w) > 8)
    assert "3" not in hit_ids(kb, old_word)


def test_vim_style_save_with_backup(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    mem = kb.root / "memories"
    assert "4" in hit_ids(kb, "pence")
    assert hit_ids(kb, "echidnavim") == set()
    # vim: swap file, probe file 4913, rename original away to x~, write new x, delete backup
    (mem / ".4.yaml.swp").write_bytes(b"\0swap")
    (mem / "4913").write_text("")
    (mem / "4913").unlink()
    os.rename(mem / "4.yaml", mem / "4.yaml~")
    # between the rename-away and the new write, memory 4 does not exist: the backup is no memory
    assert "4" not in hit_ids(kb, "pence")
    (mem / "4.yaml").write_text(memory_text("Saved by vim: echidnavim."), encoding="utf-8")
    (mem / "4.yaml~").unlink()
    assert hit_ids(kb, "echidnavim") == {"4"}
    assert "4" not in hit_ids(kb, "pence")
    (mem / ".4.yaml.swp").unlink()
    assert hit_ids(kb, "echidnavim") == {"4"}


def rewrite_keeping_signature(kb: KnowledgeBase) -> tuple[Path, os.stat_result]:
    """Index memory kb.racy ("alphaword"), then rewrite it in place (same inode), same length,
    forcing the very same mtime ("bravoword"): the signature is identical, as it is for two
    saves within one timestamp tick of a coarse file system. Returns the path and its first stat."""
    path = write_memory(kb.root, "kb.racy", "alphaword marks version one")
    assert hit_ids(kb, "alphaword") == {"kb.racy"}
    st = path.stat()
    with path.open("r+", encoding="utf-8") as f:
        f.write(memory_text("bravoword marks version two"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    return path, st


def test_racy_rewrite_beside_an_in_place_edit_is_seen_too(example_kb: KnowledgeBase) -> None:
    """Only files edited in place changed, so only those are re-read: the young files with them,
    since one of them may have changed without changing its signature."""
    kb = example_kb
    rewrite_keeping_signature(kb)
    other = kb.root / "memories" / "2.yaml"
    other.write_text(other.read_text(encoding="utf-8").replace("Time zones:", "Time zones lemurracy:"), encoding="utf-8")

    assert kb.index.stale_files() == ["2", "kb.racy"]
    assert hit_ids(kb, "bravoword") == {"kb.racy"}
    assert hit_ids(kb, "lemurracy") == {"2"}
    assert hit_ids(kb, "alphaword") == set()


def test_same_size_rewrite_within_the_timestamp_granularity(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    path, st = rewrite_keeping_signature(kb)
    after = path.stat()
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (st.st_mtime_ns, st.st_size, st.st_ino)

    assert hit_ids(kb, "bravoword") == {"kb.racy"}
    assert hit_ids(kb, "alphaword") == set()


def test_same_size_rewrite_done_immediately(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    path = write_memory(kb.root, "kb.quick", "charlieword first")
    assert hit_ids(kb, "charlieword") == {"kb.quick"}
    write_memory(kb.root, "kb.quick", "deltawordxx first")
    assert path.stat().st_size == len(memory_text("charlieword first"))
    assert hit_ids(kb, "deltawordxx") == {"kb.quick"}
    assert hit_ids(kb, "charlieword") == set()


def test_broken_file_is_skipped_and_reported_then_fixed(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    path = write_memory(kb.root, "kb.fragile", "A gecko-shaped geckobroken note.")
    assert hit_ids(kb, "geckobroken") == {"kb.fragile"}
    path.write_text("learning: [geckobroken\n", encoding="utf-8")
    result = kb.search("geckobroken")
    assert result.memories == []
    assert any(w.startswith("memories/kb.fragile.yaml:") for w in result.warnings)
    assert hit_ids(kb, "refunds") >= {"kb.refund-policy"}  # the rest of the KB still works
    write_memory(kb.root, "kb.fragile", "A gecko-shaped geckobroken note.")
    result = kb.search("geckobroken")
    assert [h["id"] for h in result.memories] == ["kb.fragile"]
    assert not any("kb.fragile" in w for w in result.warnings)


# -- git checkout ------------------------------------------------------------------------------


def test_git_checkout_of_another_branch(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    kb = example_kb
    root = kb.root
    main_branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "other")
    (root / "memories" / "1.yaml").unlink()
    (root / "memories" / "kb.refund-policy.yaml").unlink()
    write_memory(root, "kb.branch-only", "Only on the other branch: lemurbranch.")
    two = root / "memories" / "2.yaml"
    two.write_text(two.read_text(encoding="utf-8").replace("Time zones:", "Time zones lemurbranch:"))
    for n in range(100):
        write_memory(root, f"kb.bulk-{n}", f"Bulk note {n} about tapirbulk.")
    commit_all(root, "other branch")
    git(root, "checkout", "-q", main_branch)

    assert hit_ids(kb, "lemurbranch") == set()
    assert "kb.refund-policy" in hit_ids(kb, "refunds")
    assert kb.search("tapirbulk", limit=500).memories == []

    git(root, "checkout", "-q", "other")
    assert hit_ids(kb, "lemurbranch") == {"kb.branch-only", "2"}
    assert "kb.refund-policy" not in hit_ids(kb, "refunds")
    assert len(kb.search("tapirbulk", limit=500).memories) == 100
    data = json_of(invoke_cli("--kb", root, "search", "lemurbranch", "--json", check=True))
    assert {h["id"] for h in data["memories"]} == {"kb.branch-only", "2"}

    git(root, "checkout", "-q", main_branch)
    assert hit_ids(kb, "lemurbranch") == set()
    assert "kb.refund-policy" in hit_ids(kb, "refunds")
    assert kb.search("tapirbulk", limit=500).memories == []
    data = json_of(invoke_cli("--kb", root, "search", "lemurbranch", "--json", check=True))
    assert data["memories"] == []


# -- catalog -----------------------------------------------------------------------------------


REFUNDS = Path("models/shop/refunds.yaml")


def test_model_column_removed_and_added(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    kb = example_kb
    assert entity_hits(kb, entities=["shop.refunds.processed_at"]) == ["shop.refunds.processed_at"]
    assert entity_hits(kb, "quuxolant") == []
    path = kb.root / REFUNDS
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if "name: processed_at" not in line]
    assert len(kept) == len(lines) - 1
    at = kept.index("measures:\n")
    kept.insert(at, '- {name: zorbfield, sql: zorb, type: TEXT, description: "Quuxolant marker"}\n')
    path.write_text("".join(kept), encoding="utf-8")

    assert entity_hits(kb, "quuxolant") == ["shop.refunds.zorbfield"]
    result = kb.search(entities=["shop.refunds.processed_at"])
    assert result.entities == []
    assert result.resolved_input_entities == []
    data = json_of(invoke_cli("--kb", kb.root, "search", "quuxolant", "--json", check=True))
    assert [e["entity"] for e in data["entities"]] == ["shop.refunds.zorbfield"]


def test_model_file_deleted(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    assert "shop.refunds" in entity_hits(kb, "refunds")
    (kb.root / REFUNDS).unlink()
    hits = entity_hits(kb, "refunds")
    assert not [e for e in hits if e.startswith("shop.refunds")]
    assert "wh.daily_revenue.refunds_eur" in hits


def test_catalog_same_size_rewrite_within_the_timestamp_granularity(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    path = kb.root / REFUNDS
    text = path.read_text(encoding="utf-8")
    assert "Refund requests" in text
    assert entity_hits(kb, "requests") != []
    st = path.stat()
    # Changed "now" for every check below, however slowly a loaded machine runs them: an mtime
    # an hour ahead stays within the timestamp granularity of each check (one set to the clock
    # aged past it when a check came seconds later, and the rewrite went unseen by design).
    os.utime(path, ns=(st.st_atime_ns, time.time_ns() + 3600 * 10**9))
    st = path.stat()
    assert entity_hits(kb, "zzquests") == []
    with path.open("r+", encoding="utf-8") as f:
        f.write(text.replace("Refund requests", "Refund zzquests"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    assert entity_hits(kb, "zzquests") == ["shop.refunds.refund_count"]


def test_a_copied_kb_indexes_nothing_again_until_a_catalog_byte_changes(indexed_example_kb: KnowledgeBase) -> None:
    """A copy (``cp -r``, a restore, a checkout that came back) gives every file a new inode and
    keeps its bytes: the catalog's documents stay as they are, as the memories' do."""
    kb = indexed_example_kb  # a copy of an indexed KB: every file's inode is new
    segments = kb.index.segments()
    report = kb.ensure_fresh()
    assert report is not None and (report.rebuilt, report.updated, report.catalog_changed) == (False, 0, False)
    assert kb.index.segments() == segments
    again = kb.ensure_fresh()  # the new signature was kept: no second look at the bytes' hash
    assert again is None or not again.catalog_changed
    # a byte of the catalog changed after the copy is still found
    path = kb.root / REFUNDS
    path.write_text(path.read_text(encoding="utf-8").replace("Refund requests", "Refund zzquests"), encoding="utf-8")
    assert entity_hits(kb, "zzquests") == ["shop.refunds.refund_count"]


# -- a damaged or foreign index is rebuilt by itself -------------------------------------------


def test_deleted_index_is_rebuilt(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    kb = example_kb
    expected = hit_ids(kb, "refunds")
    assert "kb.refund-policy" in expected
    kb.close()
    shutil.rmtree(index_dir(kb))
    assert hit_ids(kb, "refunds") == expected
    shutil.rmtree(index_dir(kb))
    data = json_of(invoke_cli("--kb", kb.root, "search", "refunds", "--json", check=True))
    assert {h["id"] for h in data["memories"] + data["example_queries"]} == expected


@pytest.mark.parametrize("which", [
    "all",
    "whoosh",
    "manifest",
])
def test_truncated_index_is_rebuilt(example_kb: KnowledgeBase, invoke_cli: CliRunner, which: str) -> None:
    kb = example_kb
    expected = hit_ids(kb, "refunds")
    kb.close()
    truncated = 0
    for path in index_dir(kb).iterdir():
        is_manifest = path.name.startswith("manifest")
        if which == "all" or (which == "manifest") == is_manifest:
            path.write_bytes(b"")
            truncated += 1
    assert truncated >= 1
    fresh = KnowledgeBase(kb.root)
    assert hit_ids(fresh, "refunds") == expected
    fresh.close()
    data = json_of(invoke_cli("--kb", kb.root, "search", "refunds", "--json", check=True))
    assert {h["id"] for h in data["memories"] + data["example_queries"]} == expected


def test_manifest_of_another_format_is_rebuilt(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    expected = hit_ids(kb, "refunds")
    manifest_path = index_dir(kb) / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    assert manifest["format"] == FORMAT
    # an old format whose file list claims the files are unchanged: trusting it would be wrong
    manifest["format"] = FORMAT + 1000
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    report = kb.ensure_fresh()
    assert report is not None and report.rebuilt
    assert json.loads(manifest_path.read_text(encoding="utf-8"))["format"] == FORMAT
    assert hit_ids(kb, "refunds") == expected


def test_nothing_changed_means_no_sync(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    hit_ids(kb, "refunds")
    # files copied by the fixture are younger than the racy window: let one sync settle them
    for path in (kb.root / "memories").iterdir():
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**10))
    kb.ensure_fresh()
    assert kb.ensure_fresh() is None
    assert kb.index.stale_files() == []


def test_young_files_are_read_again_only_until_they_settle(
    example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files indexed within the timestamp granularity of their writing are re-read by each check;
    once old enough to change only with their signature, one check re-reads them under the lock
    and they stop being young. They used to stay young until something else changed, so after a
    checkout of 10,000 files every command read them all again."""
    from slayer_kb.search import index as index_module

    kb = example_kb
    memories = kb.root / "memories"
    source = sorted(memories.glob("*.yaml"))[0].read_text(encoding="utf-8")
    for n in (901, 902, 903):
        (memories / f"{n}.yaml").write_text(source, encoding="utf-8")
    kb.ensure_fresh()  # indexed right after they were written: young
    young = kb.index.young_files()
    assert {"901", "902", "903"} <= set(young)
    reads: list[str] = []
    real_read = index_module.file_bytes

    def counted(memories: Path, memory_id: str, sig: Sig) -> bytes | MemoryFileError:
        reads.append(memory_id)
        return real_read(memories, memory_id, sig)

    monkeypatch.setattr(index_module, "file_bytes", counted)
    monkeypatch.setattr(index_module, "RACY_SECONDS", 0.0)  # as if the granularity had passed
    assert kb.index.stale_files() == young  # unchanged, settled: re-read once more under the lock
    report = kb.ensure_fresh()
    assert report is not None and report.updated == 0  # nothing re-indexed: only the state
    assert kb.index.young_files() == []
    reads.clear()
    assert kb.ensure_fresh() is None and kb.index.stale_files() == []
    assert reads == []


def test_reindexed_files_leave_no_duplicate_documents(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    kb.update("1", learning="changed through the API")
    path = kb.root / "memories" / "2.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("Time zones", "Time zones (edited)"), encoding="utf-8")
    kb.ensure_fresh()
    searcher = kb.index.searcher()
    ids = [doc["id"] for doc in searcher.documents(kind="memory")]
    assert sorted(ids) == sorted(kb.memory_ids())


def test_a_checkout_of_thousands_of_files_replaces_every_document_once(example_kb: KnowledgeBase) -> None:
    """Past BULK_THRESHOLD changed files the index writes with two processes and deletes the old
    documents in one walk over the id terms: each file must end up indexed exactly once."""
    from slayer_kb.search.writing import BULK_THRESHOLD

    count = BULK_THRESHOLD + 200
    for n in range(count):
        write_memory(example_kb.root, f"kb.bulk-{n}", f"bulkbefore item{n}")
    example_kb.ensure_fresh()
    assert len(example_kb.search("bulkbefore", limit=2 * count).memories) == count
    for n in range(count):  # every file changed: the two-process writer, thousands of deletions
        write_memory(example_kb.root, f"kb.bulk-{n}", f"bulkafter item{n}")
    assert example_kb.search("bulkbefore", limit=2 * count).memories == []
    assert len(example_kb.search("bulkafter", limit=2 * count).memories) == count
    kept = range(BULK_THRESHOLD + 50, count)
    for n in range(BULK_THRESHOLD + 50):  # thousands of deletions from the one-process writer
        (example_kb.root / "memories" / f"kb.bulk-{n}.yaml").unlink()
    after = [hit["id"] for hit in example_kb.search("bulkafter", limit=2 * count).memories]
    assert sorted(after) == sorted(f"kb.bulk-{n}" for n in kept)
    assert [hit["id"] for hit in example_kb.search(f"bulkafter item{count - 1}", match="all").memories] == [f"kb.bulk-{count - 1}"]


@pytest.mark.parametrize("policy", ["ours", "whoosh"])
def test_updates_never_merge_big_segments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str) -> None:
    """Whoosh's own policy folds a big segment into an ordinary update once enough small ones
    sit beside it (at 100,000 memories, an update took 77 s); segments past MERGE_LIMIT stay."""
    from whoosh import index as windex
    from whoosh.writing import MERGE_SMALL

    from slayer_kb.search import compaction
    from slayer_kb.search import index as index_module

    monkeypatch.setattr(compaction, "MERGE_LIMIT", 20)
    ix = windex.create_in(str(tmp_path), index_module.SCHEMA)
    writer = ix.writer()
    for n in range(25):
        writer.add_document(id=f"big-{n}", kind="memory", text="big segment")
    writer.commit()
    big = whoosh_internals.segments(ix)[0].segment_id()
    for n in range(5):
        writer = ix.writer()
        writer.add_document(id=f"small-{n}", kind="memory", text="small segment")
        merge = compaction.on_bulk if policy == "ours" else MERGE_SMALL
        writer.commit(mergetype=merge)
    ids = [seg.segment_id() for seg in whoosh_internals.segments(ix)]
    assert (big in ids) is (policy == "ours")  # Whoosh's policy rewrote the 25-document segment
    with ix.searcher() as searcher:
        assert searcher.doc_count() == 30
