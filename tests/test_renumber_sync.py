"""Two branches allocate the same auto id (ids allocated without leases: ``slayer-kb.ids
sequential``): renumber + a real merge or rebase; sync with a bare remote. Leased ids, which never
collide, are tested in test_team.py."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest
from mcp import ClientSession

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import ConflictError
from slayer_kb.core.memory import Memory, dumps
from slayer_kb.ops.renumber import plan, renumber
from slayer_kb.ops.sync import BACKOFF_WINDOW, backoff, sync
from slayer_kb.store.moves import MOVES_FILE
from testing import (
    CliRunner,
    commit_all,
    counted_apart,
    git,
    ids_trailer,
    json_of,
    make_team,
    make_worktrees_after,
    unlike,
    write_test_catalog,
)
from testing.mcp import error, with_server_in_process


def branch(root: Path) -> str:
    return git(root, "symbolic-ref", "--short", "HEAD").strip()


def memories(root: Path) -> set[str]:
    return {p.stem for p in (root / "memories").glob("*.yaml")}


def learning(root: Path, memory_id: str) -> str:
    return KnowledgeBase(root).get(memory_id).to_dict()["learning"]


def _diverge(root: Path) -> None:
    kb = KnowledgeBase(root)
    main = branch(kb.root)
    assert kb.save_memory("Shared base note", ["orders.amount"]).memory_id == "1"
    git(kb.root, "switch", "-q", "-c", "feature")
    assert kb.save_memory("Feature: status values", ["orders.status"]).memory_id == "2"
    assert kb.save_memory("Feature: see 2", ["orders.qty", "memory:2", "memory:1"]).memory_id == "3"
    kb.close()
    other = kb.root.parent / "main-worktree"
    git(kb.root, "worktree", "add", "-q", str(other), main)
    counted_apart(other)  # as another clone: the worktrees' shared count forgotten
    main_kb = KnowledgeBase(other)
    assert main_kb.save_memory("Main: refunds", ["orders.refunds"]).memory_id == "2"
    main_kb.close()


@pytest.fixture
def diverged(tmp_path: Path) -> tuple[KnowledgeBase, str]:
    """main and feature both allocated id 2 (and feature 3, which links memory:2).

    main's agent works in a second work tree (its own .slayer-kb/ state), as another clone would.
    Made once a process and copied (``make_worktrees_after``).
    """
    root = make_worktrees_after(tmp_path, "renumber-diverged", _diverge, ["main-worktree"])
    return KnowledgeBase(root), branch(tmp_path / "main-worktree")  # main, checked out there


def test_plan_finds_only_ids_the_other_side_used(diverged: tuple[KnowledgeBase, str]) -> None:
    kb, main = diverged
    _base, mapping = plan(kb, main)
    assert mapping == {"2": "4"}


def test_renumber_then_merge_keeps_both_memories(diverged: tuple[KnowledgeBase, str]) -> None:
    kb, main = diverged
    result = renumber(kb, main)
    assert result.mapping == {"2": "4"} and result.rewritten == ["3"]
    assert git(kb.root, "log", "-1", "--format=%s").strip() == f"memory: renumber 2 -> 4 (onto {main})"
    assert kb.get("3").to_dict()["entities"] == ["shop.orders.qty", "memory:4", "memory:1"]
    assert kb.get("4").to_dict()["learning"] == "Feature: status values"
    git(kb.root, "merge", "-q", "--no-edit", main)  # raises on a conflict
    assert memories(kb.root) == {"1", "2", "3", "4"}
    KnowledgeBase(kb.root).team.accept("2")  # renumber recorded the move (see below)
    assert learning(kb.root, "2") == "Main: refunds"
    assert learning(kb.root, "4") == "Feature: status values"
    # Each id's log is one memory's: 2 main's save (the feature's 2 went with the move), 4 the move
    # and the feature's save of 2.
    subjects = {i: [e["message"].split("\n")[0] for e in KnowledgeBase(kb.root).history.log(i)] for i in "24"}
    assert subjects == {"2": ["memory: save 2"], "4": [f"memory: renumber 2 -> 4 (onto {main})", "memory: save 2"]}
    assert "3" in {m["id"] for m in KnowledgeBase(kb.root).search(entities=["memory:4"]).memories}
    # Nothing more to renumber, and the next auto id is above both sides'.
    assert renumber(kb, main).mapping == {}
    assert kb.save_memory("after merge", ["orders.amount"]).memory_id == "5"


def test_the_new_id_at_a_revision_before_the_renumber_is_the_file_it_had(diverged: tuple[KnowledgeBase, str]) -> None:
    """``log 4`` lists the feature's save of 2; ``show 4 --rev`` of it reads that file, as after a rename."""
    kb, main = diverged
    before = git(kb.root, "rev-parse", "HEAD").strip()
    renumber(kb, main)
    shown = KnowledgeBase(kb.root).history.show("4", rev=before)
    assert (shown.memory.id, shown.memory.learning) == ("4", "Feature: status values")
    assert git(kb.root, "log", "-1", "--format=%B") == (
        f"memory: renumber 2 -> 4 (onto {main})\n\nRewrote memory: references in 3\n\nRenamed: 2 -> 4\n"
        f"{ids_trailer(kb.root, 4)}\n")


