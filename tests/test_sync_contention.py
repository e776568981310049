"""sync under contention: the race with other clones (from the fetch to the push) holds only
what must be in it, a refused sync takes the turn that the others respect (ops/turn.py), every
attempt says where its time went, and a sync that gives up leaves the repository as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import ConflictError, IndexLockedError, StoreError
from slayer_kb.core.outcomes import SyncResult
from slayer_kb.ops import sync as syncing
from slayer_kb.ops import turn
from slayer_kb.ops.sync import sync
from slayer_kb.store import indexlock
from testing import eventually, git, lose_races, make_team

# Fault injection and contention (slow suite, .ci/run): kills, hung remotes, held locks.
pytestmark = pytest.mark.slow

TURN = "refs/slayer-kb/turn/main"


def pushes(bare: Path) -> list[list[str]]:
    """The refs each push to ``bare`` named (branches and turns; id leases left out), in order."""
    logged = (bare / "pushes").read_text().split("--\n")
    found = [[line.split()[2] for line in push.splitlines() if " refs/heads/" in line or f" {TURN}" in line]
             for push in logged]
    return [refs for refs in found if refs]


def turns(bare: Path) -> str:
    return git(bare, "for-each-ref", "--format=%(refname)", turn.NAMESPACE)


def tree(root: Path) -> dict[str, str]:
    """Every memory file of the work tree, by name."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted((root / "memories").glob("*.yaml"))}


@pytest.fixture
def diverged(tmp_path: Path) -> tuple[Path, Path, Path, str, str]:
    """Clone ``a`` pushed a memory; clone ``b`` saved one of its own and has not synced yet:
    (remote, a, b, a's id, b's id)."""
    bare, (a, b) = make_team(tmp_path, 2)
    a_id = KnowledgeBase(a).save_memory("Refunds are booked on the day they are paid", ["orders.amount"]).memory_id
    sync(KnowledgeBase(a))
    b_id = KnowledgeBase(b).save_memory("Order amounts exclude shipping", ["orders.amount"]).memory_id
    return bare, a, b, a_id, b_id


def test_every_attempt_says_where_its_time_went(diverged) -> None:
    bare, a, b, a_id, b_id = diverged
    lose_races(bare, 2)
    kb = KnowledgeBase(b)
    result = sync(kb)
    # Pulled: a's memory and the two commits that won the races.
    assert (result.action, result.attempts, result.pulled, result.pushed) == ("rebased", 3, 3, 1)
    assert [list(t) for t in result.timings] == [
        ["lock", "fetch", "pull", "push", "turn"], ["fetch", "pull", "push", "turn"], ["fetch", "pull", "push", "finish"],
    ]
    assert all(seconds >= 0 for t in result.timings for seconds in t.values())
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD")
    # Refused once, it took the turn; each later push moved the branch and gave the turn back
    # in one atomic push, the last one accepted.
    assert pushes(bare) == [["refs/heads/main"], [TURN], ["refs/heads/main", TURN], ["refs/heads/main", TURN]]
    assert turns(bare) == ""
    # The index learnt the pulled memory once the push was done, without a freshness pass.
    assert sorted(kb.index.stored([a_id, b_id])) == sorted([a_id, b_id])


