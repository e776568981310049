"""What a save costs the warm server after its commit (docs/server.md, "Reads beside writes"):
the file watcher does not read again the files the server's own commit wrote and indexed, and a
re-read that finds a file's bytes unchanged (a young file settling) writes nothing to Whoosh."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from whoosh import index as windex

from slayer_kb import KnowledgeBase
from slayer_kb.core.results import SyncReport
from slayer_kb.daemon import relay, watch
from slayer_kb.daemon.server import Server
from slayer_kb.search.background import SentenceFiller
from testing import eventually


def generation(kb: KnowledgeBase) -> int:
    """The Whoosh table of contents' generation: one more for every writer committed."""
    return int(windex.open_dir(str(kb.root / ".slayer-kb" / "index")).latest_generation())


def test_a_re_read_of_unchanged_bytes_writes_no_segment(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    saved = kb.save_memory("A quorvex note about refunds.", ["orders.amount"]).memory_id
    before = generation(kb)
    report = kb.refresh([saved])  # the file as the save wrote it: only its row is read again
    assert (report.updated, generation(kb)) == (0, before)
    path = kb.root / "memories" / f"{saved}.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("quorvex", "quorvex edited"), encoding="utf-8")
    report = kb.refresh([saved])
    assert (report.updated, generation(kb)) == (1, before + 1)
    assert [h["id"] for h in kb.search("edited").memories] == [saved]


def test_as_indexed_names_only_what_this_process_wrote_as_it_is(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    kb.ensure_fresh()  # the index built first: the save's own update is then a targeted one
    saved = kb.save_memory("A quorvex note about refunds.", ["orders.amount"]).memory_id
    assert kb.as_indexed({saved}) is True
    assert kb.as_indexed({saved, "1"}) is False  # 1 came with the KB: this process never wrote it
    path = kb.root / "memories" / f"{saved}.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # an edit by hand
    assert kb.as_indexed({saved}) is False
    kb.refresh([saved])
    assert kb.as_indexed({saved}) is True
    path.unlink()
    assert kb.as_indexed({saved}) is False


def test_after_an_invalidate_the_watcher_syncs_a_file_it_had_as_indexed(example_kb: KnowledgeBase) -> None:
    """``Index.invalidate`` (a save's index update failed) leaves nothing as indexed: the
    watcher's event for a file this process indexed is synced, even with the file's size, inode
    and mtime as that update read them (rewritten in place, its mtime put back)."""
    kb = example_kb
    kb.ensure_fresh()
    saved = kb.save_memory("A quorvex note about refunds.", ["orders.amount"]).memory_id
    path = kb.root / "memories" / f"{saved}.yaml"
    # An mtime ahead of the clock: the index takes the file as young (re-read by its bytes on
    # every pass) however long this machine takes between the steps.
    ahead = time.time_ns() + 3600 * 10**9
    os.utime(path, ns=(ahead, ahead))
    kb.refresh([saved])
    with path.open("r+b") as handle:  # the same inode and size
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace(b"quorvex", b"zintaro"))
    os.utime(path, ns=(ahead, ahead))
    assert kb.as_indexed({saved}) is True  # a signature cannot tell this edit
    kb.index.invalidate()
    assert kb.as_indexed({saved}) is False
    synced: list[SyncReport] = []
    result = watch._sync(kb, synced.append, watch._Reporter(StringIO()), nullcontext(), named={saved},
                         unless_indexed=True)
    assert (result, [report.updated for report in synced]) == ((True, True), [1])
    assert [h["id"] for h in kb.search("zintaro").memories] == [saved]


@contextmanager
def serving(root: Path, blocked: Path) -> Iterator[tuple[Server, KnowledgeBase, Callable[..., str]]]:
    """A warm server with its watcher on this thread's KB, and ``relayed(*argv)``: a command only
    that server can answer (Whoosh is blocked in the client), its stdout."""
    (blocked / "whoosh").mkdir(parents=True)
    (blocked / "whoosh" / "__init__.py").write_text("raise ImportError('whoosh is blocked by the test')\n")
    env = dict(os.environ, PYTHONPATH=str(blocked))
    stop = threading.Event()
    server = Server(root, stop=stop, idle=None, log=StringIO())
    kb = KnowledgeBase(root)
    runner = threading.Thread(target=watch.run_watcher, args=(kb,), kwargs={"stop": stop, "out": StringIO(), "server": server})
    runner.start()

    def relayed(*argv: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *argv],
                              capture_output=True, text=True, env=env, timeout=120, check=False)
        assert (proc.returncode, proc.stderr) == (0, "")
        return proc.stdout

    try:
        eventually(server.warm.is_set, "the server warmed up", 120)
        yield server, kb, relayed
    finally:
        stop.set()
        runner.join(timeout=60)
    assert not runner.is_alive()


pytestmark = pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")


def test_the_watcher_leaves_the_servers_own_saves_alone(example_kb: KnowledgeBase, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A relayed save's files reach the watcher as events: it takes no turn for them (before, it
    re-read them under the server's lock right after the save indexed them), only the settling
    re-read of young files, which finds their bytes unchanged. An edit by hand is still synced."""
    refreshes: list[tuple[bool, set[str]]] = []  # (by a settling pass, the files re-read)
    settling: list[bool] = [False]
    real_sync, real_refresh = watch._sync, KnowledgeBase.refresh

    def recorded_sync(kb: KnowledgeBase, on_sync: Any, reporter: Any, busy: Any, quiet: bool = False,
                      named: set[str] | None = None, unless_indexed: bool = False) -> tuple[bool, bool]:
        settling[0] = quiet
        return real_sync(kb, on_sync, reporter, busy, quiet=quiet, named=named, unless_indexed=unless_indexed)

    def recorded_refresh(kb: KnowledgeBase, memory_ids: list[str]) -> SyncReport:
        refreshes.append((settling[0], set(memory_ids)))
        return real_refresh(kb, memory_ids)

    monkeypatch.setattr(watch, "_sync", recorded_sync)
    monkeypatch.setattr(KnowledgeBase, "refresh", recorded_refresh)
    root = example_kb.root
    with serving(root, tmp_path / "blocked") as (server, kb, relayed):
        saves = [relayed("save", f"zantelope note {n}", "-e", "orders.amount").split()[2] for n in range(3)]
        assert server.served == 3
        eventually(lambda: kb.as_indexed(set(saves)) and not kb.young_files(), "the saves settled", 120)
        assert [ids for quiet, ids in refreshes if not quiet and ids & set(saves)] == []
        path = root / "memories" / f"{saves[0]}.yaml"
        path.write_text(path.read_text(encoding="utf-8").replace("zantelope", "zantelope handmade"), encoding="utf-8")
        eventually(lambda: (False, {saves[0]}) in refreshes, "the hand edit synced", 120)


def test_only_a_command_in_its_turn_wakes_the_sentence_filler(example_kb: KnowledgeBase, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A read beside a write indexes nothing, so it leaves no sentence vector to make: it used to
    start a pass of the filler, which takes the server's turn several times, after every search."""
    wakes: list[str] = []
    monkeypatch.setattr(SentenceFiller, "wake", lambda self: wakes.append("woken"))
    with serving(example_kb.root, tmp_path / "blocked") as (server, _kb, relayed):
        assert "zantelope" not in relayed("search", "refunds")
        relayed("get", "1")
        assert (server.served, wakes) == (2, [])
        relayed("save", "zantelope note", "-e", "orders.amount")
        assert (server.served, wakes) == (3, ["woken"])
        assert "zantelope note" in relayed("search", "zantelope")
        assert (server.served, wakes) == (4, ["woken"])