def test_an_id_renumber_moved_refuses_and_names_both_memories(diverged: tuple[KnowledgeBase, str],
                                                              invoke_cli) -> None:
    """An agent of this clone still holds 2 from its save's reply; after 'renumber' (the step a
    sync conflict's message gives) and the merge, 2 names main's memory: commands refuse, as after
    a sync that renumbered, rather than act on another agent's memory."""
    kb, main = diverged
    main_head = git(kb.root, "rev-parse", main).strip()
    invoke_cli("--kb", kb.root, "renumber", "--onto", main, check=True)
    git(kb.root, "merge", "-q", "--no-edit", main)
    said = (
        "Error: Memory id '2' moved: 'slayer-kb renumber' gave this clone's memory 2 the id 4, because the "
        "branch it was renumbered onto had already used 2 for another memory; '2' now names another memory: "
        f"\"Main: refunds\". Use 4 for the memory saved here; to mean what '2' names now, run 'slayer-kb --kb {kb.root} "
        "renumber --accept 2' first.\n"
    )
    head = git(kb.root, "rev-parse", "HEAD")
    # Writing to 2 by id (a save's upsert, an edit) or linking memory:2 would reach main's memory.
    for command in (["get", "2"], ["forget", "2"], ["update", "2", "--learning", "x"],
                    ["restore", "2", "--rev", main_head], ["save", "x", "--id", "2", "-e", "orders.amount"],
                    ["save", "x", "-e", "memory:2", "-e", "orders.amount"], ["update", "3", "-e", "memory:2"],
                    ["edit", "2"]):
        proc = invoke_cli("--kb", kb.root, *command, env={"EDITOR": "true"})
        assert (proc.returncode, proc.stderr) == (1, said), command
    # A search drops the link with the refusal's words rather than find what links main's 2.
    proc = invoke_cli("--kb", kb.root, "search", "-e", "memory:2", check=True)
    assert f"warning: entity 'memory:2' dropped: {said[len('Error: '):]}" in proc.stdout, proc.stdout

    async def script(session: ClientSession) -> None:  # what an agent holding 2 calls over MCP
        for tool, arguments in (("save_memory", {"learning": "x", "linked_entities": ["orders.amount"], "id": "2"}),
                                ("save_memory", {"learning": "x", "linked_entities": ["memory:2"]}),
                                ("mem_update", {"id": "2", "content": "x"}), ("mem_delete", {"id": "2"}),
                                ("forget_memory", {"id": "2"}), ("mem_get_observation", {"id": "2"})):
            assert said[len("Error: "):-1] in await error(session, tool, **arguments), tool

    with_server_in_process(kb.root, script)
    assert git(kb.root, "rev-parse", "HEAD") == head
    # What reads history answers about what 2 names here, and says so, naming both memories.
    note = said[len("Error: "):-1].replace(
        f"to mean what '2' names now, run 'slayer-kb --kb {kb.root} renumber --accept 2' first.",
        f"'slayer-kb --kb {kb.root} renumber --accept 2' ends this note.")
    for command in (["show", "2"], ["log", "2"], ["timeline", "2"]):
        text = invoke_cli("--kb", kb.root, *command, check=True).stdout
        assert text.endswith(f"\nwarning: {note}\n"), command
        proc = invoke_cli("--kb", kb.root, "--json", *command, check=True)
        data = json_of(proc)
        if command[0] == "log":  # the document is the list of commits: the note on stderr
            assert isinstance(data, list) and proc.stderr == f"warning: {note}\n", proc.stderr
        else:
            assert data["warnings"] == [note] and data["id" if command[0] == "show" else "focus"]
    assert "Main: refunds" in invoke_cli("--kb", kb.root, "show", "2", check=True).stdout
    # A link a memory holds already (a colleague's, to main's 2) is theirs: kept when the memory
    # is saved or updated with it again, where only a link given anew is refused.
    (kb.root / "memories" / "held.yaml").write_text(
        "learning: Links main's refunds note.\nentities:\n- shop.orders.amount\n- memory:2\n"
        "created_at: '2026-12-01T00:00:00Z'\n")
    commit_all(kb.root, "a colleague's link to main's 2")
    for command in (["update", "held", "-e", "memory:2", "-e", "orders.status"],
                    ["save", "Links it again.", "--id", "held", "-e", "memory:2", "-e", "orders.amount"]):
        invoke_cli("--kb", kb.root, *command, check=True)
    assert json_of(invoke_cli("--kb", kb.root, "--json", "get", "held", check=True))["entities"] == [
        "memory:2", "shop.orders.amount"]
    assert invoke_cli("--kb", kb.root, "renumber", "--accept", "2", check=True).stdout == (
        "'2' now means the memory it names; the one saved here as 2 is 4.\n")
    assert learning(kb.root, "2") == "Main: refunds"
    assert json_of(invoke_cli("--kb", kb.root, "--json", "show", "2", check=True))["warnings"] == []


