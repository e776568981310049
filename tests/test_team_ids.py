"""Many agents, one remote: auto ids leased from the remote never change under an agent, and
sync merges what git cannot (topic keys, session files), retried under contention."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import ConflictError
from slayer_kb.core.session import loads as load_session
from slayer_kb.ops.renumber import plan
from slayer_kb.ops.sync import sync
from slayer_kb.ops.syncreport import compose
from slayer_kb.store.leases import BLOCK, CLAIMS, NAMESPACE, OFFLINE_FIRST, IdLeases
from slayer_kb.store.moves import MovedIds
from slayer_kb.store.repo import GitStore
from testing import (
    CliRunner,
    commit_all,
    default_first,
    examples,
    git,
    json_of,
    lose_races,
    make_team,
    make_team_after,
    next_second,
    traced_git,
)


@pytest.fixture
def team(tmp_path: Path) -> tuple[Path, list[Path]]:
    return make_team(tmp_path, 2)


def leased_blocks(bare: Path) -> list[str]:
    refs = git(bare, "for-each-ref", "--format=%(refname)", NAMESPACE)
    return sorted(refs.split(), key=lambda r: int(r.rsplit("/", 1)[1]))


def claimed_blocks(bare: Path) -> list[str]:
    return git(bare, "for-each-ref", "--format=%(refname)", CLAIMS).split()


def test_an_id_an_agent_holds_never_changes_meaning(team, invoke_cli) -> None:
    """The issue's example: X and Y save before syncing; Y forgets what it saved."""
    bare, (x, y) = team
    saved_x = invoke_cli("--kb", x, "save", "X: keep this", "-e", "shop.orders.amount", check=True)
    assert saved_x.stdout.splitlines()[0] == "Saved memory 1 (created)"
    invoke_cli("--kb", x, "sync", check=True)
    saved_y = invoke_cli("--kb", y, "save", "Y: obsolete", "-e", "shop.orders.amount", check=True)
    # Y's clone leased the next block: its first id can never be one X's clone hands out.
    assert saved_y.stdout.splitlines()[0] == f"Saved memory {BLOCK + 1} (created)"
    synced = invoke_cli("--kb", y, "sync", check=True)
    assert synced.stdout == "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
    invoke_cli("--kb", y, "forget", str(BLOCK + 1), check=True)
    invoke_cli("--kb", y, "sync", check=True)
    invoke_cli("--kb", x, "sync", check=True)
    for root in (x, y):
        assert KnowledgeBase(root).get("1").to_dict()["learning"] == "X: keep this"
        assert not (root / "memories" / f"{BLOCK + 1}.yaml").exists()
    assert leased_blocks(bare) == [f"{NAMESPACE}0", f"{NAMESPACE}1"]
    # Whoever holds a block is on record, for an audit.
    assert git(bare, "log", "-1", "--format=%s", f"{NAMESPACE}1").strip() == f"slayer-kb: lease ids {BLOCK + 1}-{2 * BLOCK}"


def test_a_given_number_in_another_clones_block_is_refused(team, invoke_cli) -> None:
    """An agent saving under a number of its choosing (--id 102) took an id of the block another
    clone leased, which that clone then handed out for another memory: its sync renumbered the
    id its save had returned (102 -> 103)."""
    _bare, (x, y) = team
    invoke_cli("--kb", x, "save", "X: first", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", y, "save", "Y: first", "-e", "shop.orders.amount", check=True)  # Y leases block 1
    taken = f"{BLOCK + 2}"
    refused = invoke_cli("--kb", x, "save", "X: a number of my own", "-e", "shop.orders", "--id", taken)
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: Memory id '{taken}' is a number as auto ids are, in a block another clone leased from origin "
        f"(ids {BLOCK + 1}-{2 * BLOCK}): that clone hands it out for another memory, and a sync would then give "
        "one of the two a new id. Omit --id to get this clone's next auto id, or give a name such as "
        "'kb.orders-total'.\n"))
    assert not (x / "memories" / f"{taken}.yaml").exists()
    # A number of a block this clone holds is its own to give; one it holds already is replaced.
    invoke_cli("--kb", x, "save", "X: mine", "-e", "shop.orders", "--id", "5", check=True)
    invoke_cli("--kb", y, "save", "Y: again", "-e", "shop.orders", "--id", f"{BLOCK + 1}", check=True)
    assert invoke_cli("--kb", x, "save", "X: next", "-e", "shop.orders", check=True).stdout.startswith(
        "Saved memory 2 (created)")


def test_a_kb_with_no_remote_still_counts_one_two_three(catalog_kb: KnowledgeBase) -> None:
    ids = [catalog_kb.save_memory(f"note {n}", ["orders.amount"]).memory_id for n in range(3)]
    assert ids == ["1", "2", "3"]
    assert not (catalog_kb.root / ".git" / "slayer-kb-ids.json").exists()


def test_branches_of_one_clone_and_of_many_never_share_an_id(team) -> None:
    _bare, (a, b) = team
    other = a.parent / "a-second-worktree"
    git(a, "worktree", "add", "-q", "-b", "agent-2", str(other))
    kbs = [KnowledgeBase(a), KnowledgeBase(other), KnowledgeBase(b)]
    ids = [kb.save_memory(f"note from {n}", ["orders.amount"]).memory_id for n, kb in enumerate(kbs * 3)]
    assert len(set(ids)) == len(ids)
    # Within a clone, ids increase whichever worktree saves.
    from_a = [int(i) for n, i in enumerate(ids) if n % 3 != 2]
    assert from_a == sorted(from_a)


def test_ids_run_on_into_a_new_block_when_one_is_used_up(team) -> None:
    bare, (a, _b) = team
    kb = KnowledgeBase(a)
    result = kb.capture_passive("## Key Learnings:\n" + "\n".join(f"- learned fact number {n} about orders" for n in range(BLOCK + 5)),
                                session_id="s1")
    ids = [int(i) for i in result.memory_ids]
    assert ids == list(range(1, BLOCK + 6))
    assert leased_blocks(bare) == [f"{NAMESPACE}0", f"{NAMESPACE}1"]


def test_offline_saves_get_ids_no_online_clone_hands_out(team) -> None:
    bare, (a, b) = team
    git(a, "remote", "set-url", "origin", str(bare.parent / "unreachable.git"))
    offline = KnowledgeBase(a).save_memory("saved on a plane", ["orders.amount"]).memory_id
    assert int(offline) > 10**9
    online = KnowledgeBase(b).save_memory("saved at the office", ["orders.amount"]).memory_id
    assert online == "1"
    git(a, "remote", "set-url", "origin", str(bare))
    git(a, "branch", "-q", "--set-upstream-to=origin/main")
    sync(KnowledgeBase(b))
    result = sync(KnowledgeBase(a))
    assert result.renumbered == {}
    # The offline block is now on the remote: nobody else can lease it.
    block = (int(offline) - 1) // BLOCK
    assert f"{NAMESPACE}{block}" in leased_blocks(bare)



def test_a_lease_gives_up_on_a_remote_that_stops_answering_at_the_users_setting(team, invoke_cli) -> None:
    """A lease's ls-remote and push waited 30 s whatever SLAYER_KB_SYNC_TIMEOUT said, holding the
    agent's save. The remote's upload-pack here answers after 10 s: under those 30 s, so a lease
    that waited past the setting took a block from it."""
    bare, (a, _b) = team
    git(a, "config", "remote.origin.uploadpack", "exec 2>/dev/null; sleep 10 >/dev/null; exec git-upload-pack")
    saved = invoke_cli("--kb", a, "--json", "save", "saved while the remote hangs", "-e", "orders.amount",
                       env={"SLAYER_KB_SYNC_TIMEOUT": "1"}, check=True)
    assert int(json_of(saved)["memory_id"]) > OFFLINE_FIRST * BLOCK  # an offline block's, as with no network
    assert leased_blocks(bare) == []

def test_validate_against_main_passes_for_every_agent_branch(team, invoke_cli) -> None:
    """Branch per agent: after one branch is merged, the others still pass with no renumbering."""
    bare, (a, b) = team
    for root, name in ((a, "agent-a"), (b, "agent-b")):
        git(root, "switch", "-q", "-c", name)
        KnowledgeBase(root).save_memory(f"{name}'s finding", ["orders.amount"])
        git(root, "push", "-q", "origin", name)
    reviewer = a.parent / "reviewer"
    git(a.parent, "clone", "-q", str(bare), "reviewer")
    for name in ("agent-a", "agent-b"):
        git(reviewer, "fetch", "-q", "origin", name)
        git(reviewer, "switch", "-q", "--detach", f"origin/{name}")
        proc = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        git(reviewer, "switch", "-q", "main")
        git(reviewer, "merge", "-q", "--no-edit", f"origin/{name}")
        git(reviewer, "push", "-q", "origin", "main")
    assert sorted(p.stem for p in (reviewer / "memories").glob("*.yaml")) == ["1", str(BLOCK + 1)]


