"""Many agents, one remote (issue 28): 4 clones of one bare remote, each driven by a scripted agent
process through the real CLI with its warm server on (bench/team.py), then synced until they
converge and checked memory by memory on the remote's main; and 2 agents on their own branches
with a reviewer (bench/team_branches.py).

The run is bounded by a number of operations, not by time, and seeded. Every agent makes the same
opening moves before anyone syncs (an auto id, the first save into one new project, an upsert of
one shared topic key), so the collisions sequential ids, topic keys and session files used to
cause would happen on every run.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from bench.team import SHARED_KEYS, SharedResult, analyse, run_shared
from bench.team_branches import BranchResult, run_branches
from bench.team_kit import conflict_files, marker, merge_steps, percentile

AGENTS = 4
OPS = 10
BRANCHES = 2


def once(factory: pytest.TempPathFactory, name: str, run: Callable[[Path], Any]) -> dict[str, Any]:
    """``run(folder)``'s result, run once per test session: under xdist the first worker runs it
    and the others read its result (xdist's recipe for a fixture that runs once), so the slow
    suite pays for it once. Run under conftest's isolation: no developer git config, no KB or
    server settings, a vector cache of its own (a module's fixture runs before the per-test one
    would set it, and the agents' servers wrote the user's ~/.cache/slayer-kb)."""
    worker_base = factory.getbasetemp()
    shared = worker_base.parent if os.environ.get("PYTEST_XDIST_WORKER") else worker_base
    done = shared / f"{name}.json"
    with (shared / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            with pytest.MonkeyPatch.context() as env:
                env.setenv("GIT_CONFIG_GLOBAL", str(shared / "gitconfig"))
                env.setenv("GIT_CONFIG_NOSYSTEM", "1")
                env.setenv("SLAYER_KB_CACHE", str(shared / "sentence-cache"))
                for variable in ("SLAYER_KB", "SLAYER_KB_AUTHOR", "SLAYER_KB_SERVER_SOCKET"):
                    env.delenv(variable, raising=False)
                done.write_text(json.dumps(asdict(run(shared / name))))
    result: dict[str, Any] = json.loads(done.read_text())
    return result


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> SharedResult:
    return SharedResult(**once(tmp_path_factory, "team", lambda work: run_shared(
        work, agents=AGENTS, seconds=None, ops=OPS, seed=1, log=lambda _m: None)))


@pytest.fixture(scope="module")
def branches(tmp_path_factory: pytest.TempPathFactory) -> BranchResult:
    return BranchResult(**once(tmp_path_factory, "branches", lambda work: run_branches(
        work, agents=BRANCHES, rounds=2, seed=1, log=lambda _m: None)))


slow = pytest.mark.slow


@slow
def test_the_agents_did_the_work(team: SharedResult) -> None:
    assert team.agents_killed == 0
    assert team.save_failures == 0
    assert team.saves >= 3 * AGENTS and team.upserts >= AGENTS and team.updates + team.forgets >= 1
    assert team.syncs >= 2 * AGENTS


@slow
def test_no_memory_is_lost(team: SharedResult) -> None:
    assert team.lost == []


@slow
def test_no_memory_is_duplicated_or_comes_back(team: SharedResult) -> None:
    assert team.duplicated == []
    assert team.forgotten_but_back == []


@slow
def test_every_clone_converges_on_a_valid_main(team: SharedResult) -> None:
    assert team.converged
    assert team.validate_clean


@slow
def test_no_id_changes_after_a_save_returned(team: SharedResult) -> None:
    assert team.ids_changed == []
    assert team.renumbered_ids == 0


@slow
def test_no_topic_key_is_held_by_two_memories(team: SharedResult) -> None:
    assert team.topic_keys_held_twice == []
    assert team.topic_key_memories <= len(SHARED_KEYS)


@slow
def test_no_session_file_conflicts(team: SharedResult) -> None:
    assert team.session_file_conflicts == 0


# -- a branch per agent, a reviewer merging -------------------------------------------------------


@slow
def test_branch_per_agent_loses_nothing_and_review_matches_git(branches: BranchResult) -> None:
    assert branches.saves == BRANCHES * 2 * 3
    assert branches.reviews >= BRANCHES + 1 and branches.merges >= 1
    assert branches.review_mismatches == []
    assert branches.review_matches_git == branches.reviews
    assert (branches.merge_conflicts, branches.agent_merge_conflicts) == (0, 0)
    assert branches.criss_cross_merges == BRANCHES
    assert branches.lost == [] and branches.duplicated == []


@slow
def test_every_review_passes_without_renumbering(branches: BranchResult) -> None:
    assert branches.ids_flagged == 0
    assert branches.reviews_valid == branches.reviews
    assert branches.renumber_runs == 0


# -- the bench's own arithmetic, on a hand-made remote -------------------------------------------


def _memory(learning: str, **fields: object) -> str:
    extra = "".join(f"{key}: {value}\n" for key, value in fields.items())
    return f"learning: '{learning}'\nentities:\n- shop.orders.amount\n{extra}"


def test_analyse_counts_lost_duplicated_changed_and_shared_keys() -> None:
    a, b, c, d, e = (marker(0, n) for n in range(1, 6))
    events = [
        {"op": "save", "rc": 0, "marker": a, "id": "1"},   # still at 1
        {"op": "save", "rc": 0, "marker": b, "id": "2"},   # moved to 3: an id changed
        {"op": "save", "rc": 0, "marker": c, "id": "3"},   # nowhere: lost
        {"op": "save", "rc": 0, "marker": d, "id": "4"},   # twice: duplicated
        {"op": "save", "rc": 0, "marker": e, "id": "6"},
        {"op": "forget", "rc": 0, "marker": e, "id": "6"},  # forgotten, yet on main
        {"op": "upsert", "rc": 0, "key": SHARED_KEYS[0]},
        {"op": "upsert", "rc": 0, "key": SHARED_KEYS[0]},
        {"op": "upsert", "rc": 0, "key": SHARED_KEYS[0]},
        {"op": "sync", "kind": "ok", "seconds": 1.0, "renumbered": {"2": "3"}, "files": []},
        {"op": "sync", "kind": "conflict", "seconds": 3.0, "renumbered": {},
         "files": ["sessions/manual-save-newproj-1.yaml"]},
        {"op": "by_hand", "renumbered": {}, "stops": 2, "taken_from_main": ["sessions/manual-save-newproj-1.yaml"],
         "ok": True},
        {"op": "by_hand", "renumbered": {"9": "10"}, "stops": 1, "taken_from_main": [], "ok": False},
        {"op": "sync", "kind": "refused", "seconds": 2.0, "renumbered": {}, "files": []},
    ]
    remote = {
        "1": _memory(f"one ({a})"), "3": _memory(f"two ({b})"), "4": _memory(f"four ({d})"),
        "5": _memory(f"four again ({d})"), "6": _memory(f"gone ({e})"),
        "7": _memory("t", topic_key=SHARED_KEYS[0], revision_count=1),
        "8": _memory("t", topic_key=SHARED_KEYS[0], revision_count=1),
    }
    result = SharedResult(1, None, 6)
    analyse(result, events, remote)
    assert (result.lost, result.duplicated, result.forgotten_but_back) == ([c], [d], [e])
    assert result.ids_changed == [b]
    assert result.topic_keys_held_twice == [SHARED_KEYS[0]] and result.topic_key_memories == 2
    assert result.topic_revisions_missing == 1
    assert (result.syncs, result.sync_failures, result.syncs_refused) == (3, 2, 1)
    assert (result.conflicts_needing_a_person, result.session_file_conflicts, result.memory_conflicts) == (1, 1, 0)
    assert (result.renumbered_ids, result.files_taken_from_main) == (2, 1)
    assert (result.rebase_stops, result.hand_resolutions_given_up) == (3, 1)
    assert (result.sync_p50, result.sync_p95, result.sync_max) == (2.0, 3.0, 3.0)


def test_conflict_files_and_percentiles() -> None:
    message = ("Your commits and origin/main change the same memories (kb/memories/27.yaml, "
               "sessions/manual-save-x.yaml); the repository is back as it was.")
    assert conflict_files(message) == ["kb/memories/27.yaml", "sessions/manual-save-x.yaml"]
    assert conflict_files("The push to origin was refused 3 times") == []
    # The agent runs the steps of sync's message (ops/sync.py), as docs/teams.md shows one.
    message = ("Your commits forgot memories/1.yaml, which origin/main edited; the repository is back as it was. "
               "To merge by hand: git fetch origin; slayer-kb renumber --onto origin/main --rewrite; slayer-kb rebase "
               "origin/main (it stops on the conflict); git rm memories/1.yaml to keep it forgotten (or git add "
               "memories/1.yaml to keep origin/main's edit); slayer-kb validate; slayer-kb rebase --continue (a later "
               "commit that stops says so again); slayer-kb sync.")
    assert merge_steps(message) == [
        "git fetch origin", "slayer-kb renumber --onto origin/main --rewrite", "slayer-kb rebase origin/main",
        "git rm memories/1.yaml to keep it forgotten", "slayer-kb validate", "slayer-kb rebase --continue",
        "slayer-kb sync"]
    assert percentile([], 50) is None
    assert [percentile([5.0, 1.0, 3.0, 2.0, 4.0], q) for q in (50, 95, 100)] == [3.0, 5.0, 5.0]
