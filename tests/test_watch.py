"""``slayer-kb watch`` in a real subprocess keeps the index current by itself.

The index is polled read-only, straight from Whoosh: never through ``KnowledgeBase.search``,
which syncs on its own and would hide a watcher that does nothing. How soon a change is seen is
a figure of the benchmark (bench/measure.py, "watcher"), not of a test: every wait here is
``testing.eventually``'s, generous enough for a loaded machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import threading
from io import StringIO
from pathlib import Path

import pytest
from whoosh import index as windex
from whoosh import query as Q

from slayer_kb import KnowledgeBase
from slayer_kb.core.results import SyncReport
from slayer_kb.daemon.watch import run_watcher
from slayer_kb.search.monitor import is_relevant
from slayer_kb.search.schema import text_terms
from testing import Watcher, commit_all, eventually, git, make_example_kb

CREATED = "created_at: '2026-11-01T10:00:00Z'\n"


def memory_text(learning: str) -> str:
    return f"learning: |\n  {learning}\n{CREATED}"


def indexed(root: Path, field: str, value: str) -> set[str]:
    """Ids of the documents whose ``field`` holds ``value``, read from the index without syncing."""

    def read() -> tuple[set[str]] | None:
        try:
            ix = windex.open_dir(str(root / ".slayer-kb" / "index"))
            try:
                with ix.searcher() as searcher:
                    return ({hit["id"] for hit in searcher.search(Q.Term(field, value), limit=None)},)
            finally:
                ix.close()
        except Exception:  # noqa: BLE001 - a commit may be replacing segments right now
            return None

    return eventually(read, "a read of the index")[0]


def with_word(root: Path, word: str) -> set[str]:
    (term,) = text_terms(word)[0]
    return indexed(root, "text", term)


# -- changes seen by the watcher ---------------------------------------------------------------


def test_hand_edit(watcher: Watcher) -> None:
    root = watcher.root
    path = root / "memories" / "2.yaml"
    text = path.read_text(encoding="utf-8")
    assert with_word(root, "kiwiwatch") == set()
    path.write_text(text.replace("Time zones:", "Time zones kiwiwatch:"), encoding="utf-8")
    eventually(lambda: with_word(root, "kiwiwatch") == {"2"})
    # the watcher only reads: the file is exactly as the editor left it
    assert path.read_text(encoding="utf-8") == text.replace("Time zones:", "Time zones kiwiwatch:")


def test_new_file_and_delete(watcher: Watcher) -> None:
    root = watcher.root
    (root / "memories" / "kb.watched.yaml").write_text(memory_text("A moawatch note."), encoding="utf-8")
    eventually(lambda: with_word(root, "moawatch") == {"kb.watched"})

    assert "kb.refund-policy" in indexed(root, "kind", "memory")
    (root / "memories" / "kb.watched.yaml").unlink()
    (root / "memories" / "kb.refund-policy.yaml").unlink()
    eventually(lambda: with_word(root, "moawatch") == set())
    eventually(lambda: "kb.refund-policy" not in indexed(root, "kind", "memory"))
    # a delete is "drop from the index", never a write
    assert not (root / "memories" / "kb.refund-policy.yaml").exists()
    assert not (root / "memories" / "kb.watched.yaml").exists()


def test_vim_style_save(watcher: Watcher) -> None:
    root = watcher.root
    mem = root / "memories"
    (mem / ".5.yaml.swp").write_bytes(b"\0vim swap")
    (mem / "4913").write_text("")
    (mem / "4913").unlink()
    os.rename(mem / "5.yaml", mem / "5.yaml~")
    (mem / "5.yaml").write_text(memory_text("Saved the vim way: takahewatch."), encoding="utf-8")
    (mem / "5.yaml~").unlink()
    eventually(lambda: with_word(root, "takahewatch") == {"5"})
    (mem / ".5.yaml.swp").unlink()
    # A later change seen means the ones before it were handled: the swap file never became a
    # memory, and 5 is there exactly once.
    (mem / "kb.after-vim.yaml").write_text(memory_text("Written after the swap file: ruruwatch."), encoding="utf-8")
    eventually(lambda: with_word(root, "ruruwatch") == {"kb.after-vim"})
    ids = indexed(root, "kind", "memory")
    assert "5" in ids
    assert not {i for i in ids if "swp" in i or "~" in i or i == "4913"}
    assert with_word(root, "takahewatch") == {"5"}


def test_temp_file_and_replace_then_sigterm(watcher: Watcher) -> None:
    root = watcher.root
    mem = root / "memories"
    tmp = mem / "6.yaml.tmp"
    tmp.write_text(memory_text("Replaced atomically: weetawatch."), encoding="utf-8")
    os.replace(tmp, mem / "6.yaml")
    eventually(lambda: with_word(root, "weetawatch") == {"6"})

    watcher.proc.send_signal(signal.SIGTERM)
    assert watcher.proc.wait(timeout=60) == 0
    assert watcher.lines[-1] == "Stopped watching."


def test_catalog_change(watcher: Watcher) -> None:
    root = watcher.root
    path = root / "models" / "shop" / "refunds.yaml"
    assert indexed(root, "id", "catalog:shop.refunds.processed_at") == {"catalog:shop.refunds.processed_at"}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line for line in lines if "name: processed_at" not in line), encoding="utf-8")
    eventually(lambda: indexed(root, "id", "catalog:shop.refunds.processed_at") == set())
    assert indexed(root, "id", "catalog:shop.refunds.amount") == {"catalog:shop.refunds.amount"}

    path.unlink()
    eventually(lambda: indexed(root, "id", "catalog:shop.refunds.amount") == set())
    assert indexed(root, "id", "catalog:shop.orders.amount") == {"catalog:shop.orders.amount"}


def test_burst_of_500_files_then_sigint(watcher: Watcher) -> None:
    root = watcher.root
    mem = root / "memories"
    for n in range(500):
        (mem / f"kb.burst-{n}.yaml").write_text(memory_text(f"Burst note {n}: kakapoburst."), encoding="utf-8")
    expected = {f"kb.burst-{n}" for n in range(500)}
    eventually(lambda: with_word(root, "kakapoburst") == expected)
    assert watcher.proc.poll() is None

    # Still alive and still answering right after the burst (for 2 s after it every sync re-reads
    # all 500 young files: index.py's racy-timestamp rule).
    (mem / "kb.burst-7.yaml").write_text(memory_text("Burst note 7: rewritten as tuiburst."), encoding="utf-8")
    eventually(lambda: with_word(root, "tuiburst") == {"kb.burst-7"})
    assert with_word(root, "kakapoburst") == expected - {"kb.burst-7"}

    watcher.proc.send_signal(signal.SIGINT)
    assert watcher.proc.wait(timeout=60) == 0
    assert watcher.lines[0] == f"Watching {root} (Ctrl-C to stop)"
    assert not [line for line in watcher.lines if "Traceback" in line or line.startswith("Error")]


def test_broken_file_reported_once(watcher: Watcher) -> None:
    root = watcher.root
    bad = root / "memories" / "kb.broken.yaml"
    bad.write_text("learning: [unclosed\n", encoding="utf-8")
    watcher.wait_for_line("memories/kb.broken.yaml:", timeout=60)
    # another change elsewhere syncs again; the broken file is not reported a second time
    (root / "memories" / "kb.other.yaml").write_text(memory_text("An ibiswatch note."), encoding="utf-8")
    eventually(lambda: with_word(root, "ibiswatch") == {"kb.other"})
    # A third file broken: its line comes after all that the second sync printed.
    (root / "memories" / "kb.broken-too.yaml").write_text("learning: [unclosed\n", encoding="utf-8")
    watcher.wait_for_line("memories/kb.broken-too.yaml:", timeout=60)
    assert len([line for line in watcher.lines if line.startswith("memories/kb.broken.yaml:")]) == 1
    watcher.proc.send_signal(signal.SIGINT)
    assert watcher.proc.wait(timeout=60) == 0


def test_git_checkout(example_kb: KnowledgeBase) -> None:
    root = example_kb.root
    main_branch = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "other")
    (root / "memories" / "1.yaml").unlink()
    for n in range(100):
        (root / "memories" / f"kb.branch-{n}.yaml").write_text(
            memory_text(f"Branch note {n}: keaswitch."), encoding="utf-8"
        )
    commit_all(root, "other branch")
    git(root, "checkout", "-q", main_branch)
    example_kb.ensure_fresh()
    example_kb.close()
    w = Watcher(root)
    try:
        w.wait_for_line("Watching")
        expected = {f"kb.branch-{n}" for n in range(100)}
        git(root, "checkout", "-q", "other")
        eventually(lambda: with_word(root, "keaswitch") == expected)
        eventually(lambda: "1" not in indexed(root, "kind", "memory"))

        git(root, "checkout", "-q", main_branch)
        eventually(lambda: with_word(root, "keaswitch") == set())
        eventually(lambda: "1" in indexed(root, "kind", "memory"))
        # the watcher changed no file: the work tree is exactly the checked-out commit
        assert git(root, "status", "--porcelain") == ""
        w.proc.send_signal(signal.SIGINT)
        assert w.proc.wait(timeout=60) == 0
    finally:
        w.stop()


def test_in_process_with_stop_event(example_kb: KnowledgeBase) -> None:
    """The library entry point: ``stop`` ends it, ``on_sync`` sees each change, on one thread."""
    root = example_kb.root
    reports: list[SyncReport] = []
    threads: set[str] = set()

    def on_sync(report: SyncReport) -> None:
        reports.append(report)
        threads.add(threading.current_thread().name)

    stop = threading.Event()
    out = StringIO()
    kb = KnowledgeBase(root)
    runner = threading.Thread(
        target=run_watcher, args=(kb,), kwargs={"stop": stop, "on_sync": on_sync, "out": out},
        name="watcher-loop",
    )
    runner.start()
    try:
        eventually(lambda: bool(reports))  # the initial build
        assert reports[0].rebuilt
        (root / "memories" / "kb.inproc.yaml").write_text(memory_text("A rukuwatch note."), encoding="utf-8")
        eventually(lambda: with_word(root, "rukuwatch") == {"kb.inproc"})
        # on_sync runs just after the index commit the poll above may already have seen
        eventually(lambda: any(r.updated >= 1 for r in reports[1:]))
    finally:
        stop.set()
        runner.join(timeout=60)
    assert not runner.is_alive()
    assert threads == {"watcher-loop"}
    log = out.getvalue().splitlines()
    assert log[0] == f"Watching {root} (Ctrl-C to stop)"
    assert log[-1] == "Stopped watching."


# -- the filter, unit by unit ------------------------------------------------------------------


@pytest.mark.parametrize(("rel", "is_dir", "expected"), [
    ("memories/1.yaml", False, True),
    ("memories/kb.paid-revenue.yaml", False, True),
    ("datasources/shop.yaml", False, True),
    ("models/shop/orders.yaml", False, True),
    ("priority.yaml", False, True),
    ("memories", True, True),
    ("models/shop", True, True),
    ("memories/.1.yaml.swp", False, False),
    ("memories/.1.yaml.swx", False, False),
    ("memories/1.yaml~", False, False),
    ("memories/4913", False, False),
    ("memories/1.yaml.tmp", False, False),
    ("memories/#1.yaml#", False, False),
    ("memories/.#1.yaml", False, False),
    (".git/index", False, False),
    (".git/refs/heads/main", False, False),
    (".slayer-kb/index/manifest.json", False, False),
    (".slayer-kb/lock", False, False),
    (".gitignore", False, False),
    ("README.md", False, False),
    ("memories/notes.txt", False, False),
    ("memories/sub/1.yaml", False, False),
    ("models/shop/sub/orders.yaml", False, False),
    ("models/orders.yaml", False, False),
    ("other.yaml", False, False),
    (".git", True, False),
    ("docs", True, False),
])
def test_relevant_paths(rel: str, is_dir: bool, expected: bool) -> None:
    assert is_relevant(rel, is_dir) is expected


def test_a_server_whose_warm_up_fails_goes_on_serving(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Warming up is a head start, not a duty: an error in it is logged and the watch goes on."""
    from slayer_kb.core.errors import StoreError
    from slayer_kb.daemon.server import Server

    def broken_warm_up(self: KnowledgeBase) -> None:
        raise StoreError("git object abc is missing")

    monkeypatch.setattr(KnowledgeBase, "warm_up", broken_warm_up)
    root = example_kb.root
    stop = threading.Event()
    out = StringIO()
    server = Server(root, stop=stop, idle=None, log=out)
    runner = threading.Thread(target=run_watcher, args=(KnowledgeBase(root),), kwargs={"stop": stop, "out": out, "server": server})
    runner.start()
    try:
        eventually(server.warm.is_set)
        (root / "memories" / "kb.afterwarm.yaml").write_text(memory_text("A zumbawarm note."), encoding="utf-8")
        eventually(lambda: with_word(root, "zumbawarm") == {"kb.afterwarm"})
        assert runner.is_alive()
    finally:
        stop.set()
        runner.join(timeout=60)
    assert not runner.is_alive()
    assert "Could not warm up (git object abc is missing); the first commands load what they need." in out.getvalue()


