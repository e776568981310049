"""What a save costs the warm server after its commit (docs/server.md, "Reads beside writes"):
the file watcher does not read again the files the server's own commit wrote and indexed, and a
re-read that finds a file's bytes unchanged (a young file settling) writes nothing to Whoosh."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from whoosh import index as windex

from slayer_kb import KnowledgeBase
from slayer_kb.core.results import SyncReport
from slayer_kb.daemon import relay, watch
from slayer_kb.daemon.server import Server
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


@pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")
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
    blocker = tmp_path / "blocker" / "whoosh"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('whoosh is blocked by the test')\n")
    root = example_kb.root
    stop = threading.Event()
    server = Server(root, stop=stop, idle=None, log=StringIO())
    kb = KnowledgeBase(root)
    runner = threading.Thread(target=watch.run_watcher, args=(kb,), kwargs={"stop": stop, "out": StringIO(), "server": server})
    runner.start()
    try:
        eventually(server.warm.is_set, "the server warmed up", 120)
        env = dict(os.environ, PYTHONPATH=str(blocker.parent))  # only the server can save
        saves = []
        for n in range(3):
            proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", f"zantelope note {n}", "-e", "orders.amount"],
                                  capture_output=True, text=True, env=env, timeout=120, check=False)
            assert (proc.returncode, proc.stderr) == (0, "")
            saves.append(proc.stdout.split()[2])
        assert server.served == 3
        eventually(lambda: kb.as_indexed(set(saves)) and not kb.young_files(), "the saves settled", 120)
        assert [ids for quiet, ids in refreshes if not quiet and ids & set(saves)] == []
        path = root / "memories" / f"{saves[0]}.yaml"
        path.write_text(path.read_text(encoding="utf-8").replace("zantelope", "zantelope handmade"), encoding="utf-8")
        eventually(lambda: (False, {saves[0]}) in refreshes, "the hand edit synced", 120)
    finally:
        stop.set()
        runner.join(timeout=60)
    assert not runner.is_alive()
