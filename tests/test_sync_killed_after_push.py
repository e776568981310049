"""A sync killed (kill -9) after its push landed, before it said what it did: the next sync says
it (the folds, renumberings and strips it finds recorded and not yet said), and a client whose
server's write process was killed so says how far that sync got, truly."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.daemon import relay
from slayer_kb.daemon.settle import settle
from slayer_kb.ops.sync import sync
from slayer_kb.store.leases import BLOCK
from slayer_kb.store.pulls import Pulls
from testing import Watcher, eventually, git, make_team

# The remote's post-receive hook: the branch has moved when it runs, and the push waits for it.
SLOW_POST_RECEIVE = "#!/bin/sh\nsleep 60\n"
# One that holds the push a while only: a write process killed then leaves its git push to finish.
SLOWISH_POST_RECEIVE = "#!/bin/sh\nsleep 5\n"
# A reference-transaction hook that kills the sync (git's parent) once it moved its copy of
# origin/main to its own HEAD: the last step of its push, which the fetch before never makes.
KILL_AT_THE_COPY = """#!/bin/sh
[ "$1" = committed ] || exit 0
while read -r old new ref; do
  [ "$ref" = refs/remotes/origin/main ] && [ "$new" = "$(git rev-parse HEAD)" ] || continue
  rm -f "$0"
  kill -9 $(ps -o ppid= -p $PPID)
done
"""


@pytest.fixture
def team(tmp_path: Path) -> tuple[Path, list[Path]]:
    return make_team(tmp_path, 2)


def _hook(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def _both_save_one_topic_key(a: Path, b: Path) -> None:
    """A and B each save decision/k, A's pushed first: B's sync folds B's (BLOCK + 1) into A's 1."""
    for root, who in ((a, "A"), (b, "B")):
        KnowledgeBase(root).save_observation("K", f"{who}: the key's decision, as {who} saw it.", type="decision",
                                             project="api", topic_key="decision/k")
    sync(KnowledgeBase(a))


def _both_save_memory_1(a: Path, b: Path) -> None:
    """Sequential ids: A's memory 1 pushed, then B's own memory 1: B's sync renumbers it to 2."""
    for root in (a, b):
        git(root, "config", "slayer-kb.ids", "sequential")
    KnowledgeBase(a).save_memory("A: one of A's, about the orders table and its amounts.", ["orders.amount"])
    sync(KnowledgeBase(a))
    assert KnowledgeBase(b).save_memory("B: one of B's, about refunds booked as negative amounts.",
                                        ["orders.amount"]).memory_id == "1"


def _killed_once_its_push_landed(bare: Path, argv: list[str], env: dict[str, str] | None = None) -> None:
    """``slayer-kb ARGV`` (a sync) as a process group, killed (kill -9) while the remote's slow
    post-receive hook holds its push: once the remote's main moved."""
    _hook(bare / "hooks" / "post-receive", SLOW_POST_RECEIVE)
    before = git(bare, "rev-parse", "main").strip()
    proc = subprocess.Popen([sys.executable, "-m", "slayer_kb", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, **(env or {})), start_new_session=True)
    try:
        eventually(lambda: git(bare, "rev-parse", "main").strip() != before, "the push landed on the remote", 60)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    (bare / "hooks" / "post-receive").unlink()