@pytest.mark.slow  # an index built from nothing, in a folder on disk
def test_a_memories_folder_made_anew_on_its_old_inode_is_watched_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rm -rf memories && git checkout -- memories``: the new folder usually gets the old inode
    number back; the watcher kept the dead watch of the old one and saw a hand edit only at its
    next rescan (here never). In the system's temporary folder, not tmp_path: a tmpfs never hands
    an inode number out twice."""
    from slayer_kb.daemon import watch

    monkeypatch.setattr(watch, "RESCAN_SECONDS", 3600.0)  # only events can tell it
    with tempfile.TemporaryDirectory() as scratch:
        root = make_example_kb(Path(scratch) / "kb")
        reports: list[SyncReport] = []
        stop = threading.Event()
        runner = threading.Thread(target=run_watcher, args=(KnowledgeBase(root),),
                                  kwargs={"stop": stop, "on_sync": reports.append, "out": StringIO()})
        runner.start()
        try:
            eventually(lambda: bool(reports))  # the initial build
            memories = root / "memories"
            for attempt in range(20):
                # A file git does not hold, seen arrive, then gone with the folder: the sync after
                # the folder's return is done.
                (memories / "kb.marker.yaml").write_text(memory_text(f"quillmark{attempt}"), encoding="utf-8")
                eventually(lambda: with_word(root, f"quillmark{attempt}") == {"kb.marker"})  # noqa: B023
                inode = memories.stat().st_ino
                shutil.rmtree(memories)
                git(root, "checkout", "-q", "--", "memories")
                eventually(lambda: with_word(root, f"quillmark{attempt}") == set())  # noqa: B023
                if memories.stat().st_ino == inode:
                    break
            else:
                pytest.skip("this file system never reused the folder's inode number")
            (memories / "kb.reborn.yaml").write_text(memory_text("A zorbleweed note."), encoding="utf-8")
            eventually(lambda: with_word(root, "zorbleweed") == {"kb.reborn"}, "the hand edit in the folder made anew")
        finally:
            stop.set()
            runner.join(timeout=60)