def test_a_sync_refused_every_time_leaves_the_repository_as_it_was(diverged, monkeypatch) -> None:
    bare, _a, b, a_id, b_id = diverged
    # Three refusals take the same path as the product's 30 (a fetch, a rebase and a push each).
    attempts = 3
    monkeypatch.setattr(syncing, "PUSH_ATTEMPTS", attempts)
    lose_races(bare, attempts)
    before = (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain"))
    kb = KnowledgeBase(b)
    with pytest.raises(ConflictError) as refused:
        sync(kb)
    assert str(refused.value) == (f"The push to origin was refused {attempts} times (others keep pushing); "
                                  f"the repository is back as it was. Run 'slayer-kb --kb {b} sync' again.")
    assert (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain")) == before
    assert f"{a_id}.yaml" not in before[1]
    assert sorted(kb.index.stored([a_id, b_id])) == [b_id]
    assert turns(bare) == ""  # the turn it took is given back
    # The remote is willing again: the next sync pushes, once.
    (bare / "hooks" / "pre-receive").unlink()
    assert (sync(KnowledgeBase(b)).action, git(bare, "rev-parse", "main")) == ("rebased", git(b, "rev-parse", "HEAD"))


def test_a_turn_given_back_skips_the_clones_pre_push_hook(diverged, monkeypatch) -> None:
    bare, _a, b, _a_id, _b_id = diverged
    monkeypatch.setattr(syncing, "PUSH_ATTEMPTS", 2)
    lose_races(bare, 2)
    # The clone's own hook guards what a person pushes: here, a push of no branch is turned away.
    hook = b / ".git" / "hooks" / "pre-push"
    hook.write_text(f"#!/bin/sh\ninput=$(cat)\nprintf '%s\\n--\\n' \"$input\" >> {b.parent / 'pre-pushes'}\n"
                    "echo \"$input\" | grep -q ' refs/heads/' || exit 1\n")
    hook.chmod(0o755)
    with pytest.raises(ConflictError):
        sync(KnowledgeBase(b))
    assert turns(bare) == ""  # the turn it took is given back all the same
    seen = [push for push in (b.parent / "pre-pushes").read_text().split("--\n") if push.strip()]
    assert len(seen) == 2 and all(" refs/heads/main " in push for push in seen)  # its two branch pushes only


def test_a_push_a_remote_hook_declines_stops_at_once_with_its_message(diverged) -> None:
    bare, _a, b, a_id, b_id = diverged
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\ninput=$(cat)\nprintf '%s\\n--\\n' \"$input\" >> \"$GIT_DIR/pushes\"\n"
                    "echo \"$input\" | grep -q ' refs/heads/' || exit 0\n"
                    "echo 'main is protected: open a pull request (ABC-123)' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain"))
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(b), "--json", "sync"], capture_output=True,
                          text=True, env={**os.environ, "SLAYER_KB_SERVER": "off"}, timeout=300)
    assert (proc.returncode, json.loads(proc.stdout)) == (1, {"error": {"type": "store", "message": (
        f"The remote origin ({bare}) refused the push: pre-receive hook declined, saying:\n"
        "  main is protected: open a pull request (ABC-123)\n"
        "This is the remote's rule, not a race with other clones, so sync stopped without retrying. Nothing was "
        "sent and this clone is as it was: its saves stay here. Do what the hook's message asks (or ask whoever "
        f"runs {bare}), then run slayer-kb --kb {b} sync again.")}})
    assert pushes(bare) == [["refs/heads/main"]]  # asked once, never again
    assert (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain")) == before
    assert sorted(KnowledgeBase(b).index.stored([a_id, b_id])) == [b_id]
    assert turns(bare) == ""


def test_a_remote_that_refuses_turns_is_asked_once_per_sync(diverged) -> None:
    bare, _a, b, _a_id, _b_id = diverged
    hook = lose_races(bare, 2)
    # A protected namespace: no turn can be taken, and the sync waits between tries instead.
    hook.write_text(hook.read_text().replace('[ -n "$ref" ] || exit 0',
                                             "echo \"$input\" | grep -q ' refs/slayer-kb/' && exit 1\n"
                                             '[ -n "$ref" ] || exit 0'))
    result = sync(KnowledgeBase(b))
    assert (result.action, result.attempts) == ("rebased", 3)
    assert [list(t) for t in result.timings] == [
        ["lock", "fetch", "pull", "push", "turn", "wait"], ["fetch", "pull", "push", "turn", "wait"],
        ["fetch", "pull", "push", "finish"],
    ]
    assert pushes(bare) == [["refs/heads/main"], [TURN], ["refs/heads/main"], ["refs/heads/main"]]
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD") and turns(bare) == ""


def test_a_sync_waits_while_another_clone_has_the_turn(diverged, monkeypatch) -> None:
    bare, _a, b, _a_id, _b_id = diverged
    monkeypatch.setattr(turn, "TURN_SECONDS", 600.0)  # a live holder: never taken over here
    main = git(bare, "rev-parse", "main").strip()
    git(bare, "update-ref", TURN, main)  # another clone's turn
    done: list[SyncResult] = []
    worker = threading.Thread(target=lambda: done.append(sync(KnowledgeBase(b))))
    worker.start()
    # b fetched the turn and waits: it has not pushed.
    eventually(lambda: git(b, "for-each-ref", "refs/slayer-kb/seen-turn/origin/main").strip() != "")
    assert git(bare, "rev-parse", "main").strip() == main
    git(bare, "update-ref", "-d", TURN)  # the other clone pushed and gave it back
    worker.join(timeout=120)
    assert done and done[0].action == "rebased" and "queue" in done[0].timings[0]
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD")
    assert git(b, "for-each-ref", "refs/slayer-kb/seen-turn/") == ""  # pruned with the next fetch


def test_a_turn_that_stood_too_long_is_taken_over(diverged, monkeypatch) -> None:
    bare, _a, b, _a_id, _b_id = diverged
    monkeypatch.setattr(turn, "TURN_SECONDS", 0.5)
    git(bare, "update-ref", TURN, git(bare, "rev-parse", "main").strip())  # its holder died
    result = sync(KnowledgeBase(b))
    assert result.action == "rebased" and "queue" in result.timings[0]
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD")
    assert turns(bare) == ""


# A load run (-m slow): the default run loses the same races on cue (lose_races) and checks
# each attempt, the turn and the linear history (test_every_attempt_says_where_its_time_went).
def test_clones_syncing_at_once_all_land_once_in_a_linear_history(tmp_path: Path) -> None:
    """A real race: four clones' syncs as processes at the same time. Every memory reaches the
    remote once, no merge commit is made, and every clone ends at the remote's main."""
    bare, roots = make_team(tmp_path, 4)
    saved: dict[str, str] = {}
    for root in roots:
        kb = KnowledgeBase(root)
        for n in range(2):
            text = f"{root.name} note {n}"
            saved[kb.save_memory(text, ["orders.amount"]).memory_id] = text
    env = {**os.environ, "SLAYER_KB_SERVER": "off"}
    procs = [subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), "--json", "sync"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for root in roots]
    replies = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, replies
    for out, _err in replies:
        reply = json.loads(out)
        assert reply["action"] in ("pushed", "rebased") and len(reply["timings"]) == reply["attempts"] >= 1
    for root in roots:
        sync(KnowledgeBase(root))
    main = git(bare, "rev-parse", "main")
    assert [git(root, "rev-parse", "HEAD") for root in roots] == [main] * 4
    assert git(bare, "rev-list", "--merges", "main") == ""
    on_main = {name[len("memories/"):-len(".yaml")]
               for name in git(bare, "ls-tree", "-r", "--name-only", "main", "--", "memories/").split()}
    assert on_main == set(saved)
    for memory_id, text in saved.items():
        assert text in git(bare, "show", f"main:memories/{memory_id}.yaml")
    assert sorted(KnowledgeBase(roots[0]).index.stored(sorted(saved))) == sorted(saved)