def test_renumber_rewrite_records_the_move_too(diverged: tuple[KnowledgeBase, str]) -> None:
    kb, main = diverged
    renumber(kb, main, rewrite=True)
    git(kb.root, "rebase", "-q", main)
    with pytest.raises(ConflictError) as exc:
        KnowledgeBase(kb.root).get("2")
    assert "'slayer-kb renumber' gave this clone's memory 2 the id 4" in str(exc.value)


def test_without_renumber_the_merge_conflicts(diverged: tuple[KnowledgeBase, str]) -> None:
    kb, main = diverged
    proc = subprocess.run(["git", "merge", "--no-edit", main], cwd=kb.root, capture_output=True, text=True)
    assert proc.returncode != 0 and "memories/2.yaml" in proc.stdout + proc.stderr
    git(kb.root, "merge", "--abort")


def test_renumber_rewrite_makes_a_rebase_clean(diverged: tuple[KnowledgeBase, str]) -> None:
    kb, main = diverged
    assert git(kb.root, "log", "--format=%s|%an", f"{main}..HEAD").splitlines() == [
        "memory: save 3|Test Author", "memory: save 2|Test Author"]
    result = renumber(kb, main, rewrite=True)
    assert result.mapping == {"2": "4"}
    # Same number of commits, same authors, the ids as if allocated fresh, and a subject that
    # names the new id and the move.
    assert git(kb.root, "log", "--format=%s|%an", f"{main}..HEAD").splitlines() == [
        "memory: save 3|Test Author", "memory: save 4 (renumber 2 -> 4)|Test Author"]
    assert "Renumbered-by: slayer-kb (2 -> 4)" in git(kb.root, "log", "--format=%B", f"{main}..HEAD")
    git(kb.root, "rebase", "-q", main)  # raises on a conflict
    assert memories(kb.root) == {"1", "2", "3", "4"}
    assert KnowledgeBase(kb.root).get("3").to_dict()["entities"] == ["shop.orders.qty", "memory:4", "memory:1"]


def test_renumber_refuses_uncommitted_changes(diverged: tuple[KnowledgeBase, str]) -> None:
    kb, main = diverged
    (kb.root / "memories" / "1.yaml").write_text("learning: dirty\ncreated_at: '2026-01-01T00:00:00Z'\n")
    with pytest.raises(ConflictError):
        renumber(kb, main)


def test_cli_renumber(diverged: tuple[KnowledgeBase, str], invoke_cli) -> None:
    kb, main = diverged
    proc = invoke_cli("--kb", kb.root, "renumber", "--onto", main, "--json", check=True)
    assert json_of(proc)["renumbered"] == {"2": "4"}
    proc = invoke_cli("--kb", kb.root, "renumber", "--onto", main, check=True)
    assert "nothing to renumber" in proc.stdout



