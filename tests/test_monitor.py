"""A warm KnowledgeBase (keep_warm) skips the per-file scan while nothing changed, and still sees
edits made behind its back."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import utc_now
from slayer_kb.search.monitor import ChangeMonitor
from testing import commit_all, git

_STARTED: list[Any] | None = None  # the programs started while a test records them (an audit hook)


def _record_starts(event: str, args: tuple[Any, ...]) -> None:
    if _STARTED is not None and event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.system"):
        _STARTED.append(args[1] if event == "subprocess.Popen" else args)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_making_a_change_monitor_starts_no_program(tmp_path: Path) -> None:
    """libc was found with ctypes.util.find_library("c"), which starts ldconfig: once per warm
    monitor, 130 programs in a run of the suite (docs/testing.md's table of programs)."""
    global _STARTED
    sys.addaudithook(_record_starts)  # an audit hook cannot be removed: it records only below
    _STARTED = []
    try:
        monitor = ChangeMonitor.create(tmp_path)
    finally:
        started, _STARTED = _STARTED, None
    assert monitor is not None
    monitor.stop()
    assert started == []


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
            f"scope: project\nsession_id: manual-save\ncreated_at: '{utc_now()}'\n", encoding="utf-8")
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


def _save_passes_a_hand_made_file(kb: KnowledgeBase, memory_id: str, next_id: str) -> None:
    """A file made by hand as ``memory_id`` beside the warm process: the next save takes
    ``next_id`` and leaves the hand-made file as it is."""
    path = kb.root / "memories" / f"{memory_id}.yaml"
    path.write_text(f"learning: made by hand\ncreated_at: '{utc_now()}'\n", encoding="utf-8")
    assert kb.save_memory("after a hand-made file", ["orders"]).memory_id == next_id
    assert "made by hand" in path.read_text()


def _moved_away_and_copied_back(kb: KnowledgeBase) -> None:
    shutil.move(kb.root / "memories", kb.root / "moved")
    shutil.copytree(kb.root / "moved", kb.root / "memories")
    shutil.rmtree(kb.root / "moved")


def _removed_with_git(kb: KnowledgeBase) -> None:
    # The next save's own commit makes the folder again: no file of its own to absorb.
    git(kb.root, "rm", "-rq", "memories")
    git(kb.root, "commit", "-qm", "every memory removed")


@pytest.mark.parametrize("renew", [_moved_away_and_copied_back, _removed_with_git], ids=["copied-back", "git-rm"])
def test_a_memories_folder_made_anew_is_watched_again(catalog_kb: KnowledgeBase, renew: Callable[[KnowledgeBase], None]) -> None:
    """A watch follows the folder's inode: a folder made anew is another one, and a file made by
    hand in it afterwards still raises the next id."""
    kb = catalog_kb
    kb.keep_warm()
    try:
        assert [kb.save_memory(f"note {n}", ["orders"]).memory_id for n in range(2)] == ["1", "2"]
        renew(kb)
        assert kb.save_memory("in the folder made anew", ["orders"]).memory_id == "3"
        _save_passes_a_hand_made_file(kb, "4", next_id="5")
    finally:
        kb.close()


def test_a_file_no_event_told_of_is_never_overwritten(catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The system's limit on watches reached for memories/ (inotify_add_watch fails), or a network
    file system that sends no events: the next id is still above every file."""
    from slayer_kb.search import monitor

    real = monitor.ChangeMonitor.__init__

    class NoWatchOnMemories:
        def __init__(self, libc: object) -> None:
            self._libc = libc

        def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
            return -1 if path.endswith(b"/memories") else self._libc.inotify_add_watch(fd, path, mask)  # type: ignore[attr-defined]

    def without_a_memories_watch(self: monitor.ChangeMonitor, root: Path, libc: object, fd: int) -> None:
        real(self, root, NoWatchOnMemories(libc), fd)

    monkeypatch.setattr(monitor.ChangeMonitor, "__init__", without_a_memories_watch)
    kb = catalog_kb
    kb.keep_warm()
    try:
        assert kb.monitor is not None and kb.monitor.generation() is None
        assert kb.save_memory("one", ["orders"]).memory_id == "1"
        _save_passes_a_hand_made_file(kb, "2", next_id="3")
    finally:
        kb.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify")
def test_a_memories_folder_made_anew_on_its_old_inode_is_watched_again() -> None:
    """``rm -rf memories && git checkout -- memories``: the new folder usually gets the old inode
    number back, and its old watch is dead all the same (the kernel dropped it). A file made in
    it afterwards is still a change. In the system's temporary folder, not tmp_path: a tmpfs
    (where tmp_path lives, testing/ramdisk.py) never hands an inode number out twice."""
    with tempfile.TemporaryDirectory() as scratch:
        _made_anew_on_its_old_inode(Path(scratch))


def _made_anew_on_its_old_inode(root: Path) -> None:
    memories = root / "memories"
    memories.mkdir()
    monitor = ChangeMonitor.create(root)
    assert monitor is not None
    try:
        for _ in range(20):  # the file system hands the inode back most of the time; try a few
            inode = memories.stat().st_ino
            shutil.rmtree(memories)
            memories.mkdir()
            assert monitor.changed() is True  # the folder went and came, unseen in between
            if memories.stat().st_ino == inode:
                break
        else:
            pytest.skip("this file system never reused the folder's inode number")
        assert monitor.changed() is False
        (memories / "1.yaml").write_text("learning: made by hand\n", encoding="utf-8")
        assert monitor.changed() is True
    finally:
        monitor.stop()


@pytest.mark.parametrize("deleted", [".slayer-kb", ".slayer-kb/index"])
def test_a_warm_kb_builds_an_index_deleted_behind_its_back_again(example_kb: KnowledgeBase, deleted: str) -> None:
    """``rm -rf .slayer-kb`` beside a warm server: no event a monitor hears of (hidden names are
    the KB's own writes), and the next search printed Whoosh's EmptyIndexError. A missing index
    is built again, as in a process of its own."""
    kb = example_kb
    kb.keep_warm()
    try:
        found = [h["id"] for h in kb.search("refunds").memories]
        assert found
        shutil.rmtree(kb.root / deleted)
        assert [h["id"] for h in kb.search("refunds").memories] == found
    finally:
        kb.close()