def test_a_push_whose_pre_push_hook_hangs_is_stopped_and_the_clone_put_back(diverged, monkeypatch) -> None:
    bare, _a, b, a_id, b_id = diverged
    hook = b / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\nexec sleep 60 >/dev/null 2>&1\n")
    hook.chmod(0o755)
    before = (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain"))
    monkeypatch.setenv("SLAYER_KB_SYNC_TIMEOUT", "2")
    with pytest.raises(StoreError) as stopped:
        sync(KnowledgeBase(b))
    assert str(stopped.value) == (
        f"The sync's git push (origin: {bare}) did not finish within 2 s and was stopped: the remote stopped "
        "answering or this repository's pre-push hook is waiting for something. This clone is as it was before "
        f"the sync: its saves stay here and the next sync sends what the remote lacks. Check the remote (git -C {b} "
        f"ls-remote origin), then run slayer-kb --kb {b} sync again; SLAYER_KB_SYNC_TIMEOUT sets how many seconds a "
        "sync's fetch or push may take, and, below 30, the small requests to the remote (a lease's ls-remote or "
        "push of its id block, a sync's turn).")
    assert (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain")) == before
    assert sorted(KnowledgeBase(b).index.stored([a_id, b_id])) == [b_id]
    hook.unlink()
    assert (sync(KnowledgeBase(b)).action, git(bare, "rev-parse", "main")) == ("rebased", git(b, "rev-parse", "HEAD"))


def test_a_fetch_from_a_remote_that_stops_answering_is_stopped(diverged, monkeypatch) -> None:
    bare, _a, b, _a_id, _b_id = diverged
    # The remote's side of the fetch never answers; its shell keeps none of git's pipes open.
    git(b, "config", "remote.origin.uploadpack", "exec 2>/dev/null; sleep 60 >/dev/null; exec git-upload-pack")
    before = (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain"))
    monkeypatch.setenv("SLAYER_KB_SYNC_TIMEOUT", "2")
    with pytest.raises(StoreError) as stopped:
        sync(KnowledgeBase(b))
    assert str(stopped.value).startswith(
        f"The sync's git fetch (origin: {bare}) did not finish within 2 s and was stopped: the remote stopped "
        "answering. This clone is as it was before the sync:")
    assert (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain")) == before
    git(b, "config", "--unset", "remote.origin.uploadpack")
    assert sync(KnowledgeBase(b)).action == "rebased"


def _merge_a_branch(b: Path) -> None:
    """Give ``b`` a merge among its unpushed commits, so that its sync merges (``git merge``)
    instead of replaying."""
    git(b, "switch", "-q", "-c", "topic")
    KnowledgeBase(b).save_memory("Refunds over 500 EUR need a second approver", ["orders.amount"])
    git(b, "switch", "-q", "main")
    git(b, "-c", "user.name=B", "-c", "user.email=b@example.com", "merge", "-q", "--no-ff", "--no-edit", "topic")


def _released_at_first_wait(monkeypatch: pytest.MonkeyPatch, lock: Path) -> list[float]:
    """Another git command's ``lock``, gone once the store first waits for it (the store's clock
    is the test's): the waits the store made."""
    waits: list[float] = []

    def other_git_exits(seconds: float) -> None:
        waits.append(seconds)
        lock.unlink(missing_ok=True)

    monkeypatch.setattr(indexlock, "time", types.SimpleNamespace(monotonic=time.monotonic, sleep=other_git_exits),
                        raising=False)
    return waits


@pytest.mark.parametrize("merges", [False, True], ids=["rebased", "merged"])
def test_a_sync_waits_for_a_git_command_that_holds_the_index_briefly(diverged, monkeypatch, merges) -> None:
    """An editor's `git status` holds .git/index.lock for milliseconds: the sync's `git reset
    --keep` (or `git merge`) that met it failed the sync, and the merge left MERGE_HEAD behind.
    Here the lock is real and goes once the sync first waits for it (the store's clock is the test's)."""
    bare, _a, b, _a_id, _b_id = diverged
    if merges:
        _merge_a_branch(b)
    lock = b / ".git" / "index.lock"
    lock.touch()
    waits = _released_at_first_wait(monkeypatch, lock)
    result = sync(KnowledgeBase(b))
    assert waits and not lock.exists()
    assert result.action == ("merged" if merges else "rebased")
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD")
    assert git(b, "status", "--porcelain") == ""
    assert not (b / ".git" / "MERGE_HEAD").exists()


def test_a_sync_whose_index_stays_locked_leaves_the_repository_as_it_was(diverged, monkeypatch) -> None:
    """git's index held past the wait (`git commit` waiting for its editor, a crashed git): the
    sync says so, with the fix, and leaves the branch, files and index as they were. On the merge
    path (here), whose `git merge` names no lock, it used to leave MERGE_HEAD behind too."""
    bare, _a, b, _a_id, _b_id = diverged
    _merge_a_branch(b)
    monkeypatch.setattr(indexlock, "INDEX_LOCK_WAIT", 0.05)  # the lock stays: no need to wait the 2 s
    remote_main = git(bare, "rev-parse", "main")
    before = (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain"))
    lock = b / ".git" / "index.lock"
    lock.touch()
    with pytest.raises(IndexLockedError) as locked:
        sync(KnowledgeBase(b))
    assert str(locked.value) == (
        f"git's index is locked: {lock} exists, so another git command is running in this repository (or one that "
        "crashed left the file behind). Wait for it to finish, or delete that file if no git command is running, "
        "then retry; nothing was pushed, and the repository is back as it was.")
    lock.unlink()
    assert (git(b, "rev-parse", "HEAD"), tree(b), git(b, "status", "--porcelain")) == before
    assert not (b / ".git" / "MERGE_HEAD").exists() and git(bare, "rev-parse", "main") == remote_main
    assert sync(KnowledgeBase(b)).action == "merged"


# The first push of a branch to the remote: a colleague's push (refs/colleague/main) wins the race.
_COLLEAGUE = """#!/bin/sh
input=$(cat)
echo "$input" | grep -q ' refs/heads/main$' || exit 0
[ -e "$GIT_DIR/raced" ] && exit 0
touch "$GIT_DIR/raced"
(unset GIT_QUARANTINE_PATH; git update-ref refs/heads/main refs/colleague/main)
"""


@pytest.mark.parametrize("merges", [False, True], ids=["rebased", "merged"])
def test_a_retried_sync_maps_each_original_id_to_its_final_one(tmp_path: Path, monkeypatch, merges) -> None:
    """Ids counted before leases collide; the first push is refused because a colleague pushed a
    memory under the very id the first attempt gave this clone's memory. The retry renumbers again
    (from the rewritten commits, or, on the merge path, from the branch as the sync found it, the
    first attempt's renumber commit undone): ``renumbered`` maps the original id to the final one,
    and the memories and their links end there."""
    bare, (a, b, c) = make_team(tmp_path, 3)
    for root in (a, b, c):
        git(root, "config", "slayer-kb.ids", "sequential")
    assert KnowledgeBase(a).save_memory("A: refunds are booked when paid", ["orders.amount"]).memory_id == "1"
    sync(KnowledgeBase(a))
    git(c, "pull", "-q")
    KnowledgeBase(c).save_memory("C: shipping is billed apart", ["orders.amount"], id="3")
    git(c, "push", "-q", "origin", "HEAD:refs/colleague/main")
    if merges:
        _merge_a_branch(b)  # its memory 1, saved on a branch merged in
    else:
        KnowledgeBase(b).save_memory("Refunds over 500 EUR need a second approver", ["orders.amount"])
    assert KnowledgeBase(b).save_memory("B: see the approver rule", ["orders.status", "memory:1"]).memory_id == "2"
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(_COLLEAGUE)
    hook.chmod(0o755)
    before = git(b, "log", "--format=%s", "--first-parent", "HEAD").splitlines()

    result = sync(KnowledgeBase(b))

    assert (result.action, result.attempts) == ("merged" if merges else "rebased", 2)
    assert result.renumbered == {"1": "4"}
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD")
    kb = KnowledgeBase(b)
    assert {i: kb.read(i).learning for i in ("1", "2", "3", "4")} == {
        "1": "A: refunds are booked when paid", "2": "B: see the approver rule", "3": "C: shipping is billed apart",
        "4": "Refunds over 500 EUR need a second approver"}
    assert kb.read("2").entities == ["shop.orders.status", "memory:4"]
    assert sorted(kb.index.stored(["1", "2", "3", "4"])) == ["1", "2", "3", "4"]
    # One note from the original id to the final one (it said "save 4 (renumber 1 -> 4) (renumber
    # 3 -> 4)": 3 is the colleague's memory); on the merge path the branch's own history is kept.
    if merges:
        assert git(b, "log", "--format=%s", "--first-parent", "HEAD").splitlines() == [
            "Merge remote-tracking branch 'origin/main'", "memory: renumber 1 -> 4 (onto origin/main)", *before]
    else:
        assert git(b, "log", "--format=%B", "-1", "HEAD~").strip() == (
            "memory: save 4 (renumber 1 -> 4)\n\nRenumbered-by: slayer-kb (1 -> 4)")
        assert git(b, "log", "--format=%s", "HEAD").splitlines() == [
            "memory: save 2", "memory: save 4 (renumber 1 -> 4)", "memory: save 3", *before[1:]]
    assert git(b, "status", "--porcelain") == ""


# A hook that takes git's index lock once, as an editor's `git status` would between two picks of
# a rebase: post-commit (the merge backend runs it for each commit it picks) and post-applypatch
# (the apply backend's).
_TAKES_THE_LOCK_ONCE = """#!/bin/sh
d=$(git rev-parse --git-dir)
[ -e "$d/held-once" ] && exit 0
touch "$d/held-once" "$d/index.lock"
"""


def test_a_rebase_stopped_part_way_by_the_index_lock_goes_on_where_it_stopped(tmp_path: Path, monkeypatch) -> None:
    """git stops a rebase whose next pick met index.lock, part-way; running 'git rebase UPSTREAM'
    again was refused ("already a rebase-... directory"), and slayer-kb rebase took that for a
    commit become empty and ran --skip: with the merge backend that happened to go on from the pick
    (put back on the to-do list), but with the apply backend (git config rebase.backend apply) it
    dropped the commit, and memory 102 with it. The rebase now takes the merge backend and goes on
    with 'git rebase --continue'."""
    bare, (a, b) = make_team(tmp_path)
    KnowledgeBase(a).save_memory("Tax is VAT-inclusive", ["orders.amount"])
    syncing.sync(KnowledgeBase(a))
    for text in ("Refunds are net of fees", "Shipping fees are in EUR", "Totals exclude test orders"):
        KnowledgeBase(b).save_memory(text, ["orders.amount"])
    git(b, "fetch", "-q", "origin")
    git(b, "config", "rebase.backend", "apply")
    for name in ("post-commit", "post-applypatch"):
        hook = b / ".git" / "hooks" / name
        hook.write_text(_TAKES_THE_LOCK_ONCE)
        hook.chmod(0o755)
    lock = b / ".git" / "index.lock"
    waits = _released_at_first_wait(monkeypatch, lock)
    result = KnowledgeBase(b).team.rebase("origin/main")
    assert waits and (b / ".git" / "held-once").exists() and not lock.exists()
    assert result.action == "rebased"
    assert git(b, "log", "--format=%s", "origin/main..HEAD").splitlines() == [
        "memory: save 103", "memory: save 102", "memory: save 101"]
    assert git(b, "status", "--porcelain") == ""
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD~3")


def test_syncs_with_the_server_on_while_saves_arrive_over_mcp_lose_no_id(tmp_path: Path) -> None:
    """An agent saves over MCP (a ``slayer-kb mcp`` process) without a pause while its clone's CLI
    syncs again and again (relayed to the clone's warm server) and another clone saves, upserts
    the same topic key and syncs: every id MCP returned names its memory on the remote, and every
    upsert is counted."""
    from testing.mcp import call_json, with_server

    bare, (x, y) = make_team(tmp_path, 2)
    env = {**os.environ, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": "60"}
    done, failed = threading.Event(), []
    key = {"title": "Cache", "type": "decision", "project": "api", "topic_key": "arch/cache"}
    upserts = [0]

    def cli(root: Path, *args: str) -> None:
        proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], env=env,
                              capture_output=True, text=True, timeout=300)
        if proc.returncode:
            failed.append(f"{root.name} {args}: {proc.stdout}{proc.stderr}")

    def syncs() -> None:
        while not done.is_set():
            cli(x, "sync")

    def other_clone() -> None:
        while not done.is_set():
            cli(y, "save", f"y note {upserts[0]}", "-e", "orders.amount")
            cli(y, "save", "Redis from y", "--title", "Cache", "--type", "decision", "--project", "api",
                "--topic-key", "arch/cache")
            upserts[0] += 1
            cli(y, "sync")

    async def agent(session) -> dict[str, str]:  # noqa: ANN001 (the SDK's ClientSession)
        told = {}
        for n in range(20):
            if n % 5 == 4:
                reply = await session.call_tool("mem_save", {**key, "content": f"Redis from x, take {n}"})
                assert not reply.is_error, reply.content[0].text
                told[(reply.structured_content or {})["memory_id"]] = "arch/cache"
            else:
                saved = await call_json(session, "save_memory", learning=f"x note {n}",
                                        linked_entities=["orders.amount"])
                told[saved["memory_id"]] = f"x note {n}"
        return told

    # The key is on the remote first: both clones' upserts revise one memory (two first saves of
    # it would fold, which test_team_ids checks).
    KnowledgeBase(x).save_observation("Cache", "Redis", **{k: v for k, v in key.items() if k != "title"})
    sync(KnowledgeBase(x))
    sync(KnowledgeBase(y))
    threads = [threading.Thread(target=syncs), threading.Thread(target=other_clone)]
    for thread in threads:
        thread.start()
    try:
        told = with_server(x, agent)
    finally:
        done.set()
        for thread in threads:
            thread.join()
        for root in (x, y, x):
            cli(root, "sync")
        for root in (x, y):
            subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "server", "stop"], env=env,
                           capture_output=True, timeout=60)
    assert failed == []
    for memory_id, text in told.items():
        assert text in git(bare, "show", f"main:memories/{memory_id}.yaml"), memory_id
    (key_id,) = {i for i, text in told.items() if text == "arch/cache"}
    assert f"revision_count: {1 + 4 + upserts[0]}\n" in git(bare, "show", f"main:memories/{key_id}.yaml")
    assert git(x, "status", "--porcelain") == "" and git(x, "rev-parse", "HEAD") == git(bare, "rev-parse", "main")