def test_a_merge_commit_it_cannot_rewrite_is_refused_with_steps_that_run_from_elsewhere(
        diverged: tuple[KnowledgeBase, str], invoke_cli) -> None:
    """Run with --kb from another folder, the refusal said 'slayer-kb renumber --onto REF' and 'git
    merge REF', which there name no KB or another one."""
    kb, main = diverged
    git(kb.root, "switch", "-q", "-c", "side")
    git(kb.root, "commit", "-q", "--allow-empty", "-m", "side")
    git(kb.root, "switch", "-q", "feature")
    git(kb.root, "merge", "-q", "--no-ff", "--no-edit", "side")
    head = git(kb.root, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", "kb", "renumber", "--onto", main, "--rewrite", cwd=kb.root.parent)
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: The branch has a merge commit ({head[:12]}) since it left the upstream; renumbering cannot rewrite "
        "it. Run 'slayer-kb --kb kb renumber --onto REF' (adds one commit) and 'git -C kb merge REF' instead.\n"))
    assert git(kb.root, "rev-parse", "HEAD") == head

# -- sync --------------------------------------------------------------------------------------


@pytest.fixture
def clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A bare remote and two clones of one KB (with the test catalog), counting ids on their own."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    a = tmp_path / "a"
    KnowledgeBase.init(a)
    write_test_catalog(a, priority=["shop"])
    commit_all(a, "catalog")
    git(a, "remote", "add", "origin", str(bare))
    git(a, "config", "slayer-kb.ids", "sequential")
    sync(KnowledgeBase(a))  # the first push
    git(tmp_path, "clone", "-q", str(bare), "b")
    git(tmp_path / "b", "config", "slayer-kb.ids", "sequential")
    return bare, a, tmp_path / "b"


def all_learnings(root: Path) -> list[str]:
    kb = KnowledgeBase(root)
    return sorted(kb.read(i).learning for i in memories(root))


def test_sync_two_clones_with_colliding_ids(clones: tuple[Path, Path, Path], invoke_cli) -> None:
    _bare, a, b = clones
    kb_a, kb_b = KnowledgeBase(a), KnowledgeBase(b)
    kb_a.save_memory("A one", ["orders.amount"])
    kb_a.save_memory("A two", ["orders.status"])
    kb_b.save_memory("B one", ["orders.qty"])
    kb_b.save_memory("B two links B one", ["orders.cost", "memory:1"])
    assert memories(a) == memories(b) == {"1", "2"}

    assert sync(kb_a).action == "pushed"
    result = sync(kb_b)
    assert result.action == "rebased" and result.renumbered == {"1": "3", "2": "4"}
    assert sync(kb_a).action == "fast-forward"
    assert sync(kb_b).action == "up to date"
    # B's agent still holds 1 and 2 from its saves' replies: they now name A's memories, so a
    # command on them refuses and names both, until B accepts the move.
    with pytest.raises(ConflictError) as exc:
        KnowledgeBase(b).forget("1")
    assert str(exc.value) == (
        "Memory id '1' moved: sync renumbered this clone's memory 1 to 3, because the upstream had "
        "already used 1 for another memory; '1' now names another memory: \"A one\". Use 3 for the "
        f"memory saved here; to mean what '1' names now, run 'slayer-kb --kb {b} renumber --accept 1' first."
    )
    assert KnowledgeBase(a).get("1").to_dict()["learning"] == "A one"  # A's clone moved nothing
    proc = invoke_cli("--kb", b, "renumber", "--accept", "1")
    assert proc.returncode == 0 and proc.stdout == "'1' now means the memory it names; the one saved here as 1 is 3.\n"
    assert KnowledgeBase(b).get("1").to_dict()["learning"] == "A one"

    expected = ["A one", "A two", "B one", "B two links B one"]
    assert all_learnings(a) == all_learnings(b) == expected
    assert memories(a) == {"1", "2", "3", "4"}
    assert KnowledgeBase(a).get("4").to_dict()["entities"] == ["shop.orders.cost", "memory:3"]
    assert git(a, "rev-parse", "HEAD") == git(b, "rev-parse", "HEAD")
    # History is linear (a rebase, not a merge) and the index answers at once.
    assert git(a, "rev-list", "--merges", "HEAD") == ""
    assert KnowledgeBase(b).search("B one").memories
    for root in (a, b):
        proc = invoke_cli("--kb", root, "validate")
        assert proc.returncode == 0, proc.stdout + proc.stderr
    # New saves go above every id either side used.
    assert KnowledgeBase(b).save_memory("next", ["orders.amount"]).memory_id == "5"