def _settled_as_relayed(b: Path, capfd: pytest.CaptureFixture[str]) -> str:
    """What a client says of a sync its server's write process ran and was killed in, here: the
    state such a sync leaves (its pull record naming its request), settled in the client."""
    request = "d" * 32
    pulls = Pulls(KnowledgeBase(b).store, "main")
    pull = pulls.read()
    assert pull is not None
    pulls.write(dataclasses.replace(pull, request=request))
    assert settle((str(b), request), ["--kb", str(b), "sync"], relay.WRITE_PROCESS) is None  # run in the client
    return capfd.readouterr().err


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
@pytest.mark.parametrize("moved", ["fold", "renumbering"])
def test_a_sync_killed_once_its_push_landed_is_said_by_the_next_run(team, invoke_cli, capfd, moved: str) -> None:
    """B's sync folded B's memory into A's (one topic key), or renumbered B's 1 that A had used,
    pushed, and was killed while the remote's post-receive hook ran: the next sync said "up to
    date" with nothing merged or renumbered, and B's agent, holding the id, was never told in the
    sync's output that it moved. A client whose server's write process was killed there said it
    had stopped "before it finished", not that the push had begun and may have landed."""
    bare, (a, b) = team
    (_both_save_one_topic_key if moved == "fold" else _both_save_memory_1)(a, b)
    _killed_once_its_push_landed(bare, ["--kb", str(b), "sync"], {"SLAYER_KB_SERVER": "off"})
    assert _settled_as_relayed(b, capfd) == (
        "slayer-kb: the server's write process stopped while running this command, after it had moved the branch "
        "to take in origin/main and begun its push, which may have landed (only the remote can tell); running it "
        "in this process, which finishes it and says what it did.\n")
    said = ({"merged": {str(BLOCK + 1): "1"}, "renumbered": {}} if moved == "fold"
            else {"merged": {}, "renumbered": {"1": "2"}})
    rerun = json.loads(invoke_cli("--kb", b, "--json", "sync", check=True).stdout)
    assert (rerun["action"], rerun["pushed"], rerun["merged"], rerun["renumbered"]) == (
        "up to date", 0, said["merged"], said["renumbered"])
    # Said once: the sync after says nothing more.
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_sync_killed_once_its_copy_of_the_upstream_moved_is_said_by_the_next_run(team, run_cli,
                                                                                   invoke_cli, capfd) -> None:
    """Killed after its push, once it had moved its copy of origin/main: the next sync found
    nothing to fetch or push and answered at once, "up to date", without the fold. A client whose
    server's write process was killed there is told that the push landed."""
    _bare, (a, b) = team
    _both_save_one_topic_key(a, b)
    _hook(b / ".git" / "hooks" / "reference-transaction", KILL_AT_THE_COPY)
    assert run_cli("--kb", b, "sync").returncode == -9
    assert not (b / ".git" / "hooks" / "reference-transaction").exists()
    assert git(b, "rev-parse", "origin/main") == git(b, "rev-parse", "HEAD")
    assert _settled_as_relayed(b, capfd) == (
        "slayer-kb: the server's write process stopped while running this command, after it had taken in "
        "origin/main and pushed, before it said what it did; running it in this process, which says it.\n")
    assert invoke_cli("--kb", b, "sync", check=True).stdout == (
        "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"
        "  merged both sides of: sessions/manual-save-api.yaml\n"
        f"  merged (same topic key): {BLOCK + 1} into 1\n")


@pytest.mark.slow  # a warm server's write process killed (fault injection)
@pytest.mark.skipif(not relay.SUPPORTED, reason="commands are relayed on POSIX systems only")
def test_a_client_whose_write_process_was_killed_in_the_push_says_it_landed_and_the_fold(team) -> None:
    """Through the warm server, its write process killed while the remote's post-receive hook
    held the sync's push (the push then finished, its git left to end): the client said
    "...before it finished; running it in this process, which finishes it." and then "up to
    date", without the fold the killed sync had pushed."""
    bare, (a, b) = team
    _both_save_one_topic_key(a, b)
    watcher = Watcher(b)
    try:
        watcher.wait_for_line("Watching")
        manual = dict(os.environ, SLAYER_KB_SERVER="manual")

        def client(*args: str) -> subprocess.Popen[str]:
            return subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(b), *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, env=manual)

        # A first write starts the write process.
        assert client("save", "B: a note of B's that starts the write process.", "-e", "orders.amount").wait(60) == 0
        status = relay.control(b, "status")
        assert status is not None and status["writer"] is not None
        writer = int(status["writer"]["pid"])
        _hook(bare / "hooks" / "post-receive", SLOWISH_POST_RECEIVE)
        before = git(bare, "rev-parse", "main").strip()
        syncing = client("sync")
        eventually(lambda: git(bare, "rev-parse", "main").strip() != before, "the push landed on the remote", 60)
        os.kill(writer, signal.SIGKILL)
        out, err = syncing.communicate(timeout=120)
    finally:
        (bare / "hooks" / "post-receive").unlink(missing_ok=True)
        watcher.stop()
    assert syncing.returncode == 0, err
    assert err == (
        "slayer-kb: the server's write process stopped while running this command, after it had taken in "
        "origin/main and pushed, before it said what it did; running it in this process, which says it.\n")
    assert out == ("Synced main with origin: up to date, 0 pulled, 0 pushed.\n"
                   "  merged both sides of: sessions/manual-save-api.yaml\n"
        f"  merged (same topic key): {BLOCK + 1} into 1\n")


def test_a_client_of_a_sync_that_left_no_record_claims_nothing_it_cannot_tell(team, capfd) -> None:
    """A relayed sync rebased B's save onto A's and pushed it, and its write process was killed
    before it answered (nothing of its own committed: a rebase is no commit the request's record
    names). The client said the write process stopped "before it committed anything": false."""
    _bare, (a, b) = team
    KnowledgeBase(a).save_memory("A: a note of A's about the orders table, pushed first.", ["orders.amount"])
    sync(KnowledgeBase(a))
    KnowledgeBase(b).save_memory("B: a note of B's about refunds, rebased onto A's.", ["orders.amount"])
    request = "f" * 32
    kb_b = KnowledgeBase(b)
    kb_b.store.request = request
    assert sync(kb_b).action == "rebased"
    assert settle((str(b), request), ["--kb", str(b), "sync"], relay.WRITE_PROCESS) is None
    assert capfd.readouterr().err == (
        "slayer-kb: the server's write process stopped while running this command, before it moved the branch or "
        "once it had pushed (which of the two cannot be told here); running it in this process, which makes "
        "nothing twice.\n")