def test_a_criss_cross_merge_is_not_a_collision(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    root = catalog_kb.root
    main = git(root, "symbolic-ref", "--short", "HEAD").strip()
    git(root, "switch", "-q", "-c", "x")
    catalog_kb.save_memory("x's note", ["orders.amount"], id="5")
    git(root, "switch", "-q", "-c", "y", main)
    catalog_kb.save_memory("y's note", ["orders.status"], id="6")
    x1, y1 = git(root, "rev-parse", "x").strip(), git(root, "rev-parse", "y").strip()
    env = {**os.environ, "GIT_EDITOR": "true"}
    subprocess.run(["git", "merge", "-q", "--no-edit", x1], cwd=root, check=True, env=env)  # y merges x
    git(root, "switch", "-q", "x")
    subprocess.run(["git", "merge", "-q", "--no-edit", y1], cwd=root, check=True, env=env)  # x merges y
    catalog_kb.update("5", learning="x's note, edited after the merges")
    # Two merge bases (x1 and y1): whichever git picks, both memories are the same on both sides.
    assert len(git(root, "merge-base", "--all", "x", "y").split()) == 2
    assert plan(KnowledgeBase(root), "y")[1] == {}
    proc = invoke_cli("--kb", root, "validate", "--against", "y")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # review shows what git's three-dot diff shows (from the merge base git picks), nothing renumbered.
    review = json_of(invoke_cli("--kb", root, "review", "y", "--json", check=True))
    status = {"A": "added", "M": "changed", "D": "removed"}
    expected: dict[str, list[str]] = {"added": [], "changed": [], "removed": []}
    for line in git(root, "diff", "--name-status", "--no-renames", "y...HEAD", "--", "memories").splitlines():
        flag, path = line.split("\t")
        expected[status[flag]].append(Path(path).stem)
    assert {k: sorted(m["id"] for m in review[k]) for k in expected} == expected
    assert "5" in expected["changed"] + expected["added"] and review["removed"] == []


def test_renumbered_is_a_map_from_each_original_id_to_its_final_id() -> None:
    known = {"27": "28"}
    compose(known, {"28": "29", "30": "31"})
    assert known == {"27": "29", "30": "31"}


def test_moves_carry_on_to_where_a_memory_is_now(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    moves = MovedIds(IdLeases(GitStore(tmp_path)))
    moves.record({"27": "28"}, "renumbered")
    moves.record({"28": "29"}, "renumbered")
    assert moves.get("27").new == "29"
    assert json.loads((tmp_path / ".git" / "slayer-kb-moves.json").read_text())["27"] == {"to": "29", "why": "renumbered"}
    # One sync renumbers 30 to 31 (sequential ids) and folds 31 into the upstream's 30 (one topic key,
    # or one save): the agent's 30 names the memory its save went into, as if it had never moved.
    moves.record({"30": "31"}, "renumbered")
    moves.record({"31": "30"}, "merged", duplicate=True)
    assert (moves.get("30"), moves.get("31").new) == (None, "30")


def test_one_topic_key_saved_on_two_clones_ends_as_one_memory(team, invoke_cli) -> None:
    _bare, (a, b) = team
    kb_a, kb_b = KnowledgeBase(a), KnowledgeBase(b)
    first = kb_a.save_observation("Retry budget", "Three retries, then give up.", type="decision",
                                  project="api", topic_key="decision/retry-budget")
    kb_a.save_observation("Retry budget", "Three retries with jitter.", type="decision",
                          project="api", topic_key="decision/retry-budget")
    theirs = kb_b.save_observation("Retry budget", "Five retries, exponential backoff.", type="decision",
                                   project="api", topic_key="decision/retry-budget")
    assert (first.memory_id, theirs.memory_id) == ("1", str(BLOCK + 1))
    sync(kb_a)
    result = sync(kb_b)
    assert result.merged == {str(BLOCK + 1): "1"}
    sync(kb_a)
    for root in (a, b):
        memory = KnowledgeBase(root).get("1").to_dict()
        # The newest content; three saves under the key in all, none lost.
        assert memory["learning"] == "Five retries, exponential backoff."
        assert (memory["revision_count"], memory["duplicate_count"]) == (3, 1)
        assert not (root / "memories" / f"{BLOCK + 1}.yaml").exists()
    # B's agent still holds its id: a command on it says where the memory went.
    with pytest.raises(ConflictError) as exc:
        KnowledgeBase(b).update(str(BLOCK + 1), learning="x")
    assert str(exc.value).startswith(
        f"Memory id '{BLOCK + 1}' moved: sync merged this clone's memory {BLOCK + 1} into 1, which the "
        f"upstream holds under the same topic key; no memory has id '{BLOCK + 1}' now. Use 1"
    )
    # show reads history: the version saved here, before the fold, with the move named.
    shown = KnowledgeBase(b).history.show(str(BLOCK + 1))
    assert (shown.memory.learning, shown.deleted_in is not None) == ("Five retries, exponential backoff.", True)
    assert shown.warnings == [str(exc.value).replace(
        f"to mean what '{BLOCK + 1}' names now, run 'slayer-kb --kb {b} renumber --accept {BLOCK + 1}' first.",
        f"'slayer-kb --kb {b} renumber --accept {BLOCK + 1}' ends this note.")]
    with pytest.raises(ConflictError) as no_timeline:  # nothing to centre on: where it went
        KnowledgeBase(b).timeline(str(BLOCK + 1))
    assert str(no_timeline.value) == str(exc.value)
    # The next upsert under the key, on either clone, revises the one memory.
    again = KnowledgeBase(b).save_observation("Retry budget", "Four retries.", type="decision", project="api",
                                              topic_key="decision/retry-budget")
    assert (again.memory_id, again.action) == ("1", "revised")
    proc = invoke_cli("--kb", b, "validate")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_save_made_on_two_clones_ends_as_one_memory(team, invoke_cli) -> None:
    """Engram's de-duplication across clones: two agents saving the same observation (MCP's
    mem_save) before either synced get one memory, its duplicate count theirs summed, as two
    saves on one clone would; what differs (the text, or a SLayer note, never de-duplicated) stays."""
    _bare, (a, b) = team
    kb_a, kb_b = KnowledgeBase(a), KnowledgeBase(b)
    assert kb_a.save_observation("Flaky test", "test_login is flaky under load.", project="api").memory_id == "1"
    kb_a.save_memory("Amounts are gross.", ["orders.amount"])
    mine = kb_b.save_observation("Flaky test", "test_login is flaky  under load.\n", project="api").memory_id
    # Saved again on B: a duplicate counted here, to be folded into the memory's next commit.
    assert kb_b.save_observation("Flaky test", "test_login is flaky under load.", project="api").action == "duplicate"
    other = kb_b.save_observation("Flaky test", "test_login fails on Mondays.", project="api").memory_id
    note = kb_b.save_memory("Amounts are gross.", ["orders.amount"]).memory_id
    link = kb_b.save_memory("See the flaky test.", ["orders.amount", f"memory:{mine}"]).memory_id
    # The same save, then edited on B (links added): no longer that save, so never folded away.
    kb_a.save_observation("Gross amounts", "Amounts include VAT.", project="api")
    edited = kb_b.save_observation("Gross amounts", "Amounts include VAT.", project="api").memory_id
    kb_b.update(edited, entities=["orders.amount"])
    # The same save in two sessions: each session's own record, as on one clone.
    kb_a.save_observation("Deploy window", "Deploys stop at 16:00.", project="api", session_id="ses-a")
    sessioned = kb_b.save_observation("Deploy window", "Deploys stop at 16:00.", project="api",
                                      session_id="ses-b").memory_id
    sync(kb_a)
    proc = invoke_cli("--kb", b, "sync", check=True)
    assert proc.stdout.endswith(f"\n  merged (same save): {mine} into 1\n"), proc.stdout
    assert git(b, "log", "-1", "--format=%s", "--", f"memories/{mine}.yaml").strip() == (
        f"memory: merge {mine} into 1 (same save)")
    sync(KnowledgeBase(a))
    for root, count in ((a, 2), (b, 3)):  # B's uncommitted count went with its memory
        kb = KnowledgeBase(root)
        assert kb.get("1").to_dict()["duplicate_count"] == count
        assert not (root / "memories" / f"{mine}.yaml").exists()
        assert {other, note, edited, sessioned, "2", "3", "4"} <= {p.stem for p in (root / "memories").glob("*.yaml")}
        assert kb.get(edited).entities == ["shop.orders.amount"]
        assert kb.get(link).to_dict()["entities"] == ["shop.orders.amount", "memory:1"]
    with pytest.raises(ConflictError) as exc:
        KnowledgeBase(b).get(mine)
    assert str(exc.value).startswith(
        f"Memory id '{mine}' moved: sync merged this clone's memory {mine} into 1, which the upstream holds "
        f"as the same save (its title, text, links, project and scope); no memory has id '{mine}' now. Use 1")
    # The next such save, on either clone, counts on the one memory.
    again = KnowledgeBase(b).save_observation("Flaky test", "test_login is flaky under load.", project="api")
    assert (again.memory_id, again.action) == ("1", "duplicate")
    assert invoke_cli("--kb", b, "validate").returncode == 0


def test_validate_reports_a_topic_key_held_twice(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    kb = catalog_kb
    kb.save_observation("Retry budget", "Three retries.", project="api", topic_key="decision/retry")
    kb.save_observation("Other", "Something else.", project="api")
    text = (kb.root / "memories" / "2.yaml").read_text()
    (kb.root / "memories" / "2.yaml").write_text(text.replace("project: api\n", "project: api\ntopic_key: decision/retry\n"))
    proc = invoke_cli("--kb", kb.root, "validate")
    assert proc.returncode == 1
    message = ("topic_key 'decision/retry' in project 'api' is held by 2 memories (1, 2); a save under the key "
               "revises only the newest. Keep one: merge their learnings into it and forget the others "
               f"('slayer-kb --kb {kb.root} forget ID'), or give each its own topic_key")
    assert f"memories/1.yaml:1: {message}" in proc.stdout
    assert f"memories/2.yaml:1: {message}" in proc.stdout


def test_the_default_session_file_never_conflicts(team) -> None:
    _bare, (a, b) = team
    KnowledgeBase(a).save_observation("A's first", "Learned in newproj by A.", project="newproj")
    KnowledgeBase(a).save_prompt("A asks something", project="newproj")
    KnowledgeBase(b).save_observation("B's first", "Learned in newproj by B.", project="newproj")
    KnowledgeBase(b).save_prompt("B asks something", project="newproj")
    sync(KnowledgeBase(a))
    result = sync(KnowledgeBase(b))
    assert result.resolved == ["sessions/manual-save-newproj.yaml"]
    sync(KnowledgeBase(a))
    for root in (a, b):
        timeline = KnowledgeBase(root).session_timeline("manual-save-newproj")
        prompts = [p["content"] for p in timeline["session"]["prompts"]]
        assert sorted(prompts) == ["A asks something", "B asks something"]
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")


def test_a_topic_key_memory_revised_on_both_clones_merges(team) -> None:
    _bare, (a, b) = team
    kb_a = KnowledgeBase(a)
    kb_a.save_observation("Cache", "Redis, 5 min TTL.", project="api", topic_key="arch/cache")
    sync(kb_a)
    sync(KnowledgeBase(b))
    KnowledgeBase(a).save_observation("Cache", "Redis, 10 min TTL.", project="api", topic_key="arch/cache")
    sync(KnowledgeBase(a))
    KnowledgeBase(b).save_observation("Cache", "Redis, 1 min TTL for carts.", project="api", topic_key="arch/cache")
    result = sync(KnowledgeBase(b))
    assert result.resolved == ["memories/1.yaml"]
    memory = KnowledgeBase(b).get("1").to_dict()
    assert memory["learning"] == "Redis, 1 min TTL for carts." and memory["revision_count"] == 3


def test_a_forget_after_an_upsert_on_the_other_clone_is_not_lost(team) -> None:
    """A pushes an upsert of a topic key; B, not synced since, forgets the memory (MCP's
    mem_delete): B's sync keeps the forget (the upserted text in the file, for a restore) rather
    than take A's revision for the newer and drop B's commit."""
    _bare, (a, b) = team
    KnowledgeBase(a).save_observation("Cache", "Redis, 5 min TTL.", project="api", topic_key="arch/cache")
    sync(KnowledgeBase(a))
    sync(KnowledgeBase(b))
    KnowledgeBase(a).save_observation("Cache", "Redis, 10 min TTL.", project="api", topic_key="arch/cache")
    sync(KnowledgeBase(a))
    KnowledgeBase(b).forget("1", soft=True)
    result = sync(KnowledgeBase(b))
    assert (result.resolved, result.pushed) == (["memories/1.yaml"], 1)
    sync(KnowledgeBase(a))
    for root in (a, b):
        memory = KnowledgeBase(root).get("1", include_deleted=True)
        assert (memory.is_deleted, memory.learning, memory.revision_count) == (True, "Redis, 10 min TTL.", 2)


def test_sync_retries_a_refused_push(team) -> None:
    bare, (a, _b) = team
    # Others win the race for the first four pushes to the branch, as on a busy remote.
    lose_races(bare, 4)
    KnowledgeBase(a).save_memory("pushed at last", ["orders.amount"])
    result = sync(KnowledgeBase(a))
    assert (result.action, result.attempts, result.pulled) == ("rebased", 5, 4)
    assert git(bare, "rev-parse", "main") == git(a, "rev-parse", "HEAD")


def test_no_revision_is_lost_when_a_rebase_replays_several(team) -> None:
    """Two clones raise revision_count alike ("5" to "6"): a line merge takes that as one
    revision; the KB's merge driver counts every save."""
    _bare, (a, b) = team
    key = dict(type="decision", project="api", topic_key="arch/queue")
    KnowledgeBase(a).save_observation("Queue", "SQS.", **key)
    sync(KnowledgeBase(a))
    sync(KnowledgeBase(b))
    KnowledgeBase(a).save_observation("Queue", "SQS with a DLQ.", **key)
    sync(KnowledgeBase(a))
    for text in ("RabbitMQ.", "RabbitMQ, quorum queues.", "RabbitMQ, quorum queues, lazy mode."):
        assert KnowledgeBase(b).save_observation("Queue", text, **key).action == "revised"
    result = sync(KnowledgeBase(b))
    assert "memories/1.yaml" in result.resolved
    memory = KnowledgeBase(b).get("1").to_dict()
    # One save and four revisions on the two clones: five saves under the key.
    assert (memory["revision_count"], memory["learning"]) == (5, "RabbitMQ, quorum queues, lazy mode.")


def test_a_clone_beaten_to_a_block_leases_the_next(team) -> None:
    """The race of the test below, on cue: b's first look at the remote misses the block a has
    just leased (upload-pack hides refs/slayer-kb/ once), so b's lease of that block is beaten
    and b looks again and takes the next one, not an offline block."""
    bare, (a, b) = team
    assert KnowledgeBase(a).save_memory("from a", ["orders.amount"]).memory_id == "1"
    once = b.parent / "hide-leases-once"
    once.touch()
    git(b, "config", "remote.origin.uploadpack",
        f'f() {{ if rm "{once}" 2>/dev/null; then exec git -c uploadpack.hideRefs=refs/slayer-kb/ upload-pack "$@"; fi; '
        'exec git upload-pack "$@"; }; f')
    assert KnowledgeBase(b).save_memory("from b", ["orders.amount"]).memory_id == str(BLOCK + 1)
    assert not once.exists()  # b's first look missed block 0
    assert leased_blocks(bare) == [f"{NAMESPACE}0", f"{NAMESPACE}1"]


def test_refs_under_slayer_kbs_names_that_are_no_block_number_are_passed_over(team, invoke_cli) -> None:
    """The remote's refs are anyone's to push: ``ids/²`` passed ``str.isdigit`` and failed
    ``int``, stopping every auto-id save and every sync of the team with a traceback; ``ids/١٢``
    counted as block 12 (the next auto id 1301)."""
    bare, (a, b) = team
    invoke_cli("--kb", a, "save", "A: first", "-e", "shop.orders.amount", check=True)  # A leases block 0
    invoke_cli("--kb", a, "sync", check=True)
    empty = git(bare, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
    stray = git(bare, "commit-tree", empty, "-m", "not slayer-kb's").strip()
    for tail in ("²", "١٢", "01", "1" * 40):
        git(bare, "update-ref", f"{NAMESPACE}{tail}", stray)
        git(bare, "update-ref", f"{CLAIMS}{tail}", stray)
    saved = invoke_cli("--kb", b, "save", "B: first", "-e", "shop.orders.amount")
    assert (saved.returncode, saved.stdout.splitlines()[:1], saved.stderr) == (0, [f"Saved memory {BLOCK + 1} (created)"], "")
    for clone in (b, a, b):
        synced = invoke_cli("--kb", clone, "sync")
        assert (synced.returncode, synced.stderr) == (0, "")
    assert invoke_cli("--kb", a, "save", "A: second", "-e", "shop.orders", check=True).stdout.startswith(
        "Saved memory 2 (created)")
    assert invoke_cli("--kb", b, "get", str(BLOCK + 1), "--json", check=True).stdout.count("B: first") == 1


# A load run (-m slow): six processes leasing at once. The default run loses the same race on
# cue (test_a_clone_beaten_to_a_block_leases_the_next).
@pytest.mark.slow
def test_clones_racing_for_their_first_block_all_get_one(tmp_path: Path) -> None:
    bare, roots = make_team(tmp_path, 6)
    env = {**os.environ, "SLAYER_KB_SERVER": "off"}
    procs = [subprocess.Popen([sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", f"from {root.name}",
                               "-e", "orders.amount"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for root in roots]
    replies = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 6, replies
    ids = [int(out.split()[2]) for out, _err in replies]
    # Every clone leased a block of its own on the remote: none fell back to offline ids.
    assert len(set(ids)) == 6 and max(ids) < 10 * BLOCK, ids
    assert len(leased_blocks(bare)) == 6


# Hooks of a remote that takes branches but protects refs/slayer-kb/ (the ids' namespace).
PROTECTING_HOOKS = {
    "pre-receive": "#!/bin/sh\nif grep -q ' refs/slayer-kb/'; then echo 'refs/slayer-kb/ is protected'; exit 1; fi\n",
    "update": "#!/bin/sh\ncase \"$1\" in refs/slayer-kb/*) echo 'refs/slayer-kb/ is protected'; exit 1;; esac\n",
}


@pytest.mark.parametrize("hook", default_first(sorted(PROTECTING_HOOKS)))
def test_a_remote_that_refuses_our_refs_gets_ids_no_leased_block_holds(team, hook: str) -> None:
    """A clone that cannot lease draws an offline block, as an unreachable one does: counting 1,
    2, 3 would hand out ids of the blocks the team's clones leased before the hook came."""
    bare, (a, b) = team
    kb_b = KnowledgeBase(b)
    assert kb_b.save_memory("B: leased", ["orders.amount"]).memory_id == "1"
    sync(kb_b)
    path = bare / "hooks" / hook
    path.write_text(PROTECTING_HOOKS[hook])
    path.chmod(0o755)
    kb_a = KnowledgeBase(a)
    ids = [kb_a.save_memory(f"A: note {n}", ["orders.amount"]).memory_id for n in range(2)]
    assert int(ids[0]) > 10**9 and int(ids[1]) == int(ids[0]) + 1, ids
    held = json.loads((a / ".git" / "slayer-kb-ids.json").read_text())
    assert (held["refused"], held["unregistered"]) == (True, [(int(ids[0]) - 1) // BLOCK])
    assert kb_b.save_memory("B: next", ["orders.qty"]).memory_id == "2"
    # Branches still go through: both clones' memories arrive under the ids their saves returned.
    assert sync(kb_a).renumbered == {}
    assert sync(kb_b).renumbered == {}
    assert sorted((p.stem for p in (b / "memories").glob("*.yaml")), key=int) == sorted(["1", "2", *ids], key=int)
    # The next sync once the remote takes the refs registers the block, as for an offline one.
    path.unlink()
    sync(KnowledgeBase(a))
    assert leased_blocks(bare) == [f"{NAMESPACE}0", f"{NAMESPACE}{(int(ids[0]) - 1) // BLOCK}"]
    assert json.loads((a / ".git" / "slayer-kb-ids.json").read_text())["unregistered"] == []


def test_two_clones_folding_alike_still_count_every_revision(tmp_path: Path) -> None:
    """Two clones fold their own memory of a key into the same upstream memory and get the very
    same file: git takes that as one change (it never asks the driver), so sync counts again."""
    bare, (a, b, c) = make_team(tmp_path, 3)
    key = dict(type="decision", project="api", topic_key="arch/cache")
    KnowledgeBase(a).save_observation("Cache", "Redis.", **key)
    sync(KnowledgeBase(a))
    for root in (b, c):  # their own memory of the key, before they have seen a's
        KnowledgeBase(root).save_observation("Cache", f"Memcached, says {root.name}.", **key)
    time.sleep(1.1)  # times have a resolution of a second: a's next save is the newest
    KnowledgeBase(a).save_observation("Cache", "Redis, 5 min TTL.", **key)
    sync(KnowledgeBase(a))
    # c folds against the remote as a left it (a snapshot), as if b pushed just after c fetched.
    git(tmp_path, "clone", "-q", "--bare", str(bare), "snapshot.git")
    sync(KnowledgeBase(b))
    git(c, "remote", "set-url", "origin", str(tmp_path / "snapshot.git"))
    assert sync(KnowledgeBase(c)).merged
    git(c, "remote", "set-url", "origin", str(bare))
    sync(KnowledgeBase(c))
    memory = KnowledgeBase(c).get("1").to_dict()
    # a's two saves, b's and c's: four saves under the key.
    assert (memory["learning"], memory["revision_count"]) == ("Redis, 5 min TTL.", 4)
    assert git(c, "log", "-1", "--format=%s", "--", "memories/1.yaml").strip() == "memory: count both sides' revisions of 1"


def test_the_ids_settings_are_read_again_when_the_global_config_changes(tmp_path: Path) -> None:
    """A process that saves again and again (a warm server) read the ids' settings again only
    when the clone's own config changed: a 'slayer-kb.ids' set or unset in the user's config was
    not seen until the process ended. Every config file git reads counts, the user's too."""
    bare, (a,) = make_team(tmp_path, 1)
    git(a, "config", "--global", "slayer-kb.ids", "sequential")
    kb = KnowledgeBase(a)
    assert kb.save_memory("Counted on its own", ["orders.amount"]).memory_id == "1"
    assert leased_blocks(bare) == []
    git(a, "config", "--global", "--unset", "slayer-kb.ids")
    # Leased: the block that holds the next id, where a clone counting on its own leases none.
    assert kb.save_memory("Leased from the remote", ["orders.amount"]).memory_id == "2"
    assert leased_blocks(bare) == [f"{NAMESPACE}0"]


def test_sync_uses_the_remote_ids_are_leased_from(tmp_path: Path, invoke_cli) -> None:
    """A clone whose only remote is not named origin (git clone -o upstream): sync, like the
    id leases, takes the branch's remote, with no --remote to give."""
    bare, _ = make_team(tmp_path, clones=0)
    git(tmp_path, "clone", "-q", "-o", "upstream", str(bare), "u")
    u = tmp_path / "u"
    saved = invoke_cli("--kb", u, "save", "U: one", "-e", "shop.orders.amount", check=True)
    assert saved.stdout.splitlines()[0] == "Saved memory 1 (created)"
    assert leased_blocks(bare) == [f"{NAMESPACE}0"]
    synced = invoke_cli("--kb", u, "sync", check=True)
    assert synced.stdout == "Synced main with upstream: pushed, 0 pulled, 1 pushed.\n"
    assert git(bare, "show", "main:memories/1.yaml").startswith("learning: 'U: one'\n")
    assert json_of(invoke_cli("--kb", u, "sync", "--json", check=True))["remote"] == "upstream"
    # A remote given by name still wins; one that does not exist is named, with those that do.
    proc = invoke_cli("--kb", u, "sync", "--remote", "origin")
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: No git remote named 'origin'; the remotes here: 'upstream'. Sync with one of them (slayer-kb --kb {u} "
        f"sync --remote upstream), or add 'origin' (git -C {u} remote add origin URL).\n"))


def test_a_renumbered_memory_takes_an_id_no_other_clone_holds(tmp_path: Path) -> None:
    """A clone counting on its own (sequential) published 1 first; the leased clone that also
    saved 1 is renumbered. Its fresh id comes from its own blocks: one above every id in sight
    (102) is in another clone's block, and would renumber that clone's next save in turn."""
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    git(b, "config", "slayer-kb.ids", "sequential")
    kb_a, kb_b, kb_c = KnowledgeBase(a), KnowledgeBase(b), KnowledgeBase(c)
    assert kb_a.save_memory("A: leased", ["orders.amount"]).memory_id == "1"
    assert kb_c.save_memory("C: leased", ["orders.amount"]).memory_id == str(BLOCK + 1)
    assert kb_b.save_memory("B: on its own", ["orders.amount"]).memory_id == "1"
    assert kb_b.save_memory("B: two", ["orders.qty"]).memory_id == "2"
    sync(kb_b)
    sync(kb_c)
    # 2 is in A's block but B used it: skipped.
    assert sync(kb_a).renumbered == {"1": "3"}
    assert KnowledgeBase(a).read("3").learning == "A: leased"
    assert KnowledgeBase(a).read("2").learning == "B: two"
    assert kb_c.save_memory("C: next", ["orders.qty"]).memory_id == str(BLOCK + 2)
    assert sync(kb_c).renumbered == {}
    assert KnowledgeBase(c).read(str(BLOCK + 2)).learning == "C: next"


def test_a_copied_clone_leases_afresh_and_the_original_keeps_its_block(team) -> None:
    """``cp -r`` of a clone copies its lease file: both copies would hand out the same ids."""
    bare, (a, _b) = team
    assert KnowledgeBase(a).save_memory("A: before the copy", ["orders.amount"]).memory_id == "1"
    copy = a.parent / "a-copy"
    shutil.copytree(a, copy, symlinks=True)
    kb_a, kb_copy = KnowledgeBase(a), KnowledgeBase(copy)
    assert kb_a.save_memory("A: the original's", ["orders.amount"]).memory_id == "2"
    assert kb_copy.save_memory("A: the copy's", ["orders.qty"]).memory_id == str(BLOCK + 1)
    assert kb_a.save_memory("A: the original's next", ["orders.amount"]).memory_id == "3"
    assert sync(kb_a).renumbered == {}
    assert sync(kb_copy).renumbered == {}
    assert leased_blocks(bare) == [f"{NAMESPACE}0", f"{NAMESPACE}1"]
    on_main = {name: git(bare, "show", f"main:memories/{name}.yaml").splitlines()[0]
               for name in ("1", "2", "3", str(BLOCK + 1))}
    assert on_main == {"1": "learning: 'A: before the copy'", "2": "learning: 'A: the original''s'",
                       "3": "learning: 'A: the original''s next'", str(BLOCK + 1): "learning: 'A: the copy''s'"}


def test_a_copy_holding_a_save_the_original_pushed_after_a_rebase_adds_it_once(team) -> None:
    """The copy (``cp -r``) holds the original's unpushed save; the original's sync replays it
    onto what another clone pushed first, as a new commit. The copy's sync then meets the same
    memory under another commit: it is one memory, not two to renumber apart."""
    bare, (a, b) = team
    assert KnowledgeBase(a).save_memory("A: saved before the copy", ["orders.amount"]).memory_id == "1"
    copy = a.parent / "a-copy"
    shutil.copytree(a, copy, symlinks=True)
    assert KnowledgeBase(b).save_memory("B: first to push", ["orders.qty"]).memory_id == str(BLOCK + 1)
    sync(KnowledgeBase(b))
    assert sync(KnowledgeBase(a)).renumbered == {}
    kb_copy = KnowledgeBase(copy)
    assert kb_copy.save_memory("A: the copy's own", ["orders.qty"]).memory_id == str(2 * BLOCK + 1)
    assert sync(kb_copy).renumbered == {}
    on_main = sorted(git(bare, "ls-tree", "--name-only", "main", "memories/").split(), key=lambda p: int(Path(p).stem))
    assert on_main == [f"memories/{n}.yaml" for n in (1, BLOCK + 1, 2 * BLOCK + 1)]
    assert git(bare, "log", "--format=%s", "main").splitlines()[:3] == [
        f"memory: save {2 * BLOCK + 1}", "memory: save 1", f"memory: save {BLOCK + 1}"]


def test_a_memory_squash_merged_and_edited_on_main_is_no_collision(team, invoke_cli) -> None:
    """A pull request merged by squash or rebase puts the branch's memory on main under another
    commit, and main may edit it before the branch is compared again: one memory, not two (no
    renumbering), though a plain merge stops on it (an add/add: git's merge base lacks it)."""
    _bare, (a, _b) = team
    git(a, "switch", "-q", "-c", "agent")
    assert KnowledgeBase(a).save_memory("A: on the agent's branch", ["orders.amount"]).memory_id == "1"
    git(a, "switch", "-q", "main")
    KnowledgeBase(a).save_memory("A: on main first", ["orders.qty"])
    git(a, "cherry-pick", "agent")
    KnowledgeBase(a).save_memory("A: on the agent's branch, edited on main", ["orders.amount"], id="1")
    git(a, "switch", "-q", "agent")
    checked = invoke_cli("--kb", a, "validate", "--against", "main")
    assert (checked.returncode, len(checked.stdout.splitlines())) == (1, 2), checked.stdout
    assert "1.yaml:1: main wrote this memory too since this branch parted from it" in checked.stdout
    assert "renumber" not in checked.stdout
    assert plan(KnowledgeBase(a), "main")[1] == {}


def test_an_offline_block_used_up_before_a_sync_is_still_registered(team) -> None:
    """A used-up offline block draws no more ids, but its ids are in memories: the remote must
    hold its ref, or another clone could choose that block offline and collide."""
    bare, (a, _b) = team
    git(a, "remote", "set-url", "origin", str(bare.parent / "unreachable.git"))
    # One take of BLOCK + 1 ids uses up one offline block and draws the first id of a second.
    ids = [int(i) for i in IdLeases(GitStore(a)).take(BLOCK + 1, 0, lambda n: False) or []]
    used_up, current = (ids[0] - 1) // BLOCK, (ids[-1] - 1) // BLOCK
    assert ids[:BLOCK] == list(range(ids[0], ids[0] + BLOCK)) and used_up != current
    git(a, "remote", "set-url", "origin", str(bare))
    sync(KnowledgeBase(a))
    assert leased_blocks(bare) == sorted([f"{NAMESPACE}{used_up}", f"{NAMESPACE}{current}"], key=lambda r: int(r.rsplit("/", 1)[1]))
    held = json.loads((a / ".git" / "slayer-kb-ids.json").read_text())
    # No ids are drawn from the used-up block again.
    assert (held["unregistered"], [k for k, _n in held["blocks"]]) == ([], [current])


def test_a_topic_key_pushed_by_a_copys_original_and_revised_on_both_counts_each_revision_once(
        team, invoke_cli) -> None:
    """The copy holds the original's unpushed save of a topic key, which the original pushed
    under another commit (its sync replayed it) and then revised; the copy revised it too. The
    copy's sync merged the save against the original's revision from an empty base, counting
    the save twice (4 revisions for 3 saves), and pushed the save a second time."""
    _bare, (a, b) = team
    topic = ("--title", "Cache TTL", "--type", "decision", "--project", "api", "--topic-key", "decision/cache-ttl")
    invoke_cli("--kb", a, "save", "Cache TTL is 60 s", *topic, check=True)
    copy = a.parent / "a-copy"
    shutil.copytree(a, copy, symlinks=True)
    invoke_cli("--kb", b, "save", "B: first to push", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for root, text in ((a, "Cache TTL is 90 s"), (copy, "Cache TTL is 120 s")):
        invoke_cli("--kb", root, "save", text, *topic, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    synced = invoke_cli("--kb", copy, "sync", check=True)
    assert synced.stdout.startswith("Synced main with origin: rebased, 3 pulled, 1 pushed.\n")
    shown = json_of(invoke_cli("--kb", copy, "--json", "get", "1", check=True))
    assert (shown["learning"], shown["revision_count"]) == ("Cache TTL is 120 s", 3)
    assert git(copy, "log", "--format=%s", "origin/main").count("memory: save 1 (decision: Cache TTL)") == 1


def test_a_remote_moved_to_a_new_url_keeps_the_clones_blocks(team) -> None:
    """'git remote set-url' to where the same repository now is dropped the clone's blocks and
    leased new ones (ids jumping from 2 to 201). The refs of its blocks are there, at the commits
    it pushed: the blocks are kept. Another repository at the url is not the same remote."""
    bare, (a, _b) = team
    kb = KnowledgeBase(a)
    assert kb.save_memory("before the move", ["orders.amount"]).memory_id == "1"
    moved = bare.parent / "moved.git"
    bare.rename(moved)
    git(a, "remote", "set-url", "origin", str(moved))
    assert KnowledgeBase(a).save_memory("after the move", ["orders.amount"]).memory_id == "2"
    assert leased_blocks(moved) == [f"{NAMESPACE}0"]
    # A repository that never held the clone's blocks: leased afresh there.
    other, _ = make_team(bare.parent / "other", clones=0)
    git(other, "update-ref", f"{NAMESPACE}0", git(other, "rev-parse", "main").strip())  # another clone's block 0
    git(a, "remote", "set-url", "origin", str(other))
    assert KnowledgeBase(a).save_memory("on another remote", ["orders.amount"]).memory_id == str(BLOCK + 1)


def test_an_offline_block_registered_then_a_new_url_keeps_ids_increasing(team) -> None:
    """An offline block a sync registered, then 'git remote set-url' to another repository: the
    block was dropped with the old remote's leases, and the next save leased block 0 there,
    handing out 2 after the ten-digit offline id. The block is kept until used up (registered on
    the new remote at its sync), whether the new remote answers or not, and back on the first
    remote, where the block's ref is at the commit this clone pushed there: still its own."""
    bare, (a, _b) = team
    unreachable = str(bare.parent / "unreachable.git")
    assert KnowledgeBase(a).save_memory("leased", ["orders.amount"]).memory_id == "1"
    git(a, "remote", "set-url", "origin", unreachable)
    offline = int(KnowledgeBase(a).save_memory("offline", ["orders.amount"]).memory_id)
    assert offline > OFFLINE_FIRST * BLOCK
    git(a, "remote", "set-url", "origin", str(bare))
    sync(KnowledgeBase(a))
    assert f"{NAMESPACE}{(offline - 1) // BLOCK}" in leased_blocks(bare)
    other, _ = make_team(bare.parent / "other", clones=0)
    git(a, "remote", "set-url", "origin", str(other))
    assert KnowledgeBase(a).save_memory("on another remote", ["orders.amount"]).memory_id == str(offline + 1)
    git(a, "remote", "set-url", "origin", unreachable)
    assert KnowledgeBase(a).save_memory("offline there", ["orders.amount"]).memory_id == str(offline + 2)
    git(a, "remote", "set-url", "origin", str(other))
    sync(KnowledgeBase(a))
    assert f"{NAMESPACE}{(offline - 1) // BLOCK}" in leased_blocks(other)
    # Back on the first remote, whose ref of the block its sync took for another clone's.
    git(a, "remote", "set-url", "origin", str(bare))
    sync(KnowledgeBase(a))
    assert KnowledgeBase(a).save_memory("back home", ["orders.amount"]).memory_id == str(offline + 3)


def test_one_engram_export_imported_on_two_clones_counts_once(team, tmp_path: Path) -> None:
    """Two agents import the same Engram export before either synced: each observation ends as one
    memory whose counts are the export's, not summed (2N) as two saves would be; an observation
    the export gives an updated_at (no edit made here) folds too."""
    _bare, (a, b) = team
    export = tmp_path / "engram.json"
    export.write_text(json.dumps({"observations": [
        {"title": "Flaky test", "content": "test_login is flaky.", "project": "api", "duplicate_count": 3,
         "session_id": "s-api",
         "created_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())},  # saved again below: a duplicate
        {"title": "Retry budget", "content": "Three retries.", "project": "api", "topic_key": "decision/retry",
         "revision_count": 4, "duplicate_count": 2, "created_at": "2026-03-01 10:21:00",
         "updated_at": "2026-03-02 09:00:00"},
        {"title": "Gross amounts", "content": "Amounts include VAT.", "project": "api",
         "created_at": "2026-03-01 10:22:00", "updated_at": "2026-03-01 11:00:00"},
    ]}))
    ids = {root: KnowledgeBase(root).interchange.import_engram(export).imported for root in (a, b)}
    assert ids == {a: ["1", "2", "3"], b: [str(BLOCK + n) for n in (1, 2, 3)]}
    # Revised or counted again on one clone since: that clone's own counts, the import's once.
    KnowledgeBase(b).save_observation("Retry budget", "Five retries.", project="api", topic_key="decision/retry")
    flaky = KnowledgeBase(b).save_observation("Flaky test", "test_login is flaky.", project="api", session_id="s-api")
    assert flaky.action == "duplicate"  # the same save in the same session
    sync(KnowledgeBase(a))
    result = sync(KnowledgeBase(b))
    assert (result.merged, result.deduplicated) == ({str(BLOCK + 2): "2"}, {str(BLOCK + 1): "1", str(BLOCK + 3): "3"})
    sync(KnowledgeBase(a))
    for root, pending in ((a, 0), (b, 1)):  # B's duplicate, not committed yet, went with its memory
        kb = KnowledgeBase(root)
        assert sorted(p.stem for p in (root / "memories").glob("*.yaml")) == ["1", "2", "3"]
        counts = [(m.revision_count, m.duplicate_count) for m in (kb.get(i) for i in ("1", "2", "3"))]
        assert counts == [(None, 3 + pending), (5, 2), (None, None)]
        assert kb.get("2").learning == "Five retries."


CACHE_KEY = dict(type="decision", project="api", topic_key="arch/cache")


def _cache_key_held_by_both(kbs: list[Path]) -> None:
    """Clone a saves arch/cache's first revision and syncs; clone b syncs it in (made once a
    process and copied: ``make_team_after``)."""
    a, b = kbs
    KnowledgeBase(a).save_observation("Cache", "Redis, 5 min TTL.", **CACHE_KEY)
    sync(KnowledgeBase(a))
    sync(KnowledgeBase(b))


def test_a_persons_edit_of_a_topic_key_memory_with_plain_git_is_dated_at_its_commit(tmp_path: Path) -> None:
    """A person edits a topic-key memory by hand and commits it with git, which sets no
    updated_at: against another clone's upsert saved before the edit, the upsert's updated_at won
    the merge by time and the edit was lost, whichever clone held it. The edit is dated at its
    commit (its author date): the later of the two holds, every revision counted."""
    _bare, (a, b) = make_team_after(tmp_path, "cache-key-held-by-both", _cache_key_held_by_both)
    key = CACHE_KEY
    later = f"{int(time.time()) + 3600} +0000"  # an hour on: no clock second to wait for

    def edit_by_hand(root: Path, old: str, new: str) -> None:
        path = root / "memories" / "1.yaml"
        path.write_text(path.read_text().replace(old, new))
        subprocess.run(["git", "commit", "-qam", "cache: carts expire sooner"], cwd=root, check=True,
                       env={**os.environ, "GIT_AUTHOR_DATE": later})

    KnowledgeBase(b).save_observation("Cache", "Redis, 10 min TTL.", **key)  # not synced yet
    edit_by_hand(a, "Redis, 5 min TTL.", "Redis, 5 min TTL; carts 1 min.")
    git(a, "push", "-q", "origin", "main")  # the person's push: plain git
    assert sync(KnowledgeBase(b)).resolved == ["memories/1.yaml"]
    memory = KnowledgeBase(b).get("1")
    assert (memory.learning, memory.revision_count) == ("Redis, 5 min TTL; carts 1 min.", 2)
    # The other way round: A's upsert pushed first, the person's later edit on B replayed onto it.
    sync(KnowledgeBase(a))
    KnowledgeBase(a).save_observation("Cache", "Redis, 15 min TTL.", **key)
    sync(KnowledgeBase(a))
    edit_by_hand(b, "carts 1 min.", "carts 2 min.")
    sync(KnowledgeBase(b))
    memory = KnowledgeBase(b).get("1")
    assert (memory.learning, memory.revision_count) == ("Redis, 5 min TTL; carts 2 min.", 3)


def test_a_forget_against_an_upsert_of_its_topic_key_the_later_holds(tmp_path: Path, invoke_cli) -> None:
    """A forget (the file deleted) on one clone, an upsert of the memory's topic key on the other:
    sync stopped for a person ("forgot memories/1.yaml, which origin/main edited"). The later of
    the two holds, as for a soft forget, the forget dated by its commit; a forget that lost is said."""
    _bare, (a, b) = make_team_after(tmp_path, "cache-key-held-by-both", _cache_key_held_by_both)
    key = CACHE_KEY

    def forget(root: Path, hours: int, memory_id: str = "1") -> None:  # dated an hour off: no second to wait for
        KnowledgeBase(root).forget(memory_id)
        git(root, "commit", "-q", "--amend", "--no-edit", f"--date={int(time.time()) + 3600 * hours} +0000")

    forget(a, -1)
    sync(KnowledgeBase(a))
    KnowledgeBase(b).save_observation("Cache", "Redis, 10 min TTL.", **key)  # after A's forget
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
                             "  merged both sides of: memories/1.yaml\n"
                             "  kept, its forget undone by a later upsert of its topic key or edit: 1\n")
    memory = KnowledgeBase(b).get("1")
    assert (memory.learning, memory.revision_count) == ("Redis, 10 min TTL.", 2)
    # A forget made after the other clone's upsert holds: the memory goes.
    sync(KnowledgeBase(a))
    KnowledgeBase(a).save_observation("Cache", "Redis, 15 min TTL.", **key)
    sync(KnowledgeBase(a))
    forget(b, 1)
    assert sync(KnowledgeBase(b)).unforgotten == []
    sync(KnowledgeBase(a))
    for root in (a, b):
        assert not (root / "memories" / "1.yaml").exists()
        assert git(root, "status", "--porcelain") == ""
    # B upserts, A forgets later and pushes first: the forget holds and B's upsert commit, replayed
    # onto it, becomes empty. It was gone from the branch and the reply said nothing of it.
    saved = KnowledgeBase(b).save_observation("Cache", "Redis, 20 min TTL.", **key).memory_id  # 1 was forgotten
    sync(KnowledgeBase(b))
    sync(KnowledgeBase(a))
    KnowledgeBase(b).save_observation("Cache", "Redis, 25 min TTL.", **key)
    forget(a, 1, saved)
    sync(KnowledgeBase(a))
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: rebased, 1 pulled, 0 pushed.\n"
                             f"  merged both sides of: memories/{saved}.yaml\n"
                             "  forgotten on origin after this clone changed it, the change dropped "
                             f"(git reflog holds it): {saved}\n")
    assert not (b / "memories" / f"{saved}.yaml").exists()
    assert "Redis, 25 min TTL." in git(b, "show", f"HEAD@{{1}}:memories/{saved}.yaml")  # the reflog holds it


def test_a_forget_against_a_persons_later_edit_with_plain_git_keeps_the_edit(team, invoke_cli) -> None:
    """A person edits a topic-key memory by hand (git commit: updated_at left as it was) after the
    other clone forgot it: the forget was weighed against the updated_at the edit left, so it always
    held, and the edit vanished from the branch whichever clone pushed first."""
    _bare, (a, b) = team
    key = dict(type="decision", project="api", topic_key="arch/cache")
    later = f"{int(time.time()) + 3600} +0000"  # an hour on: no clock second to wait for

    def edit_by_hand(root: Path, new: str) -> None:
        path = root / "memories" / "1.yaml"
        path.write_text(path.read_text().replace(KnowledgeBase(root).get("1").learning, new))
        subprocess.run(["git", "commit", "-qam", "cache: carts expire sooner"], cwd=root, check=True,
                       env={**os.environ, "GIT_AUTHOR_DATE": later})

    KnowledgeBase(a).save_observation("Cache", "Redis, 5 min TTL.", **key)
    sync(KnowledgeBase(a))
    sync(KnowledgeBase(b))
    # The forget pushed first, the person's edit replayed onto it.
    KnowledgeBase(a).forget("1")
    sync(KnowledgeBase(a))
    edit_by_hand(b, "Redis, 5 min TTL; carts 1 min.")
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
                             "  merged both sides of: memories/1.yaml\n"
                             "  kept, its forget undone by a later upsert of its topic key or edit: 1\n")
    assert KnowledgeBase(b).get("1").learning == "Redis, 5 min TTL; carts 1 min."
    # The edit pushed first, the forget replayed onto it.
    sync(KnowledgeBase(a))
    KnowledgeBase(b).forget("1")
    edit_by_hand(a, "Redis, 5 min TTL; carts 2 min.")
    git(a, "push", "-q", "origin", "main")
    assert sync(KnowledgeBase(b)).unforgotten == ["1"]
    assert KnowledgeBase(b).get("1").learning == "Redis, 5 min TTL; carts 2 min."
    assert git(b, "log", "-1", "--format=%s") == "cache: carts expire sooner\n"  # the forget's commit went


def test_a_session_summary_replaced_on_one_clone_stays_replaced(team) -> None:
    """A session ended on one clone is ended again there with a new summary while the other clone
    only adds a prompt: sync's merge had no base, kept both summaries, and the replaced one came back."""
    _bare, (a, b) = team
    KnowledgeBase(a).session_start("ses-1", "api")
    KnowledgeBase(a).session_end("ses-1", "S0: first draft.")
    sync(KnowledgeBase(a))
    sync(KnowledgeBase(b))
    KnowledgeBase(a).session_end("ses-1", "S1: the corrected summary.")
    sync(KnowledgeBase(a))
    KnowledgeBase(b).save_prompt("One more question", "ses-1")
    assert sync(KnowledgeBase(b)).resolved == ["sessions/ses-1.yaml"]
    session = load_session((b / "sessions" / "ses-1.yaml").read_text(), "ses-1")
    assert (session.summary, [p.content for p in session.prompts]) == ("S1: the corrected summary.", ["One more question"])


def test_one_session_started_for_two_projects_keeps_the_first_pushed_and_says_so(team, invoke_cli) -> None:
    """One Engram session id started on two clones for two projects: sync kept the project pushed
    first without a word, B's start went as an empty commit, and B's prompts counted as A's project's."""
    _bare, (a, b) = team
    invoke_cli("--kb", a, "session-start", "ses-1", "--project", "a", check=True)
    invoke_cli("--kb", b, "session-start", "ses-1", "--project", "b", check=True)
    invoke_cli("--kb", b, "save-prompt", "Which orders are test orders?", "--session", "ses-1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    synced = invoke_cli("--kb", b, "--json", "sync", check=True)
    assert json_of(synced)["session_projects"] == {"sessions/ses-1.yaml": {"session": "ses-1", "upstream": "a", "here": "b", "kept": "a"}}
    # In --json the warning is the key above, not a line on stderr.
    assert (json_of(synced)["resolved"], synced.stderr) == (["sessions/ses-1.yaml"], "")
    session = load_session((b / "sessions" / "ses-1.yaml").read_text(), "ses-1")
    assert (session.project, [(p.content, p.project) for p in session.prompts]) == (
        "a", [("Which orders are test orders?", "b")])
    # The text names both projects, the one kept and the file, on the clone whose start lost.
    invoke_cli("--kb", b, "session-start", "ses-2", "--project", "b", check=True)  # first: A's start adds nothing
    invoke_cli("--kb", a, "session-start", "ses-2", "--project", "a", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 2 pulled, 0 pushed.\n"
        "  merged both sides of: sessions/ses-2.yaml\n"
        "  warning: session 'ses-2' was started for project 'b' on origin/main and for project 'a' here: it keeps "
        "'b' (sessions/ses-2.yaml), and the prompts given here say 'a'; give a session for another project an id "
        "of its own\n")


def test_merge_and_rebase_warn_of_one_session_started_for_two_projects_as_sync_does(team, invoke_cli) -> None:
    """merge and rebase reach the same merge of a session both sides started for two projects as
    sync, and said nothing of it: the warning came only at the next sync, which merged nothing."""
    _bare, (a, b) = team
    invoke_cli("--kb", a, "session-start", "ses-1", "--project", "a", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "session-start", "ses-1", "--project", "b", check=True)
    invoke_cli("--kb", b, "save-prompt", "Which orders are test orders?", "--session", "ses-1", check=True)
    git(b, "fetch", "-q", "origin")
    before = git(b, "rev-parse", "HEAD").strip()
    merged = invoke_cli("merge", "origin/main", cwd=b, check=True)
    assert merged.stdout == (
        "Merged origin/main; run slayer-kb sync to push.\n"
        "  warning: session 'ses-1' was started for project 'a' on origin/main and for project 'b' here: it keeps "
        "'b' (sessions/ses-1.yaml), and the prompts given on origin/main say 'a'; give a session for another project "
        "an id of its own\n")
    git(b, "reset", "-q", "--hard", before)
    rebased = invoke_cli("--kb", b, "--json", "rebase", "origin/main", check=True)
    assert json_of(rebased)["session_projects"] == {
        "sessions/ses-1.yaml": {"session": "ses-1", "upstream": "a", "here": "b", "kept": "a"}}


@pytest.mark.slow
def test_a_fold_pushed_after_an_upsert_does_not_take_its_place(tmp_path: Path) -> None:
    """Sync's fold (``memory: merge N into M``) changes only counts and created_at, as a person's
    edit leaves updated_at: it was dated at its commit and beat an upsert another clone made
    before it, which that clone's next sync lost. Three clones, each step in a later second."""
    _bare, (a, b, c) = make_team(tmp_path, 3)
    key = dict(type="decision", project="api", topic_key="arch/cache")

    KnowledgeBase(b).save_observation("Cache", "B: two retries.", **key)
    next_second()
    KnowledgeBase(a).save_observation("Cache", "A: three retries.", **key)
    sync(KnowledgeBase(a))
    next_second()
    sync(KnowledgeBase(c))
    held = KnowledgeBase(c).save_observation("Cache", "C: five retries.", **key).memory_id
    next_second()
    folded = sync(KnowledgeBase(b))
    assert (folded.merged, git(b, "log", "-1", "--format=%s")) == (
        {"1": held}, f"memory: merge 1 into {held} (topic arch/cache)\n")
    sync(KnowledgeBase(c))
    memory = KnowledgeBase(c).get(held)
    assert (memory.learning, memory.revision_count) == ("C: five retries.", 3)


def test_a_retry_that_renumbers_a_folded_memory_reports_the_fold_under_its_new_id(team) -> None:
    """Sequential ids: the first attempt renumbers B's memories and folds its topic key (2) into
    the upstream's 1; the push is refused, and the retry meets an upstream that used B's ids
    since, so the replayed commits move 2 to 7 ('memory: merge 7 into 1'). The reply said
    'merged 2 into 1' beside 'renumbered 2 -> 7', so 7, an id sync told the agent, named nothing."""
    bare, (a, b) = team
    for root in (a, b):
        git(root, "config", "slayer-kb.ids", "sequential")
    key = dict(type="decision", project="api", topic_key="arch/cache")
    KnowledgeBase(a).save_observation("Cache", "Redis, 5 min TTL.", **key)
    sync(KnowledgeBase(a))
    KnowledgeBase(b).save_memory("B's note", ["orders.amount"])
    assert KnowledgeBase(b).save_observation("Cache", "Redis, 10 min TTL.", **key).memory_id == "2"
    for n in range(4):  # what another clone pushes first: ids 2 to 5
        KnowledgeBase(a).save_memory(f"A's note {n}", ["orders.amount"])
    git(a, "push", "-q", "origin", "HEAD:refs/prepared/next")
    lose_races(bare, 1, to="refs/prepared/next")
    result = sync(KnowledgeBase(b))
    assert (result.attempts, result.renumbered, result.merged) == (2, {"1": "6", "2": "7"}, {"7": "1"})
    assert git(b, "log", "-1", "--format=%s") == "memory: merge 7 into 1 (topic arch/cache) (renumber 2 -> 7)\n"
    for held in ("2", "7"):  # the id the save returned, and the one sync said it moved to
        with pytest.raises(ConflictError, match=f"^Memory id '{held}' moved: .* Use 1 for the memory saved here"):
            KnowledgeBase(b).update(held, learning="x")
    assert KnowledgeBase(b).read("1").learning == "Redis, 10 min TTL."


def test_a_given_number_in_no_other_clones_block_is_taken(team, invoke_cli) -> None:
    """save --id refused every number outside the blocks this clone held: one no clone leased (a
    fresh clone), one of its own used-up block, and any when the remote could not be reached.
    Only a block another clone leased is refused; one no clone leased is claimed for the number."""
    bare, (x, y) = team
    given = invoke_cli("--kb", x, "save", "X: thirty", "-e", "shop.orders", "--id", "30")
    assert (given.returncode, given.stderr) == (0, ""), given.stderr
    assert claimed_blocks(bare) == [f"{CLAIMS}0"]  # claimed: no clone leases block 0 now
    assert leased_blocks(bare) == []
    assert invoke_cli("--kb", x, "save", "X: auto", "-e", "shop.orders", check=True).stdout.startswith(
        f"Saved memory {BLOCK + 1} (created)")  # nor draws from it: auto ids stay monotonic
    assert invoke_cli("--kb", y, "save", "Y: auto", "-e", "shop.orders", check=True).stdout.startswith(
        f"Saved memory {2 * BLOCK + 1} (created)")
    # Y's own block, used up (its next save draws from the next block), is still Y's to give.
    IdLeases(GitStore(y)).take(BLOCK - 1, 0, lambda n: False)
    invoke_cli("--kb", y, "save", "Y: next block", "-e", "shop.orders", check=True)
    given = invoke_cli("--kb", y, "save", "Y: my old block", "-e", "shop.orders", "--id", f"{2 * BLOCK + 60}")
    assert (given.returncode, given.stderr) == (0, ""), given.stderr
    # Unreachable: taken, as SLayer takes it (a sync renumbers a collision, and says so).
    git(y, "remote", "set-url", "origin", str(y.parent / "unreachable.git"))
    given = invoke_cli("--kb", y, "save", "Y: offline", "-e", "shop.orders", "--id", "500")
    assert (given.returncode, given.stderr) == (0, ""), given.stderr


@pytest.mark.parametrize("given", ["50000", "1000000000"])
def test_a_given_number_far_above_the_leases_moves_no_lease(team, invoke_cli, given: str) -> None:
    """save --id 50000 claimed its block in the leases' namespace, so every clone's next lease
    went above it for good (a fresh clone's first auto id 50001); --id 1000000000 put the next
    lease in the offline range, where every other clone retried 12 times on each lease and fell
    back to random ten-digit ids."""
    bare, (x, y) = team
    invoke_cli("--kb", x, "save", "X: a number of my own", "-e", "shop.orders", "--id", given, check=True)
    invoke_cli("--kb", x, "sync", check=True)
    invoke_cli("--kb", y, "sync", check=True)  # y's branch now holds the given number
    # x's sync leased block 0 ahead of need; y's first lease is the next one, not above the number.
    assert invoke_cli("--kb", y, "save", "Y: auto", "-e", "shop.orders", check=True).stdout.startswith(
        f"Saved memory {BLOCK + 1} (created)")
    assert invoke_cli("--kb", x, "save", "X: auto", "-e", "shop.orders", check=True).stdout.startswith(
        "Saved memory 1 (created)")
    claimed = (int(given) - 1) // BLOCK
    assert (claimed_blocks(bare), leased_blocks(bare)) == ([f"{CLAIMS}{claimed}"], [f"{NAMESPACE}0", f"{NAMESPACE}1"])
    first = claimed * BLOCK + 1
    assert git(bare, "log", "-1", "--format=%s", f"{CLAIMS}{claimed}").strip() == (
        f"slayer-kb: claim ids {first}-{first + BLOCK - 1} for memory {given}")
    assert all(int(ref.rsplit("/", 1)[1]) < OFFLINE_FIRST for ref in leased_blocks(bare))


def test_a_given_number_in_a_block_only_claimed_is_taken_on_every_clone(team, invoke_cli) -> None:
    """A block claimed for a number given with --id hands out no auto ids, yet another clone's
    --id in it was refused as 'in a block another clone leased'."""
    bare, (x, y) = team
    invoke_cli("--kb", x, "save", "X: mine", "-e", "shop.orders", "--id", f"{BLOCK + 50}", check=True)
    given = invoke_cli("--kb", y, "save", "Y: mine too", "-e", "shop.orders", "--id", f"{BLOCK + 60}")
    assert (given.returncode, given.stderr) == (0, ""), given.stderr
    assert (claimed_blocks(bare), leased_blocks(bare)) == ([f"{CLAIMS}1"], [])
    # Leases skip the claimed block: x leases 0, y then 2.
    assert invoke_cli("--kb", x, "save", "X: auto", "-e", "shop.orders", check=True).stdout.startswith(
        "Saved memory 1 (created)")
    assert invoke_cli("--kb", y, "save", "Y: auto", "-e", "shop.orders", check=True).stdout.startswith(
        f"Saved memory {2 * BLOCK + 1} (created)")


def test_a_block_this_clone_claimed_is_asked_of_the_remote_for_each_number(team, invoke_cli) -> None:
    """A claim, unlike a lease, does not keep another clone from leasing the block (made at the same
    instant, or after the claim was deleted on the remote), so a number given in a block this clone
    only claimed is asked of the remote each time (``IdLeases.may_give``): taken while the claim
    holds it, refused once another clone leased the block and would hand the number out."""
    bare, (x, y) = team
    invoke_cli("--kb", x, "save", "X: mine", "-e", "shop.orders", "--id", f"{BLOCK + 50}", check=True)
    holder = git(bare, "rev-parse", f"{CLAIMS}1")
    given = invoke_cli("--kb", x, "save", "X: mine too", "-e", "shop.orders", "--id", f"{BLOCK + 55}")
    assert (given.returncode, given.stderr, git(bare, "rev-parse", f"{CLAIMS}1")) == (0, "", holder), given.stderr
    git(bare, "update-ref", "-d", f"{CLAIMS}1")  # deleted: y's leases no longer skip block 1
    assert IdLeases(GitStore(y)).take(BLOCK + 1, 0, lambda n: False)[-1] == str(BLOCK + 1)
    assert leased_blocks(bare) == [f"{NAMESPACE}0", f"{NAMESPACE}1"]
    refused = invoke_cli("--kb", x, "save", "X: once more", "-e", "shop.orders", "--id", f"{BLOCK + 60}")
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: Memory id '{BLOCK + 60}' is a number as auto ids are, in a block another clone leased from origin "
        f"(ids {BLOCK + 1}-{2 * BLOCK}): that clone hands it out for another memory, and a sync would then give one "
        "of the two a new id. Omit --id to get this clone's next auto id, or give a name such as 'kb.orders-total'.\n"))


def test_a_claim_keeps_auto_ids_above_the_ones_handed_out_before_leases(tmp_path: Path, invoke_cli) -> None:
    """A claimed block at the top of the branch's ids dropped the whole floor: the next lease took
    block 0, whose ids are skipped only while their files exist, so a forgotten id was handed out
    again (and block 0 then 1 leased, ids 1-100 all taken, for one save). Finding the floor below
    the claimed id reads the branch's history, and every later lease read all of it again (a
    ``git log`` of every commit: 0.7 s of CPU at 3,000 commits); it reads the commits since the
    last lease read it, and a memory added since raises the floor all the same."""
    bare, (a,) = make_team(tmp_path, 1)
    git(a, "config", "slayer-kb.ids", "sequential")  # ids handed out before leases
    export = tmp_path / "engram.json"
    export.write_text(json.dumps({"observations": [
        {"title": f"Note {n}", "content": f"Pre-lease note {n}.", "project": "api"} for n in range(1, BLOCK + 2)]}))
    assert KnowledgeBase(a).interchange.import_engram(export).imported[-1] == str(BLOCK + 1)
    invoke_cli("--kb", a, "forget", str(BLOCK + 1), check=True)
    git(a, "config", "--unset", "slayer-kb.ids")
    invoke_cli("--kb", a, "save", "A number of my own", "-e", "shop.orders", "--id", "5000", check=True)
    saved = invoke_cli("--kb", a, "save", "Auto", "-e", "shop.orders", check=True)
    assert saved.stdout.splitlines()[0] == f"Saved memory {BLOCK + 2} (created)"
    assert (claimed_blocks(bare), leased_blocks(bare)) == ([f"{CLAIMS}49"], [f"{NAMESPACE}1"])
    # Committed by hand: in no block leased or claimed, above the leases.
    (a / "memories" / "350.yaml").write_text("learning: By hand\ncreated_at: '2026-01-01T00:00:00Z'\n")
    commit_all(a, "a memory by hand")
    with traced_git(tmp_path) as runs:  # the rest of block 1, then a lease: block 4, above 350's block
        ids = IdLeases(GitStore(a)).take(BLOCK, 5000, lambda n: (a / "memories" / f"{n}.yaml").exists())
    assert ids[-3:] == [str(2 * BLOCK), "401", "402"]
    assert [run for run in runs("log") if "--diff-filter=A" in run] == []


def test_a_claim_deleted_on_the_remote_is_made_again_by_the_next_sync(team, invoke_cli) -> None:
    """A claim deleted on the remote (by hand, by a mirror push from an older clone) was never made
    again: a clone that had not pulled the memory with the given number then leased its block,
    and handed the same number out for another memory."""
    bare, (x, y) = team
    invoke_cli("--kb", x, "save", "X: mine", "-e", "shop.orders", "--id", f"{BLOCK + 1}", check=True)
    holder = git(bare, "rev-parse", f"{CLAIMS}1").strip()
    git(bare, "update-ref", "-d", f"{CLAIMS}1")
    invoke_cli("--kb", x, "sync", check=True)
    assert claimed_blocks(bare) == [f"{CLAIMS}1"] and git(bare, "rev-parse", f"{CLAIMS}1").strip() == holder
    # y has not pulled memory 101: its first lease skips the claimed block, as before the deletion.
    assert invoke_cli("--kb", y, "save", "Y: auto", "-e", "shop.orders", check=True).stdout.startswith(
        f"Saved memory {2 * BLOCK + 1} (created)")


def test_a_claim_given_back_as_teams_md_says_stays_gone(team, invoke_cli) -> None:
    """A claim deleted on purpose was made again by every sync of its claimer: docs/teams.md says
    how to give one back (its entry out of the claimer's ids file, then the ref deleted)."""
    bare, (x, _y) = team
    invoke_cli("--kb", x, "save", "X: mine", "-e", "shop.orders", "--id", f"{BLOCK + 1}", check=True)
    ids_file = Path(git(x, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()) / "slayer-kb-ids.json"
    held = json.loads(ids_file.read_text())
    assert list(held["claims"]) == ["1"]
    del held["claims"]["1"]
    ids_file.write_text(json.dumps(held))
    git(x, "push", "-q", "origin", f":{CLAIMS}1")
    invoke_cli("--kb", x, "sync", check=True)
    assert claimed_blocks(bare) == []


@pytest.mark.slow
def test_ids_a_clone_hands_out_increase_whatever_its_remote_does(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Random takes, syncs' top-ups and url changes (the remote, another repository, none that
    answers) on two clones: each clone's ids increase but right after an offline block's last
    id (the documented exception), and no id is handed out twice."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    steps = st.lists(st.tuples(st.integers(0, 1), st.sampled_from(["take", "take", "top_up", "bare", "other", "away"])),
                     max_size=20)

    @settings(max_examples=examples(60), deadline=None, derandomize=True)
    @given(steps)
    def run(plan: list[tuple[int, str]]) -> None:
        where = tmp_path_factory.mktemp("ids")
        bare, clones = make_team(where, clones=2)
        other, _ = make_team(where / "other", clones=0)
        urls = {"bare": str(bare), "other": str(other), "away": str(where / "unreachable.git")}
        given_out: list[list[int]] = [[], []]
        for clone, step in plan:
            leases = IdLeases(GitStore(clones[clone]))
            if step in urls:
                git(clones[clone], "remote", "set-url", "origin", urls[step])
            elif step == "top_up":
                leases.top_up(max(given_out[clone], default=0))
            else:
                ids = given_out[clone]  # the floor: a clone's history holds the ids it handed out
                new = int((leases.take(1, max(ids, default=0), lambda n: False) or ["0"])[0])
                last = ids[-1] if ids else 0
                ended_offline = last % BLOCK == 0 and (last - 1) // BLOCK >= OFFLINE_FIRST
                assert new > last or ended_offline, (plan, ids, new)
                assert new not in ids, (plan, new)
                ids.append(new)

    run()


def test_worktrees_of_one_repository_never_hand_out_one_auto_id(indexed_example_kb: KnowledgeBase,
                                                                 invoke_cli: CliRunner, tmp_path: Path) -> None:
    """Two agents in two worktrees of one repository with no remote (``git worktree add``) each
    counted from their own .slayer-kb/: both saved 27, and the merge refused, naming a renumbering
    of an id an agent was told. The count is the repository's, kept in the git folder they share."""
    root = indexed_example_kb.root
    other = tmp_path / "second"
    git(root, "worktree", "add", "-q", "-b", "agent-b", str(other), "HEAD")
    said = [invoke_cli("--kb", kb, "save", f"A note {n} from {kb.name}", "-e", "shop", check=True).stdout.split()[2]
            for n, kb in enumerate((root, other, root, other))]
    assert said == ["27", "28", "29", "30"]
    merged = invoke_cli("--kb", root, "merge", "agent-b")
    assert merged.returncode == 0, merged.stderr
    assert sorted(int(p.stem) for p in (root / "memories").glob("*.yaml") if p.stem.isdigit())[-4:] == [27, 28, 29, 30]
