"""A warm KnowledgeBase (keep_warm) skips the per-file scan while nothing changed, and still sees
edits made behind its back."""

from __future__ import annotations

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import utc_now
from testing import commit_all


def test_warm_kb_sees_hand_edits_and_skips_scans(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    kb.keep_warm()
    try:
        assert kb.search("fiscal year").memories[0]["id"] == "kb.fiscal-calendar"
        # Nothing changed: the next check is answered by the monitor, not by a scan.
        scans = []
        original = kb.index._changed_files
        kb.index._changed_files = lambda state: scans.append(1) or original(state)  # type: ignore[method-assign]
        kb.search("fiscal year")
        assert scans == []
        # A hand edit behind the KB's back is found by the next search once its event arrived.
        path = kb.root / "memories" / "3.yaml"
        path.write_text(path.read_text().replace("orders.is_returned", "orders.is_returned zebrafish"))
        # The kernel queues the event before write() returns: the very next search sees it.
        assert [h["id"] for h in kb.search("zebrafish").memories] == ["3"]
        assert scans, "the edit must have triggered a real freshness check"
        # A deleted file disappears the same way.
        path.unlink()
        assert kb.search("zebrafish").memories == []
        # A catalog edit too: a model file rewritten without a column.
        model = kb.root / "models" / "shop" / "refunds.yaml"
        assert "shop.refunds.reason" in [e["entity"] for e in kb.search("reason").entities]
        model.write_text("\n".join(line for line in model.read_text().splitlines() if "name: reason" not in line) + "\n")
        assert "shop.refunds.reason" not in [e["entity"] for e in kb.search("reason").entities]
    finally:
        kb.close()
    assert kb.monitor is None


def test_a_warm_writer_skips_the_scan_after_its_own_commits_only(empty_kb: KnowledgeBase) -> None:
    """Its own commits' events are absorbed; an edit made beside it still reaches the next
    Engram save's duplicate check."""
    kb = empty_kb
    kb.keep_warm()
    try:
        first = kb.save_observation(title="Refund timeout", content="Refunds time out after 30 s.")
        scans = []
        original = kb.index._changed_files
        kb.index._changed_files = lambda state: scans.append(1) or original(state)  # type: ignore[method-assign]
        second = kb.save_observation(title="Cache TTL", content="The page cache keeps pages 60 s.")
        assert (first.action, second.action, scans) == ("created", "created", [])
        # A file added by hand (and committed, as a person would) holding the next save's text:
        (kb.root / "memories" / "40.yaml").write_text(
            "title: Invoice numbers\nlearning: Invoice numbers never repeat.\ntype: manual\n"
            f"scope: project\ncreated_at: '{utc_now()}'\n", encoding="utf-8")
        commit_all(kb.root, "by hand")
        third = kb.save_observation(title="Invoice numbers", content="Invoice numbers never repeat.")
        assert (third.action, third.memory_id) == ("duplicate", "40")
        assert scans, "the hand-made file must have triggered a real freshness check"
    finally:
        kb.close()


def test_a_warm_writer_lists_the_memories_folder_only_after_a_file_came_or_went(
    catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next auto id is one above every memory file, hand-made ones too; a warm process lists
    the folder again only when its monitor saw a file arrive or leave."""
    from slayer_kb.search import index as index_module

    kb = catalog_kb
    listed: list[str] = []
    real = index_module.file_names
    monkeypatch.setattr(index_module, "file_names", lambda folder: listed.append(folder.name) or real(folder))
    kb.keep_warm()
    try:
        ids = [kb.save_memory(f"note {n}", ["orders"]).memory_id for n in range(3)]
        assert (ids, listed) == (["1", "2", "3"], ["memories"])
        hand = kb.root / "memories" / "41.yaml"
        text = f"learning: by hand\ncreated_at: '{utc_now()}'\n"
        # Made by hand and removed again before the next save: nothing holds 41 any more.
        hand.write_text(text, encoding="utf-8")
        hand.unlink()
        assert (kb.save_memory("after it came and went", ["orders"]).memory_id, len(listed)) == ("4", 2)
        # Made by hand and left there, not committed: the next id goes above it.
        hand.write_text(text, encoding="utf-8")
        assert (kb.save_memory("above the hand-made file", ["orders"]).memory_id, len(listed)) == ("42", 3)
        assert (kb.save_memory("one more", ["orders"]).memory_id, len(listed)) == ("43", 3)
    finally:
        kb.close()