def test_a_sync_writes_the_moves_it_made_once(clones: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync records an id it moves as soon as its branch holds the move (one killed after that
    still refuses the old id: test_team_remote.py), and puts the record back if it fails. As it
    finished it wrote the file twice more: put back as it found it, then the same moves recorded
    again. Written once, with the moves."""
    _bare, a, b = clones
    KnowledgeBase(a).save_memory("A one", ["orders.amount"])
    sync(KnowledgeBase(a))
    kb_b = KnowledgeBase(b)
    kb_b.save_memory("B one", ["orders.qty"])
    record = b / ".git" / MOVES_FILE
    written: list[str] = []
    replace = os.replace

    def counted(source: str | Path, target: str | Path) -> None:
        if Path(target) == record:
            written.append(Path(source).read_text(encoding="utf-8"))
        replace(source, target)

    monkeypatch.setattr(os, "replace", counted)
    assert sync(kb_b).renumbered == {"1": "2"}
    assert [json.loads(text) for text in written] == [{"1": {"to": "2", "why": "renumbered"}}]
    assert record.read_text(encoding="utf-8") == written[0]


def test_sync_conflict_leaves_the_repository_as_it_was(clones: tuple[Path, Path, Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _bare, a, b = clones
    monkeypatch.chdir(b)  # the steps name the KB's files from its folder, where the user is
    kb_a = KnowledgeBase(a)
    kb_a.save_memory("Shared", ["orders.amount"], id="shared")
    sync(kb_a)
    git(b, "pull", "-q")
    kb_b = KnowledgeBase(b)
    kb_a.update("shared", learning="A's version")
    sync(kb_a)
    kb_b.update("shared", learning="B's version")
    kb_b.save_memory("B other", ["orders.qty"])
    head = git(b, "rev-parse", "HEAD")
    status = git(b, "status", "--porcelain")
    with pytest.raises(ConflictError) as exc:
        sync(kb_b)
    assert str(exc.value) == (
        "Your commits and origin/master both edited memories/shared.yaml; the repository is back as it "
        "was. To merge by hand: git fetch origin; slayer-kb rebase origin/master (it stops on the conflict); "
        "edit memories/shared.yaml to keep what both sides meant; git add memories/shared.yaml; slayer-kb "
        "validate; slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync."
    )
    assert git(b, "rev-parse", "HEAD") == head
    assert git(b, "status", "--porcelain") == status
    assert not (b / ".git" / "rebase-merge").exists()
    assert KnowledgeBase(b).get("shared").to_dict()["learning"] == "B's version"
    # The steps work as written.
    git(b, "fetch", "-q", "origin")
    with pytest.raises(ConflictError, match="both edited memories/shared.yaml; the rebase stopped at commit 1 of 2"):
        KnowledgeBase(b).team.rebase("origin/master")
    kept, side = [], "both"
    for line in (b / "memories" / "shared.yaml").read_text().splitlines(keepends=True):
        side = {"<<<<<<<": "first", "=======": "second", ">>>>>>>": "both"}.get(line[:7], side)
        if side in ("both", "first") and line[:7] not in ("<<<<<<<", ">>>>>>>"):
            kept.append(line)  # the upstream's side of each conflict, without the markers
    (b / "memories" / "shared.yaml").write_text("".join(kept).replace("A's version", "Both versions"))
    git(b, "add", "memories/shared.yaml")
    assert KnowledgeBase(b).team.rebase(action="continue").action == "rebased"
    assert sync(KnowledgeBase(b)).action == "pushed"
    assert KnowledgeBase(b).get("shared").to_dict()["learning"] == "Both versions"


def test_sync_refuses_a_result_that_does_not_validate(clones: tuple[Path, Path, Path]) -> None:
    """A model file the other clone broke, which a memory saved here links: its entities are
    unreadable, not deleted, so sync keeps the link and refuses (a column the other clone deleted
    is stripped as its cascade strips it, and so is a link to a memory it forgot:
    test_team_by_hand.py)."""
    _bare, a, b = clones
    path = a / "models" / "shop" / "orders.yaml"
    path.write_text(path.read_text().replace("columns:", "columns: [", 1))
    commit_all(a, "a model broken by hand")
    sync(KnowledgeBase(a))
    kb_b = KnowledgeBase(b)
    kb_b.save_memory("Links the quantity", ["orders.qty"], id="linker")
    head = git(b, "rev-parse", "HEAD")
    with pytest.raises(ConflictError) as exc:
        sync(kb_b)
    assert "shop.orders.qty" in str(exc.value)
    assert git(b, "rev-parse", "HEAD") == head
    assert "shop.orders.qty" in (b / "memories" / "linker.yaml").read_text()


def test_sync_never_pushes_a_memory_that_does_not_validate(clones: tuple[Path, Path, Path], invoke_cli) -> None:
    """A hand-resolved conflict committed broken (a key twice), with nothing to pull: sync checks
    what it would push, as it does after a rebase, and the remote keeps its valid main."""
    bare, a, _b = clones
    kb_a = KnowledgeBase(a)
    kb_a.save_memory("Good", ["orders.amount"])
    sync(kb_a)
    remote_head = git(bare, "rev-parse", branch(a))
    path = a / "memories" / "1.yaml"
    path.write_text(path.read_text() + "learning: Twice\n")
    commit_all(a, "hand merge")
    head = git(a, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", a, "sync")
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: These memories do not validate, so nothing was pushed and the repository is back as it was:\n"
        f"{a}/memories/1.yaml:5: duplicate key 'learning' (first on line 1); keep one\n"
        # Typed elsewhere (--kb), the fix names the KB.
        f"Fix them on your branch (each names its fix; commit what you change by hand) and run 'slayer-kb --kb {a} sync' again.\n"))
    assert git(bare, "rev-parse", branch(a)) == remote_head
    assert git(a, "rev-parse", "HEAD") == head and git(a, "status", "--porcelain") == ""


def test_cli_sync(clones: tuple[Path, Path, Path], invoke_cli) -> None:
    _bare, a, b = clones
    KnowledgeBase(a).save_memory("A one", ["orders.amount"])
    KnowledgeBase(b).save_memory("B one", ["orders.qty"])
    invoke_cli("--kb", a, "sync", check=True)
    proc = invoke_cli("--kb", b, "sync", "--json", check=True)
    assert json_of(proc)["renumbered"] == {"1": "2"}
    proc = invoke_cli("--kb", b, "sync", "--remote", "nope")
    assert proc.returncode == 1 and "No git remote named 'nope'" in proc.stderr


def test_after_sync_renumbers_log_tells_the_story(clones: tuple[Path, Path, Path], invoke_cli) -> None:
    _bare, a, b = clones
    assert KnowledgeBase(a).save_memory("A's note", ["orders.amount"]).memory_id == "1"
    sync(KnowledgeBase(a))
    kb_b = KnowledgeBase(b)
    assert kb_b.save_memory("B's note", ["orders.qty"]).memory_id == "1"
    kb_b.update("1", learning="B's note, revised")
    proc = invoke_cli("--kb", b, "sync", check=True)
    assert proc.stdout.endswith("\n  renumbered: 1 -> 2 (origin had already used 1 for another memory)\n")
    # B's memory was 1 until the sync: its rewritten commits say so in their subjects.
    entries = json_of(invoke_cli("--kb", b, "log", "2", "--json", check=True))
    assert [e["message"].splitlines()[0] for e in entries] == [
        "memory: update 2 (learning) (renumber 1 -> 2)",
        "memory: save 2 (renumber 1 -> 2)",
    ]
    assert entries[0]["message"].endswith("\n\nRenumbered-by: slayer-kb (1 -> 2)")
    # A's memory 1 keeps its own history (git log --follow would add it to 2's: the two small
    # files are half alike, a "copy").
    entries = json_of(invoke_cli("--kb", b, "log", "1", "--json", check=True))
    assert [e["message"] for e in entries] == ["memory: save 1"]


def test_conflict_steps_renumber_first_and_work_as_written(clones: tuple[Path, Path, Path], invoke_cli,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """With a collision as well as a real conflict, 'git pull --rebase' would stop on two different
    memories 1; the steps sync gives renumber first, and followed as written they finish."""
    _bare, a, b = clones
    monkeypatch.chdir(b)  # the steps name the KB's files from its folder, where the user is
    kb_a = KnowledgeBase(a)
    kb_a.save_memory("Shared", ["orders.amount"], id="shared")
    sync(kb_a)
    git(b, "pull", "-q")
    kb_a.save_memory("A's auto", ["orders.amount"])
    kb_a.update("shared", learning="A's version")
    sync(kb_a)
    kb_b = KnowledgeBase(b)
    kb_b.save_memory("B's auto", ["orders.qty"])
    kb_b.update("shared", learning="B's version")
    with pytest.raises(ConflictError) as exc:
        sync(kb_b)
    assert str(exc.value) == (
        "Your commits and origin/master both edited memories/shared.yaml; the repository is back as it "
        "was. To merge by hand: git fetch origin; slayer-kb renumber --onto origin/master --rewrite; slayer-kb "
        "rebase origin/master (it stops on the conflict); edit memories/shared.yaml to keep what both sides meant; "
        "git add memories/shared.yaml; slayer-kb validate; slayer-kb rebase --continue (a later commit that stops "
        "says so again); slayer-kb sync."
    )
    git(b, "fetch", "-q", "origin")
    invoke_cli("--kb", b, "renumber", "--onto", "origin/master", "--rewrite", check=True)
    assert invoke_cli("--kb", b, "rebase", "origin/master").returncode == 1
    assert git(b, "diff", "--name-only", "--diff-filter=U").split() == ["memories/shared.yaml"]
    merged = KnowledgeBase(a).get("shared").to_dict()
    (b / "memories" / "shared.yaml").write_text(dumps(Memory(**{**merged, "learning": "Both versions"})))
    git(b, "add", "memories/shared.yaml")
    assert invoke_cli("--kb", b, "validate").returncode == 0
    invoke_cli("--kb", b, "rebase", "--continue", check=True)
    assert sync(KnowledgeBase(b)).action == "pushed"
    assert all_learnings(b) == sorted(["A's auto", "B's auto", "Both versions"])


def test_the_longest_refused_sync_waits_least() -> None:
    """After each refused push a random wait, shorter the more often this sync was refused: the
    clone that has waited longest gets back to the remote first, and none is starved."""
    rng = random.Random(7)
    longest = [max(backoff(refused, rng) for _ in range(200)) for refused in (1, 2, 5, 29)]
    assert [round(BACKOFF_WINDOW / n, 3) for n in (1, 2, 5, 29)] == [0.6, 0.3, 0.12, 0.021]
    for bound, seen in zip((0.6, 0.3, 0.12, BACKOFF_WINDOW / 29), longest, strict=True):
        assert bound * 0.9 < seen <= bound
    # The waits spread over about the time the refused attempt took, never more than the window.
    quick = [max(backoff(refused, rng, 0.2) for _ in range(200)) for refused in (1, 2, 5)]
    for bound, seen in zip((0.2, 0.1, 0.04), quick, strict=True):
        assert bound * 0.9 < seen <= bound
    assert max(backoff(1, rng, 5.0) for _ in range(200)) <= BACKOFF_WINDOW


def test_a_renumbered_commit_keeps_its_author_on_a_machine_with_no_git_identity(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A save by ``--author`` renumbered by a sync keeps that author; who commits is slayer-kb's
    neutral identity (no user.name, no GIT_AUTHOR_*), as for the save itself."""
    _bare, (a, b) = make_team(tmp_path)
    for clone in (a, b):
        git(clone, "config", "slayer-kb.ids", "sequential")
    anonymous = dict.fromkeys(("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"))
    invoke_cli("--kb", a, "save", unlike("anote"), "-e", "shop.orders.amount", env=anonymous, check=True)
    invoke_cli("--kb", a, "sync", env=anonymous, check=True)
    invoke_cli("--kb", b, "--author", "Ann Lee <ann@example.com>", "save", unlike("bnote"), "-e", "shop.orders.qty",
               env=anonymous, check=True)
    assert "  renumbered: 1 -> 2 (origin had already used 1 for another memory)" in invoke_cli("--kb", b, "sync", env=anonymous, check=True).stdout.splitlines()
    assert git(b, "log", "-1", "--format=%s | %an <%ae> | %cn <%ce>") == (
        "memory: save 2 (renumber 1 -> 2) | Ann Lee <ann@example.com> | slayer-kb <slayer-kb@localhost>\n")
