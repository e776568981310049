"""Many agents, one remote, when the remote misbehaves: its ``refs/slayer-kb/*`` deleted or
rewritten, its branch renamed, a sync killed half-way. Ids handed out never change meaning and
nothing is lost or split silently."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import StoreError
from slayer_kb.daemon.settle import settle
from slayer_kb.ops.sync import sync
from slayer_kb.ops.syncfetch import Fetch
from slayer_kb.ops.turn import Turn
from slayer_kb.store.bounded import run_bounded
from slayer_kb.store.gitenv import git_env
from slayer_kb.store.leaseheld import Leases
from slayer_kb.store.leases import BLOCK, NAMESPACE, STATE_FILE, IdLeases
from slayer_kb.store.pulls import Pull, Pulls, moved_by
from slayer_kb.store.repo import GitStore
from testing import default_first, eventually, git, lose_races, make_team


@pytest.fixture
def team(tmp_path: Path) -> tuple[Path, list[Path]]:
    return make_team(tmp_path, 2)


def delete_refs(bare: Path, namespace: str) -> None:
    for ref in git(bare, "for-each-ref", "--format=%(refname)", namespace).split():
        git(bare, "update-ref", "-d", ref)


def test_a_block_ref_deleted_on_the_remote_is_made_again_by_the_next_sync(team) -> None:
    """Someone deleted ``refs/slayer-kb/ids/*`` on the remote (a clean-up, a remote restored from
    its branches only). A clone leasing afterwards took block 0, which A still drew from: both
    handed out 2, and a sync renumbered one of them under the agent holding it. A's sync makes
    the ref again, so the next clone leases above it."""
    bare, (a, b) = team
    kb_a = KnowledgeBase(a)
    assert kb_a.save_memory("A: first", ["orders.amount"]).memory_id == "1"
    sync(kb_a)
    delete_refs(bare, NAMESPACE)
    sync(kb_a)
    assert git(bare, "for-each-ref", "--format=%(refname)", NAMESPACE).split() == [f"{NAMESPACE}0"]
    assert KnowledgeBase(b).save_memory("B: first", ["orders.amount"]).memory_id == str(BLOCK + 1)
    assert kb_a.save_memory("A: second", ["orders.amount"]).memory_id == "2"


def test_a_block_another_clone_leased_meanwhile_is_given_up(team) -> None:
    """The refs were deleted and B leased block 0 before A synced again (A's 1 not pushed, so
    nothing in B's history said the block was A's): A's sync finds B's lease on its block and
    leases another, so the two no longer draw from one block."""
    bare, (a, b) = team
    kb_a, kb_b = KnowledgeBase(a), KnowledgeBase(b)
    assert kb_a.save_memory("A: first", ["orders.amount"]).memory_id == "1"
    delete_refs(bare, NAMESPACE)
    assert kb_b.save_memory("B: first", ["orders.amount"]).memory_id == "1"
    sync(kb_b)
    synced = sync(kb_a)
    assert (synced.given_up, synced.renumbered) == ([f"1-{BLOCK}"], {"1": str(BLOCK + 1)})
    assert kb_a.save_memory("A: after B's lease", ["orders.amount"]).memory_id == str(BLOCK + 2)
    assert kb_b.save_memory("B: second", ["orders.amount"]).memory_id == "2"
    assert sync(kb_b).renumbered == {}
    assert sync(kb_a).renumbered == {}


def test_a_lease_makes_again_the_refs_of_this_clones_blocks_the_remote_lost(team) -> None:
    """The refs were deleted and A, its 1 not pushed yet, used up block 0 and leased the next: the
    lease made block 1's ref only, and B, whose history held none of A's ids, leased block 0, A's.
    A lease makes this clone's lost refs again, as a sync does."""
    bare, (a, b) = team
    assert KnowledgeBase(a).save_memory("A: first", ["orders.amount"]).memory_id == "1"
    delete_refs(bare, NAMESPACE)
    ids = IdLeases(GitStore(a)).take(BLOCK, 1, lambda n: (a / "memories" / f"{n}.yaml").exists())
    assert ids[-2:] == [str(BLOCK), str(BLOCK + 1)]
    assert git(bare, "for-each-ref", "--format=%(refname)", NAMESPACE).split() == [f"{NAMESPACE}0", f"{NAMESPACE}1"]
    assert KnowledgeBase(b).save_memory("B: first", ["orders.amount"]).memory_id == str(2 * BLOCK + 1)


def test_a_block_another_clone_took_supplies_no_id_to_the_same_syncs_renumbering(team, invoke_cli) -> None:
    """The refs were deleted and B leased block 0 (A's 1 not pushed yet); A's sync renumbered its
    1 from the block it gave up only after its push: B's next save was that id as well, and B's
    sync renumbered it. The block is given up before the renumbering, and the sync says so, and
    why it renumbered."""
    bare, (a, b) = team
    kb_b = KnowledgeBase(b)
    invoke_cli("--kb", a, "save", "A: first", "-e", "shop.orders.amount", check=True)
    delete_refs(bare, NAMESPACE)
    assert kb_b.save_memory("B: first", ["orders.amount"]).memory_id == "1"
    sync(kb_b)
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
        f"  note: ids 1-{BLOCK} are another clone's now (origin lost this clone's lease of them, and another "
        "clone leased them); "
        "this clone draws no more ids from them\n"
        f"  renumbered: 1 -> {BLOCK + 1} (origin had already used 1 for another memory: another clone leased ids "
        f"1-{BLOCK} too)\n")
    assert kb_b.save_memory("B: second", ["orders.amount"]).memory_id == "2"
    assert sync(kb_b).renumbered == {}


def test_a_fetch_repeated_while_waiting_for_the_turn_leaves_the_block_refs_out(team, monkeypatch, tmp_path: Path) -> None:
    """A sync waiting for another clone's turn fetches again every ~0.25 s; each fetch carried the
    block refs (165-280 ms more at 500-2000 refs). They are fetched once a sync."""
    _bare, (a, _b) = team
    kb = KnowledgeBase(a)
    kb.save_memory("A: first", ["orders.amount"])
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    fetch = Fetch(kb.store, kb.leases, "origin", "main", "refs/remotes/origin/main", Turn(kb.store, "origin", "main"))
    fetch()
    fetch()
    fetches = [line for line in trace.read_text().splitlines() if "git fetch" in line and "built-in" in line]
    assert [f"{NAMESPACE}*" in line for line in fetches] == [True, False]


def test_a_block_ref_pointing_at_garbage_is_not_drawn_from(team) -> None:
    """The remote's ref of A's block points at something A never pushed: A cannot tell who holds
    the block, so it draws from another."""
    bare, (a, _b) = team
    kb_a = KnowledgeBase(a)
    assert kb_a.save_memory("A: first", ["orders.amount"]).memory_id == "1"
    sync(kb_a)
    git(bare, "update-ref", f"{NAMESPACE}0", git(bare, "rev-parse", "main").strip())
    sync(kb_a)
    assert kb_a.save_memory("A: second", ["orders.amount"]).memory_id == str(BLOCK + 1)


def test_a_block_whose_holder_commit_this_clone_lost_is_made_again(team) -> None:
    """The commit A's block ref pointed at is gone from A's objects (pruned once unreachable,
    after the remote's ref was deleted): the push that makes the refs again failed for every
    block (``fatal: bad object``), silently, and B leased block 0 while A still drew from it:
    both handed out one id. The ref is made again at a new commit."""
    bare, (a, b) = team
    kb_a = KnowledgeBase(a)
    assert kb_a.save_memory("A: first", ["orders.amount"]).memory_id == "1"
    sync(kb_a)
    state = a / ".git" / "slayer-kb-ids.json"
    held = json.loads(state.read_text())
    held["holders"]["0"] = "1" * 40  # an object A does not have
    state.write_text(json.dumps(held))
    delete_refs(bare, NAMESPACE)
    sync(kb_a)
    assert git(bare, "for-each-ref", "--format=%(refname)", NAMESPACE).split() == [f"{NAMESPACE}0"]
    assert KnowledgeBase(b).save_memory("B: first", ["orders.amount"]).memory_id == str(BLOCK + 1)
    assert kb_a.save_memory("A: second", ["orders.amount"]).memory_id == "2"
    assert json.loads(state.read_text())["holders"]["0"] == git(bare, "rev-parse", f"{NAMESPACE}0").strip()


def go_on(refused: str, where: Path) -> None:
    """Run the steps a refusal printed to go on with trunk (but its sync), as a user pastes them."""
    steps = refused.partition("To go on with trunk: ")[2].partition(" && slayer-kb sync. ")[0]
    subprocess.run(steps, shell=True, cwd=where, check=True, capture_output=True)  # noqa: S602


def test_a_sync_after_the_remotes_main_was_renamed_refuses_to_make_it_again(team, invoke_cli) -> None:
    """The remote's ``main`` was renamed ``trunk`` (its default branch now). A's sync pushed to
    ``main`` as a branch of the first push, beside ``trunk``: half the team's memories went one
    way, half the other, and nothing said so. It refuses, and its steps go on with trunk, in a
    clone made with --single-branch too (whose plain ``git fetch origin`` got no origin/trunk, so
    ``git branch -u origin/trunk`` failed and the steps after it ran on regardless)."""
    bare, (a, b) = team
    git(a, "config", "remote.origin.fetch", "+refs/heads/main:refs/remotes/origin/main")  # as --single-branch sets
    git(bare, "branch", "-m", "main", "trunk")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/trunk")
    invoke_cli("--kb", a, "save", "A: after the rename", "-e", "shop.orders.amount", check=True)
    refused = invoke_cli("--kb", a, "sync", cwd=a.parent)
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: origin has no branch 'main' any more, and its default branch is now 'trunk' (renamed, or the default "
        "changed): a sync would make 'main' again beside it, and the team's memories would part between the two. "
        "Nothing was pulled or sent. To go on with trunk: cd a && git remote set-branches origin trunk && git "
        "fetch origin && git branch -m main trunk && git branch -u origin/trunk && git remote set-head origin -a && "
        "slayer-kb sync. To make 'main' again on origin instead: git -C a push -u origin main.\n"))
    assert git(bare, "for-each-ref", "--format=%(refname)", "refs/heads/").split() == ["refs/heads/trunk"]
    go_on(refused.stderr, a.parent)
    assert invoke_cli("--kb", a, "sync", check=True).stdout == "Synced trunk with origin: pushed, 0 pulled, 1 pushed.\n"
    # A clone that fetches every branch is not told to change what it fetches.
    refused = invoke_cli("--kb", b, "sync", cwd=b.parent)
    assert "To go on with trunk: cd b && git fetch origin && git branch -m main trunk && " in refused.stderr
    go_on(refused.stderr, b.parent)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced trunk with origin: fast-forward, 1 pulled, 0 pushed.\n"
    # A clone that never knew main as the remote's default (an agent's branch, deleted once
    # merged) makes its branch again at its next sync, as a first push does.
    git(b, "switch", "-q", "-c", "agent-b")
    git(b, "push", "-q", "-u", "origin", "agent-b")
    git(bare, "branch", "-D", "agent-b")
    invoke_cli("--kb", b, "save", "B: on its branch", "-e", "shop.orders.amount", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout.startswith("Synced agent-b with origin: pushed")


def test_a_fetch_that_fails_for_a_local_reason_is_not_taken_for_a_renamed_branch(team, invoke_cli) -> None:
    """The remote's default is now 'develop', made beside main (kept). A's fetch failed for a
    local reason (a lock a killed git left on the tracking ref) and the sync refused as if main
    were gone. The remote still has main: the sync stops with git's own words."""
    bare, (a, b) = team
    git(bare, "branch", "develop", "main")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/develop")
    invoke_cli("--kb", b, "save", "B: first", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)  # main moves: A's fetch must update its copy
    (a / ".git" / "refs" / "remotes" / "origin" / "main.lock").write_text("")
    invoke_cli("--kb", a, "save", "A: first", "-e", "shop.orders.amount", check=True)
    failed = invoke_cli("--kb", a, "sync", cwd=a.parent)
    assert failed.returncode == 1
    assert failed.stderr.startswith(
        "Error: git fetch from origin failed, though origin answers and has 'main': error: cannot lock ref "
        "'refs/remotes/origin/main'")
    assert failed.stderr.endswith("Fix what git names, then run slayer-kb --kb a sync again.\n")
    assert "no branch 'main' any more" not in failed.stderr


# A pre-push hook that kills the sync running git push (its parent's parent) with SIGKILL.
KILL_THE_SYNC = "#!/bin/sh\nkill -9 $(ps -o ppid= -p $PPID)\nsleep 5\nexit 1\n"


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_sync_killed_in_its_push_still_says_where_a_folded_memory_went(team, run_cli, invoke_cli) -> None:
    """B's sync folded B's memory 101 into A's 1 (one topic key), then was killed (kill -9) while
    it pushed. The moves were recorded only after the push: B's agent, holding 101, was told
    "No memory with id '101'", and the next sync pushed the fold without a word."""
    _bare, (a, b) = team
    kb_a, kb_b = KnowledgeBase(a), KnowledgeBase(b)
    kb_a.save_observation("Retry budget", "Three retries.", type="decision", project="api",
                          topic_key="decision/retry-budget")
    sync(kb_a)
    theirs = kb_b.save_observation("Retry budget", "Five retries.", type="decision", project="api",
                                   topic_key="decision/retry-budget")
    assert theirs.memory_id == str(BLOCK + 1)
    hook = b / ".git" / "hooks" / "pre-push"
    hook.write_text(KILL_THE_SYNC)
    hook.chmod(0o755)
    killed = run_cli("--kb", b, "sync")
    assert killed.returncode == -9
    hook.unlink()
    moved = (f"Error: Memory id '{BLOCK + 1}' moved: sync merged this clone's memory {BLOCK + 1} into 1, which the "
             f"upstream holds under the same topic key; no memory has id '{BLOCK + 1}' now.")
    assert invoke_cli("--kb", b, "get", str(BLOCK + 1)).stderr.startswith(moved)
    # The killed sync said nothing: the one that pushes the fold says it, and the session file it merged.
    assert invoke_cli("--kb", b, "sync", check=True).stdout == (
        "Synced main with origin: pushed, 0 pulled, 2 pushed.\n  merged both sides of: sessions/manual-save-api.yaml\n"
        f"  merged (same topic key): {BLOCK + 1} into 1\n")
    assert invoke_cli("--kb", b, "get", str(BLOCK + 1)).stderr.startswith(moved)


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie no parent reaped yet does not)."""
    state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True, check=False)
    return bool(state.stdout.strip()) and not state.stdout.strip().startswith("Z")


def test_a_fetch_stopped_past_its_bound_stops_what_git_started(team, monkeypatch, tmp_path: Path) -> None:
    """A remote that stops answering (an ssh that hangs; here the remote's upload-pack): the sync
    stopped git past SLAYER_KB_SYNC_TIMEOUT, and git's child ran on, for ever if it hangs: one
    more process left behind by each sync, in the warm server's group too."""
    _bare, (a, _b) = team
    started = tmp_path / "upload-pack.pid"
    KnowledgeBase(a).save_memory("A: first", ["orders.amount"])
    git(a, "config", "remote.origin.uploadpack", f"sleep 600 & echo $$ $! > {started}; wait; true")
    monkeypatch.setenv("SLAYER_KB_SYNC_TIMEOUT", "1")
    with pytest.raises(StoreError, match="did not finish within 1 s and was stopped"):
        sync(KnowledgeBase(a))
    for pid in map(int, started.read_text().split()):  # git's shell, and what the shell started
        eventually(lambda pid=pid: not running(pid), f"process {pid} of the hanging upload-pack stopped")


# A reference-transaction hook that kills the sync (git's parent) once its branch has moved, the
# first time only.
KILL_AT_THE_FIRST_MOVE = """#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q -E ' (HEAD|refs/heads/main)$' || exit 0
rm -f "$0"
kill -9 $(ps -o ppid= -p $PPID)
"""


def _both_save_memory_1(a: Path, b: Path) -> None:
    """Sequential ids: A's memory 1 pushed, then B's own memory 1 saved before B syncs."""
    for root in (a, b):
        git(root, "config", "slayer-kb.ids", "sequential")
    KnowledgeBase(a).save_memory("A: one", ["orders.amount"])
    sync(KnowledgeBase(a))
    assert KnowledgeBase(b).save_memory("B: one", ["orders.amount"]).memory_id == "1"


def _b_links_what_a_forgets(a: Path, b: Path) -> tuple[str, str]:
    """A saves a memory both clones sync, then forgets it (not yet synced); B saves a memory
    linking it: the ids of A's memory and B's."""
    kept = KnowledgeBase(a).save_memory("A: the orders table holds one row per order, refunds apart.",
                                        ["shop.orders"]).memory_id
    sync(KnowledgeBase(a))
    sync(KnowledgeBase(b))
    KnowledgeBase(a).forget(kept)
    mine = KnowledgeBase(b).save_memory("B: refunds are booked as negative order amounts in the same table.",
                                        ["shop.orders", f"memory:{kept}"]).memory_id
    return kept, mine


def _sync_killed_at_the_first_move(b: Path, run_cli) -> None:
    """B's sync, killed (kill -9) by a git hook as it first moves B's branch (the hook, run once,
    removes itself)."""
    hook = b / ".git" / "hooks" / "reference-transaction"
    hook.write_text(KILL_AT_THE_FIRST_MOVE)
    hook.chmod(0o755)
    assert run_cli("--kb", b, "sync").returncode == -9
    assert not hook.exists()


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_sync_killed_once_it_renumbered_says_where_the_memory_went(team, run_cli, invoke_cli) -> None:
    """Sequential ids: B's 1 collided with A's 1 and B's sync renumbered it, then was killed
    (kill -9) before it pushed. The move was not recorded: 'get 1' on B answered with A's memory,
    as though it were the one B's agent saved."""
    _bare, (a, b) = team
    _both_save_memory_1(a, b)
    _sync_killed_at_the_first_move(b, run_cli)
    assert git(b, "log", "-1", "--format=%s").strip() == "memory: save 2 (renumber 1 -> 2)"
    assert invoke_cli("--kb", b, "get", "1").stderr.startswith(
        "Error: Memory id '1' moved: sync renumbered this clone's memory 1 to 2, because the upstream had already "
        "used 1 for another memory;")
    assert invoke_cli("--kb", b, "sync", check=True).stdout.startswith("Synced main with origin: rebased, 1 pulled")



def test_a_sync_that_renumbered_and_then_failed_takes_back_the_move_it_recorded(team, invoke_cli) -> None:
    """A sync records the ids it moves before its branch moves (killed before it pushed, a command
    on the old id refuses); one that fails after that puts the clone back, and the record with it:
    kept, 'get 1' on B said B's memory 1 had moved to 2, which the branch put back never did."""
    bare, (a, b) = team
    _both_save_memory_1(a, b)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'pushes are closed for the night'\nexit 1\n")
    hook.chmod(0o755)
    head = git(b, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", b, "sync")
    assert refused.returncode == 1 and "pushes are closed for the night" in refused.stderr
    assert git(b, "rev-parse", "HEAD") == head
    got = invoke_cli("--kb", b, "get", "1")
    assert (got.returncode, got.stderr) == (0, "")
    assert "B: one" in got.stdout

def test_a_sync_in_a_rebase_left_stopped_says_so(team, invoke_cli) -> None:
    """A sync killed in its ``git rebase`` (the fallback for what the replay does not merge)
    leaves the rebase stopped and HEAD detached. The next sync said "HEAD is detached; check out a
    branch", whose step leaves the rebase's state behind for every later command to trip on."""
    _bare, (a, _b) = team
    KnowledgeBase(a).save_memory("A: first", ["orders.amount"])
    stopped = subprocess.run(["git", "rebase", "-q", "--exec", "false", "HEAD~1"], cwd=a, capture_output=True, check=False)
    assert stopped.returncode != 0 and (a / ".git" / "rebase-merge").is_dir()
    assert invoke_cli("--kb", a, "sync").stderr == (
        "Error: You are in the middle of a rebase (rebase-merge exists). Conclude it with `slayer-kb rebase "
        "--continue` (git's, with the KB's merge driver) or abort it with `slayer-kb rebase --abort`, then run the "
        "command again.\n")


def test_a_history_made_anew_counts_only_the_commits_pushed_again(team, invoke_cli) -> None:
    """The remote's main made anew from the same files (a new root commit: a history filtered, or
    the repository re-created): the sync said the rewrite dropped every commit the clone held and
    that they "were pushed again", beside "1 pushed": only A's save was; the others' changes were
    there already."""
    bare, (a, _b) = team
    invoke_cli("--kb", a, "save", "A: first", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    anew = git(bare, "commit-tree", "main~1^{tree}", "-m", "The KB, its history made anew").strip()
    git(bare, "update-ref", "refs/heads/main", anew)
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
        "  note: origin/main was rewritten (a force push) without 1 commit(s) this clone held; they were pushed "
        "again (to take a memory out, forget it)\n")


def test_a_solo_kbs_one_remote_under_another_name_is_not_leased_from(tmp_path: Path, invoke_cli) -> None:
    """A KB whose one remote is someone else's (a read-only mirror under ``upstream``, the branch
    tracking nothing): taken for the remote to lease from, every save asked it for a block, the
    push was refused, and the saves were numbered 8405000101, 8405000102 ... offline. A remote
    that is neither the branch's, nor origin, nor named by slayer-kb.remote is not leased from."""
    bare, (a,) = make_team(tmp_path, 1)
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'read-only mirror' >&2\nexit 1\n")
    hook.chmod(0o755)
    git(a, "remote", "rename", "origin", "upstream")
    git(a, "branch", "--unset-upstream")
    saved = [invoke_cli("--kb", a, "save", f"solo {n}", "-e", "shop.orders.amount", check=True).stdout
             for n in ("one", "two")]
    assert [line.split(" (")[0] for line in saved] == ["Saved memory 1", "Saved memory 2"]


def test_a_git_stopped_past_its_bound_looks_for_ps_in_absolute_folders_only(monkeypatch, tmp_path: Path) -> None:
    """PATH holds a relative folder (``bin``): the ``ps`` that lists what a stopped git started
    was looked up in it, against the current folder (a cloned KB's tracked ``bin/ps`` ran as the
    user). It is looked up as git is, in PATH's absolute folders."""
    (tmp_path / "bin").mkdir()
    planted = tmp_path / "bin" / "ps"
    planted.write_text(f"#!/bin/sh\ntouch {tmp_path / 'planted-ps-ran'}\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "bin" + os.pathsep + os.environ["PATH"])
    with pytest.raises(subprocess.TimeoutExpired):
        run_bounded(["sleep", "60"], tmp_path, None, git_env(), timeout=0.1)
    assert not (tmp_path / "planted-ps-ran").exists()


# A reference-transaction hook that refuses to move the clone's copy of origin/main to HEAD: the
# push has landed, and what follows it here fails.
REFUSE_THE_COPY = """#!/bin/sh
[ "$1" = prepared ] || exit 0
head=$(git rev-parse HEAD)
while read old new ref; do
  [ "$ref" = refs/remotes/origin/main ] && [ "$new" = "$head" ] && { echo "hook: refusing $ref" >&2; exit 1; }
done
exit 0
"""


def pushed_renumbered(team, invoke_cli, monkeypatch, hook: Path, script: str, timeout: str | None) -> None:
    """B's sync renumbers its 1 to 2 and pushes; the push lands but fails (or is stopped) after."""
    bare, (a, b) = team
    for clone in (a, b):
        git(clone, "config", "slayer-kb.ids", "sequential")
    invoke_cli("--kb", a, "save", "A: first", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "B: first", "-e", "shop.orders.amount", check=True)
    hook.write_text(script)
    hook.chmod(0o755)
    if timeout is not None:
        monkeypatch.setenv("SLAYER_KB_SYNC_TIMEOUT", timeout)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n  renumbered: 1 -> 2 (origin had already used 1 for another memory)\n")
    hook.unlink()
    monkeypatch.delenv("SLAYER_KB_SYNC_TIMEOUT", raising=False)
    assert invoke_cli("--kb", b, "get", "2", check=True).stdout.splitlines()[-1] == "B: first"
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: up to date, 0 pulled, 0 pushed.\n"
    assert git(bare, "grep", "-l", "B: first", "main", "--", "memories/").split() == ["main:memories/2.yaml"]


def test_a_push_that_landed_then_failed_here_is_done(team, invoke_cli, monkeypatch) -> None:
    """The push landed, then the clone could not move its copy of origin/main: the sync undid
    the renumbering and said the push failed, and the next sync pushed the memory again as 3.
    Now ls-remote shows the push landed: the sync is done, the move kept."""
    b = team[1][1]
    pushed_renumbered(team, invoke_cli, monkeypatch, b / ".git" / "hooks" / "reference-transaction",
                      REFUSE_THE_COPY, None)


def test_a_push_stopped_in_the_remotes_slow_post_receive_hook_is_done(team, invoke_cli, monkeypatch) -> None:
    """The remote's post-receive hook (a CI trigger) ran past SLAYER_KB_SYNC_TIMEOUT after the
    refs moved: the same undoing, and the same memory pushed again. Now, as above, done."""
    pushed_renumbered(team, invoke_cli, monkeypatch, team[0] / "hooks" / "post-receive", "#!/bin/sh\nsleep 60\n", "1")


def _both_save_one_topic_key(a: Path, b: Path) -> tuple[str, str]:
    """A and B each save decision/k; A's is pushed first, so B's sync must fold B's into A's:
    their ids, A's first."""
    ids = tuple(KnowledgeBase(root).save_observation("K", f"{who}: the key's decision, as {who} saw it.",
                                                     type="decision", project="api", topic_key="decision/k").memory_id
                for root, who in ((a, "A"), (b, "B")))
    sync(KnowledgeBase(a))
    return ids[0], ids[1]


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_sync_killed_once_its_branch_moved_onto_the_upstream_folds_on_the_next_run(team, run_cli,
                                                                                      invoke_cli) -> None:
    """B's sync moved B's branch onto A's (one topic key saved on both) and was killed (kill -9)
    before it folded B's memory into A's. The next sync found nothing to pull and pushed both
    holders of the key without a word ('pushed, 0 pulled, 2 pushed'); main no longer validated."""
    _bare, (a, b) = team
    _both_save_one_topic_key(a, b)
    _sync_killed_at_the_first_move(b, run_cli)
    assert git(b, "merge-base", "--is-ancestor", "origin/main", "HEAD") == ""  # moved onto A's, not folded
    assert git(b, "log", "-1", "--format=%s").strip() == f"memory: save {BLOCK + 1} (decision: K)"
    assert run_cli("--kb", b, "sync").stdout == (
        "Synced main with origin: pushed, 0 pulled, 2 pushed.\n"
        f"  merged (same topic key): {BLOCK + 1} into 1\n")
    assert git(b, "log", "-1", "--format=%s", "origin/main").strip() == (
        f"memory: merge {BLOCK + 1} into 1 (topic decision/k)")
    assert invoke_cli("--kb", b, "validate", check=True).returncode == 0


def test_a_pull_record_is_its_branchs_own(team) -> None:
    """One record a worktree: a sync of another branch there overwrote a killed sync's record of
    main and removed it once it pushed, and main's next sync owed nothing, pushing unfolded."""
    _bare, (_a, b) = team
    store = KnowledgeBase(b).store
    head = git(b, "rev-parse", "HEAD").strip()
    owed = Pull("main", head, head, head, head, "origin/main", "")
    Pulls(store, "main").write(owed)
    side = Pulls(store, "side")
    side.write(Pull("side", head, head, head, head, "origin/side", "e" * 32))
    assert moved_by(store, "e" * 32) is None  # its branch did not move
    side.done()
    assert Pulls(store, "main").owed("main") == owed and Pulls(store, "side").owed("side") is None


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_the_rerun_of_a_killed_sync_claims_no_other_clones_fold(tmp_path: Path, run_cli, invoke_cli) -> None:
    """After B's sync was killed, C folded its own save of the key into A's and pushed; B's rerun
    lost a race and retried onto C's push, and read C's fold commit as one its killed sync made:
    it said 'merged ... C's id into 1' and recorded the move, so 'get' of C's id on B told of a
    fold of this clone's memory and a wrong fix."""
    bare, (a, b, c) = make_team(tmp_path, 3)
    _both_save_one_topic_key(a, b)
    _sync_killed_at_the_first_move(b, run_cli)
    theirs = KnowledgeBase(c).save_observation("K", "C: the key's decision, as C saw it.", type="decision",
                                               project="api", topic_key="decision/k").memory_id
    assert sync(KnowledgeBase(c)).merged == {theirs: "1"}
    lose_races(bare, 1)
    assert run_cli("--kb", b, "sync").stdout == (
        "Synced main with origin: rebased, 3 pulled, 2 pushed.\n"
        "  merged both sides of: memories/1.yaml\n"
        f"  merged (same topic key): {BLOCK + 1} into 1\n")
    # What the history says (C's fold), never that B's sync folded a memory of B's.
    fold = git(b, "log", "-1", "--format=%h", "--abbrev=12", f"--grep=merge {theirs} into 1").strip()
    assert invoke_cli("--kb", b, "get", theirs).stderr == (
        f"Error: No memory with id '{theirs}'. It was merged into '1' in commit {fold}, the memory kept under the "
        "same topic key; use that id.\n")


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_sync_killed_once_its_branch_moved_strips_links_to_what_the_upstream_forgot_on_the_next_run(
        team, run_cli, invoke_cli) -> None:
    """B linked A's memory, which A forgot meanwhile; B's sync moved B's branch onto A's and was
    killed before it stripped the link. The next sync, which found nothing to pull, refused to push
    a link to no memory and told the user to edit it by hand."""
    _bare, (a, b) = team
    kept, mine = _b_links_what_a_forgets(a, b)
    sync(KnowledgeBase(a))
    _sync_killed_at_the_first_move(b, run_cli)
    assert git(b, "merge-base", "--is-ancestor", "origin/main", "HEAD") == ""
    assert run_cli("--kb", b, "sync").stdout == (
        "Synced main with origin: pushed, 0 pulled, 2 pushed.\n"
        f"  stripped links to forgotten memories: memory:{kept} from {mine}\n")
    assert f"memory:{kept}" not in (b / "memories" / f"{mine}.yaml").read_text()


# A reference-transaction hook that kills the sync once its branch has moved twice (the rebase,
# then the first commit made on it), the first time only.
KILL_AT_THE_SECOND_MOVE = KILL_AT_THE_FIRST_MOVE.replace(
    'rm -f "$0"', '[ -f "$0.moved" ] || { touch "$0.moved"; exit 0; }\nrm -f "$0" "$0.moved"')


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_sync_killed_between_its_fold_and_its_strips_strips_on_the_next_run(team, run_cli, invoke_cli) -> None:
    """Killed once it had folded B's memory into A's (one topic key) and before it stripped B's
    link to a memory A forgot, or recorded the fold: the next sync strips it, folds nothing twice
    and says and records the fold (a command on B's old id said "No memory with id")."""
    _bare, (a, b) = team
    kept, mine = _b_links_what_a_forgets(a, b)
    theirs, ours = _both_save_one_topic_key(a, b)
    hook = b / ".git" / "hooks" / "reference-transaction"
    hook.write_text(KILL_AT_THE_SECOND_MOVE)
    hook.chmod(0o755)
    assert run_cli("--kb", b, "sync").returncode == -9
    assert not hook.exists()
    assert git(b, "log", "-1", "--format=%s").strip() == f"memory: merge {ours} into {theirs} (topic decision/k)"
    assert run_cli("--kb", b, "sync").stdout == (
        "Synced main with origin: pushed, 0 pulled, 4 pushed.\n"
        f"  merged (same topic key): {ours} into {theirs}\n"
        f"  stripped links to forgotten memories: memory:{kept} from {mine}\n")
    assert invoke_cli("--kb", b, "get", ours).stderr.startswith(f"Error: Memory id '{ours}' moved: sync merged")
    assert git(b, "log", "-4", "--format=%s", "origin/main").split("\n")[:2] == [
        f"memory: strip links to forgotten {kept} from {mine}",
        f"memory: merge {ours} into {theirs} (topic decision/k)"]
    assert invoke_cli("--kb", b, "validate", check=True).returncode == 0


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_client_whose_servers_sync_moved_the_branch_says_so_and_finishes_it(team, run_cli, invoke_cli,
                                                                                capfd: pytest.CaptureFixture[str]) -> None:
    """The warm server's write process was killed once its sync had moved B's branch onto A's,
    before the fold. The client said the server "stopped ... before it committed anything",
    which was false: the branch had moved (the state is made by a sync killed there, whose pull
    record then names the relayed request, as the server's names it)."""
    _bare, (a, b) = team
    _both_save_one_topic_key(a, b)
    _sync_killed_at_the_first_move(b, run_cli)
    request = "e" * 32
    pulls = Pulls(KnowledgeBase(b).store, "main")
    pull = pulls.read()
    assert pull is not None
    pulls.write(dataclasses.replace(pull, request=request))
    assert settle((str(b), request), ["--kb", str(b), "sync"]) is None  # run in the client
    assert capfd.readouterr().err == (
        "slayer-kb: the server stopped while running this command, after it had moved the branch to take in "
        "origin/main, before it pushed; running it in this process, which finishes it.\n")
    assert invoke_cli("--kb", b, "sync", check=True).stdout == (
        "Synced main with origin: pushed, 0 pulled, 2 pushed.\n"
        f"  merged (same topic key): {BLOCK + 1} into 1\n")


def _save(invoke_cli, kb: Path, text: str) -> str:
    """What ``slayer-kb save`` printed first: ``Saved memory N (created)``."""
    return invoke_cli("--kb", kb, "save", text, "-e", "shop.orders.amount", check=True).stdout.splitlines()[0]


def _learning(invoke_cli, kb: Path, memory_id: str) -> str:
    """The text of memory ``memory_id`` as ``slayer-kb get`` shows it in ``kb``."""
    return invoke_cli("--kb", kb, "get", memory_id, check=True).stdout.rstrip("\n").rsplit("\n", 1)[-1]


def _two_agents_one_unsynced(invoke_cli, x: Path, y: Path) -> None:
    """x saved 1 and y saved 101, both synced and pulled; y saved 102, not synced yet."""
    assert _save(invoke_cli, x, "x first") == "Saved memory 1 (created)"
    invoke_cli("--kb", x, "sync", check=True)
    assert _save(invoke_cli, y, "y first") == f"Saved memory {BLOCK + 1} (created)"
    invoke_cli("--kb", y, "sync", check=True)
    invoke_cli("--kb", x, "sync", check=True)
    assert _save(invoke_cli, y, "y second") == f"Saved memory {BLOCK + 2} (created)"


@pytest.mark.parametrize("new_clone", default_first([False, True]))
def test_a_remote_moved_by_its_branches_alone_changes_no_agents_id(team, invoke_cli, new_clone: bool) -> None:
    """The team moved its remote by pushing its branches ('git push NEW main', a forge's import, a
    bundle: refs/slayer-kb/* stay behind) and set its url in each clone. x's fresh lease on NEW
    went just above 101 and took y's block: x's next save was 102, the id y's unsynced save had
    returned, and y's sync renumbered y's 102 to 201 (no reason given). A new clone z of NEW took
    block 0 alike (ids 2-100), x's block, while x's 2 was unsynced: x's sync renumbered it. The
    clones keep their blocks and register them on NEW; a new clone leases above every block the
    history holds an id of."""
    old, (x, y) = team
    _two_agents_one_unsynced(invoke_cli, x, y)
    if new_clone:  # x's 2 made before the move, unsynced, as y's 102
        assert _save(invoke_cli, x, "x second") == "Saved memory 2 (created)"
    new = old.parent / "new.git"
    git(old.parent, "init", "-q", "--bare", "-b", "main", str(new))
    git(old, "push", "-q", str(new), "main")
    for kb in (x, y):
        git(kb, "remote", "set-url", "origin", str(new))
    if not new_clone:
        assert _save(invoke_cli, x, "x second") == "Saved memory 2 (created)"
    else:
        z = old.parent / "z"
        git(old.parent, "clone", "-q", str(new), str(z))
        assert _save(invoke_cli, z, "z first") == f"Saved memory {2 * BLOCK + 1} (created)"
        invoke_cli("--kb", z, "sync", check=True)
    assert invoke_cli("--kb", x, "sync", check=True).stdout == (
        f"Synced main with origin: {'rebased, 1 pulled' if new_clone else 'pushed, 0 pulled'}, 1 pushed.\n")
    assert invoke_cli("--kb", y, "sync", check=True).stdout == (
        f"Synced main with origin: rebased, {2 if new_clone else 1} pulled, 1 pushed.\n")
    for kb in (x, y):
        invoke_cli("--kb", kb, "sync", check=True)
        assert [_learning(invoke_cli, kb, n) for n in ("1", "2", str(BLOCK + 1), str(BLOCK + 2))] == [
            "x first", "x second", "y first", "y second"]
    assert git(new, "for-each-ref", "--format=%(refname)", NAMESPACE).split() == [
        f"{NAMESPACE}{k}" for k in ((0, 1, 2) if new_clone else (0, 1))]


def test_a_new_clone_leases_above_the_blocks_the_history_holds_after_a_mirror_push(team, invoke_cli) -> None:
    """A person's 'git push --mirror' from a plain clone deleted refs/slayer-kb/* on the remote.
    A new clone z, whose history held y's 101, leased block 1 above it, y's block: z's first
    save was 102, the id y's unsynced save had returned, and y's sync renumbered y's 102. z
    leases block 2; y's sync makes its block's ref again."""
    bare, (x, y) = team
    _two_agents_one_unsynced(invoke_cli, x, y)
    person = bare.parent / "person"
    git(bare.parent, "clone", "-q", str(bare), str(person))
    git(person, "push", "-q", "--mirror", "origin")
    assert git(bare, "for-each-ref", "--format=%(refname)", NAMESPACE).split() == []
    z = bare.parent / "z"
    git(bare.parent, "clone", "-q", str(bare), str(z))
    assert _save(invoke_cli, z, "z first") == f"Saved memory {2 * BLOCK + 1} (created)"
    invoke_cli("--kb", z, "sync", check=True)
    assert invoke_cli("--kb", y, "sync", check=True).stdout == "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
    invoke_cli("--kb", z, "sync", check=True)
    for kb in (y, z):
        assert [_learning(invoke_cli, kb, n) for n in (str(BLOCK + 2), str(2 * BLOCK + 1))] == ["y second", "z first"]
    assert git(bare, "for-each-ref", "--format=%(refname)", NAMESPACE).split() == [f"{NAMESPACE}1", f"{NAMESPACE}2"]


def test_an_offline_id_two_clones_drew_is_renumbered_with_the_reason(team, invoke_cli) -> None:
    """Two clones offline drew on one offline block (odds of 1 in 80 million, set here by hand in
    b's lease state): b's sync renumbered its id, without a reason, to the next id of that very
    block, which a handed out next (renumbered again at a's sync). It says why, and the block
    another clone registered first supplies no id to the renumbering."""
    bare, (a, b) = team
    unreachable = str(bare.parent / "unreachable.git")
    for kb in (a, b):
        git(kb, "remote", "set-url", "origin", unreachable)
    drawn = KnowledgeBase(a).save_memory("a on a plane", ["orders.amount"]).memory_id
    block = (int(drawn) - 1) // BLOCK
    home = os.stat(b / ".git")
    (b / ".git" / STATE_FILE).write_text(json.dumps(Leases(
        [home.st_dev, home.st_ino], unreachable, [[block, int(drawn)]], [block]).to_json()))
    assert KnowledgeBase(b).save_memory("b on a train", ["orders.amount"]).memory_id == drawn
    for kb in (a, b):
        git(kb, "remote", "set-url", "origin", str(bare))
    invoke_cli("--kb", a, "sync", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout.splitlines()[-1] == (
        f"  renumbered: {drawn} -> 1 (origin had already used {drawn} for another memory: another clone drew on the "
        "same offline block)")
    # b's renumbering drew no id from the block a is still drawing on.
    assert KnowledgeBase(a).save_memory("a, still offline's block", ["orders.amount"]).memory_id == str(int(drawn) + 1)
    assert sync(KnowledgeBase(a)).renumbered == {}
