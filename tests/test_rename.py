"""``slayer-kb rename OLD NEW``: one commit moving the file (git sees a rename) and rewriting every
``memory:OLD`` link; the index finds NEW at once; each refusal names the fix. Real repositories,
commands run in this process (``invoke_cli``)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from mcp import ClientSession

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from slayer_kb.store.idtrailer import without_trailer
from testing import CliRunner, commit_all, git, json_of
from testing.gittrace import traced_git
from testing.mcp import error, with_server_in_process

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def changed(root: Path) -> list[str]:
    """HEAD's changes as ``git show --name-status -M`` lists them, a rename's similarity left out."""
    lines = git(root, "show", "--format=", "--name-status", "-M", "HEAD").splitlines()
    return [re.sub(r"^R\d+", "R", line) for line in lines]


def memory(kb: KnowledgeBase, memory_id: str, learning: str, *links: str) -> None:
    entities = "".join(f"- {link}\n" for link in ("shop.orders.amount", *links))
    (kb.root / "memories" / f"{memory_id}.yaml").write_text(f"learning: {learning}\nentities:\n{entities}{CREATED}")


@pytest.fixture
def linked_kb(catalog_kb: KnowledgeBase) -> KnowledgeBase:
    """``kb.revenue-note`` (linking itself), two memories linking it and one that does not,
    committed."""
    memory(catalog_kb, "kb.revenue-note", "Paid revenue counts captured payments only", "memory:kb.revenue-note")
    memory(catalog_kb, "7", "Refunds are negative rows", "memory:kb.revenue-note")
    memory(catalog_kb, "kb.fees", "Fees are netted", "memory:7", "memory:kb.revenue-note")
    memory(catalog_kb, "kb.other", "Unrelated", "memory:7")
    commit_all(catalog_kb.root)
    return catalog_kb


def test_a_rename_moves_the_file_and_rewrites_every_link_in_one_commit(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = linked_kb.root
    before = git(root, "rev-parse", "HEAD").strip()
    proc = invoke_cli("--kb", root, "rename", "kb.revenue-note", "kb.paid-revenue")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, (
        "Renamed memory kb.revenue-note to kb.paid-revenue\n"
        "  rewrote memory:kb.revenue-note to memory:kb.paid-revenue in 7, kb.fees\n"), "")
    assert git(root, "rev-list", f"{before}..HEAD").split() == [git(root, "rev-parse", "HEAD").strip()]
    assert without_trailer(git(root, "log", "-1", "--format=%B")) == (
        "memory: rename kb.revenue-note to kb.paid-revenue\n\nRewrote memory: references in 7, kb.fees\n\n"
        "Renamed: kb.revenue-note -> kb.paid-revenue")
    assert changed(root) == [
        "M\tmemories/7.yaml", "M\tmemories/kb.fees.yaml",
        "R\tmemories/kb.revenue-note.yaml\tmemories/kb.paid-revenue.yaml"]
    assert git(root, "status", "--porcelain") == ""
    memories = root / "memories"
    assert not (memories / "kb.revenue-note.yaml").exists()
    assert (memories / "kb.paid-revenue.yaml").read_text() == (
        "learning: Paid revenue counts captured payments only\nentities:\n- shop.orders.amount\n"
        f"- memory:kb.paid-revenue\n{CREATED}")
    assert (memories / "kb.fees.yaml").read_text() == (
        f"learning: Fees are netted\nentities:\n- shop.orders.amount\n- memory:7\n- memory:kb.paid-revenue\n{CREATED}")
    assert (memories / "kb.other.yaml").read_text().endswith(f"- memory:7\n{CREATED}")
    # The index: the new id found at once, by words and by its link; the old one gone.
    hits = json_of(invoke_cli("--kb", root, "--json", "search", "captured payments", check=True))["memories"]
    assert [h["id"] for h in hits] == ["kb.paid-revenue"]
    linking = json_of(invoke_cli("--kb", root, "--json", "search", "-e", "memory:kb.paid-revenue", check=True))
    assert sorted(h["id"] for h in linking["memories"]) == ["7", "kb.fees", "kb.paid-revenue"]
    gone = invoke_cli("--kb", root, "get", "kb.revenue-note")
    assert (gone.returncode, gone.stderr) == (1, (
        f"Error: Memory 'kb.revenue-note' was renamed to 'kb.paid-revenue' in commit {git(root, 'rev-parse', '--short=12', 'HEAD').strip()}: use that id.\n"))
    assert invoke_cli("--kb", root, "validate").stdout == "Checked 4 files: no problems.\n"


def test_json_names_both_ids_the_links_rewritten_and_the_commit(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    data = json_of(invoke_cli("--kb", linked_kb.root, "--json", "rename", "kb.other", "kb.unrelated", check=True))
    assert data == {"old_id": "kb.other", "new_id": "kb.unrelated", "references_rewritten_in": [],
                    "commit": git(linked_kb.root, "rev-parse", "HEAD").strip()}
    result = linked_kb.rename("7", "kb.refund-rows")
    assert (result.old_id, result.new_id, result.rewritten) == ("7", "kb.refund-rows", ["kb.fees", "kb.unrelated"])
    assert git(linked_kb.root, "log", "-1", "--format=%s") == "memory: rename 7 to kb.refund-rows\n"


def test_a_case_only_rename_is_a_plain_rename_here(linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = linked_kb.root
    invoke_cli("--kb", root, "rename", "kb.revenue-note", "KB.Revenue-Note", check=True)
    assert changed(root) == ["M\tmemories/7.yaml", "R\tmemories/kb.revenue-note.yaml\tmemories/KB.Revenue-Note.yaml",
                             "M\tmemories/kb.fees.yaml"]
    assert git(root, "ls-files", "memories").split() == [
        "memories/7.yaml", "memories/KB.Revenue-Note.yaml", "memories/kb.fees.yaml", "memories/kb.other.yaml"]
    assert "- memory:KB.Revenue-Note\n" in (root / "memories" / "kb.fees.yaml").read_text()
    assert git(root, "status", "--porcelain") == ""


def test_where_the_file_system_names_both_spellings_one_file_the_two_steps_are_given(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A file system that folds case (macOS, Windows) opens ``KB.Revenue-Note.yaml`` as the file
    ``kb.revenue-note.yaml``: one move would delete the file it writes. Here a hard link makes the
    two names one file, as such a file system does."""
    memories = linked_kb.root / "memories"
    (memories / "KB.Revenue-Note.yaml").hardlink_to(memories / "kb.revenue-note.yaml")
    proc = invoke_cli("rename", "kb.revenue-note", "KB.Revenue-Note", cwd=linked_kb.root)
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: This file system names memories/kb.revenue-note.yaml and memories/KB.Revenue-Note.yaml as one "
        "file (it folds letter case), so 'kb.revenue-note' cannot become 'KB.Revenue-Note' in one move: rename "
        "it in two, 'slayer-kb rename kb.revenue-note kb.revenue-note-2' then 'slayer-kb rename kb.revenue-note-2 "
        "KB.Revenue-Note'.\n"))
    (memories / "KB.Revenue-Note.yaml").unlink()
    for step in proc.stderr.split("'")[-4], proc.stderr.split("'")[-2]:
        invoke_cli(*shlex.split(step)[1:], cwd=linked_kb.root, check=True)
    assert git(linked_kb.root, "log", "-2", "--format=%s").splitlines() == [
        "memory: rename kb.revenue-note-2 to KB.Revenue-Note", "memory: rename kb.revenue-note to kb.revenue-note-2"]


@pytest.mark.parametrize(("args", "message"), [
    (["ghost", "kb.x"], "No memory with id 'ghost'."),
    (["memory:7", "kb.x"], "'memory:7' is a link to a memory, not a memory id: give the id alone, '7'."),
    (["7", "kb/x"], "Memory id 'kb/x' contains '/'; ids may not contain \" # * / : < > ? \\ |. Use letters, "
                    "digits, '.', '_' or '-'."),
    (["7", ""], "Memory id must not be empty; give the id to rename it to."),
    (["kb.fees", "12"], "Memory id '12' is a number, as auto ids are: slayer-kb allocates those to new memories "
                        "(one above every number used), they are not chosen. Give a name such as 'kb.orders-total'."),
    (["kb.fees", "１２"], "Memory id '１２' reads as the number '12', as auto ids are: slayer-kb allocates those to new "
                         "memories (one above every number used), they are not chosen. Give a name such as "
                         "'kb.orders-total'."),
    # As a lookup of either reads it (did you mean '12'?): a number in another spelling.
    (["kb.fees", "012"], "Memory id '012' reads as the number '12', as auto ids are: slayer-kb allocates those to new "
                         "memories (one above every number used), they are not chosen. Give a name such as "
                         "'kb.orders-total'."),
    (["kb.fees", "+12.0"], "Memory id '+12.0' reads as the number '12', as auto ids are: slayer-kb allocates those to "
                           "new memories (one above every number used), they are not chosen. Give a name such as "
                           "'kb.orders-total'."),
    (["kb.fees", "1.2e1"], "Memory id '1.2e1' reads as the number '12', as auto ids are: slayer-kb allocates those to "
                           "new memories (one above every number used), they are not chosen. Give a name such as "
                           "'kb.orders-total'."),
    (["7", "nul.notes"], "Memory id 'nul.notes' begins with 'nul', a device name Windows reserves (CON, PRN, AUX, "
                         "NUL, COM1-9, LPT1-9, in any letter case, also before a '.' as in nul.txt): its file cannot "
                         "exist on Windows. Choose another id, e.g. 'kb.nul.notes'."),
    (["7", "kb.fees"], "Memory id 'kb.fees' is taken: memories/kb.fees.yaml exists. Choose another id."),
    (["7", "KB.Fees"], "Memory id 'KB.Fees' is taken on macOS and Windows checkouts: 'kb.fees' differs from it "
                       "only in letter case, and the two name one file there. Choose another id."),
    (["kb.fees", "kb.fees"], "Memory 'kb.fees' has that id already; nothing to rename."),
])
def test_a_rename_refused_names_the_problem_and_changes_nothing(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner, args: list[str], message: str) -> None:
    head = git(linked_kb.root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", linked_kb.root, "rename", *args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")
    assert (git(linked_kb.root, "rev-parse", "HEAD"), git(linked_kb.root, "status", "--porcelain")) == (head, "")


def test_an_id_sync_moved_on_this_clone_is_refused_either_way(linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """An agent of this clone may still hold an id sync moved: renaming a memory to it, or from
    it, would act on another memory than the one the agent means."""
    linked_kb.record_moves({"kb.gone": "kb.other"}, "renumber")
    refusal = ("Error: Memory id 'kb.gone' moved: 'slayer-kb renumber' gave this clone's memory kb.gone the id "
               "kb.other, because the branch it was renumbered onto had already used kb.gone for another memory; no "
               "memory has id 'kb.gone' now. Use kb.other for the memory saved here; to mean what "
               "'kb.gone' names now, run 'slayer-kb renumber --accept kb.gone' first.\n")
    for args in (["7", "kb.gone"], ["kb.gone", "kb.x"]):
        proc = invoke_cli("rename", *args, cwd=linked_kb.root)
        assert (proc.returncode, proc.stderr) == (1, refusal), args

def test_a_soft_deleted_memory_is_renamed_still_deleted_a_forgotten_one_is_refused(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = linked_kb.root
    invoke_cli("--kb", root, "forget", "--soft", "kb.other", check=True)
    deleted_at = json_of(invoke_cli("--kb", root, "--json", "get", "--deleted", "kb.other"))["deleted_at"]
    invoke_cli("rename", "kb.other", "kb.y", cwd=root, check=True)
    assert json_of(invoke_cli("--kb", root, "--json", "get", "--deleted", "kb.y"))["deleted_at"] == deleted_at
    assert invoke_cli("--kb", root, "get", "kb.y").stderr.startswith(f"Error: Memory 'kb.y' was deleted at {deleted_at}")
    invoke_cli("--kb", root, "forget", "kb.y", check=True)
    forgot = git(root, "rev-parse", "--short=12", "HEAD").strip()
    hard = invoke_cli("rename", "kb.y", "kb.z", cwd=root)
    assert (hard.returncode, hard.stderr) == (1, (
        f"Error: No memory with id 'kb.y'. It was forgotten for good (not soft-deleted) in commit {forgot}; bring back "
        f"its last version with 'slayer-kb restore kb.y --rev {forgot}~1'.\n"))


def test_uncommitted_work_in_a_file_it_would_touch_is_refused_or_set_aside_with_force(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = linked_kb.root
    fees = root / "memories" / "kb.fees.yaml"
    fees.write_text(fees.read_text().replace("netted", "netted out"))
    refused = invoke_cli("--kb", root, "rename", "kb.revenue-note", "kb.paid-revenue")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: memories/kb.fees.yaml has changes that are not committed (in the work tree or git's index, or never "
        "committed at all), and this command would rewrite it; slayer-kb never commits work you have not "
        "committed, so nothing was done. Commit or stash it (git stash -u), or run the command again with --force "
        "to rewrite it from HEAD and keep your version as memories/kb.fees.yaml.orig.\n"))
    # A memory never committed is never moved into a commit, --force or not.
    memory(linked_kb, "kb.draft", "Not committed yet")
    draft = invoke_cli("--kb", root, "rename", "kb.draft", "kb.final", "--force")
    assert (draft.returncode, draft.stderr) == (1, (
        "Error: memories/kb.draft.yaml was never committed (HEAD lacks it): rename commits a change to a memory HEAD "
        "has, and slayer-kb never commits work you have not committed (--force would set your file aside), so nothing "
        f"was done. Commit it first (cd {root}; git add -- memories/kb.draft.yaml; git commit), then retry.\n"))
    # A file it does not touch may hold work: it stays out of the commit.
    forced = invoke_cli("--kb", root, "rename", "kb.revenue-note", "kb.paid-revenue", "--force")
    assert (forced.returncode, forced.stdout) == (0, (
        "Renamed memory kb.revenue-note to kb.paid-revenue\n"
        "  rewrote memory:kb.revenue-note to memory:kb.paid-revenue in 7, kb.fees\n"
        "kept your uncommitted versions as: memories/kb.fees.yaml.orig\n"))
    assert "netted out" in (root / "memories" / "kb.fees.yaml.orig").read_text()
    assert "netted out" not in git(root, "show", "HEAD:memories/kb.fees.yaml")
    assert git(root, "status", "--porcelain").splitlines() == [
        "?? memories/kb.draft.yaml", "?? memories/kb.fees.yaml.orig"]



@pytest.mark.parametrize("deleted", ["", "KB.Fees", "both"])
def test_the_case_clash_steps_validate_gives_work_as_typed(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner, deleted: str) -> None:
    """Two ids in two letter cases (a merge brought them together): validate's steps, typed in
    the KB's folder as given (the steps for a checkout that shares one file too: here they change
    nothing), rename one and rewrite its links, after which validate passes; a soft-deleted
    memory is renamed as it is, still deleted."""
    root = linked_kb.root
    memory(linked_kb, "KB.Fees", "Fees are gross", "memory:kb.fees")
    memory(linked_kb, "kb.gross", "Gross is before fees", "memory:KB.Fees")
    commit_all(root)
    for memory_id in {"": [], "KB.Fees": ["KB.Fees"], "both": ["KB.Fees", "kb.fees"]}[deleted]:
        invoke_cli("forget", "--soft", memory_id, cwd=root, check=True)
    proc = invoke_cli("--kb", root, "validate", cwd=root)
    assert proc.stdout.splitlines()[0] == (
        "memories/KB.Fees.yaml:1: id 'KB.Fees' differs only in letter case from kb.fees: they collide on macOS and "
        "Windows checkouts; rename one: slayer-kb rename KB.Fees KB.Fees-2 (it rewrites the memory:KB.Fees links; "
        "where the two share one file, as on macOS, run git checkout HEAD -- memories/KB.Fees.yaml before it and "
        "git checkout HEAD -- memories/kb.fees.yaml after it)")
    advice = proc.stdout.splitlines()[0].split("rename one: ")[1]
    rename, shared = advice.removesuffix(")").split(" (it rewrites the memory:KB.Fees links; ")
    before, after = shared.removeprefix("where the two share one file, as on macOS, run ").split(" before it and ")
    for step in before, rename, after.removesuffix(" after it"):
        if step.startswith("slayer-kb "):
            invoke_cli(*shlex.split(step)[1:], cwd=root, check=True)
        else:
            subprocess.run(["sh", "-c", step], cwd=root, check=True)
    assert invoke_cli("--kb", root, "validate").stdout == "Checked 6 files: no problems.\n"
    assert "- memory:KB.Fees-2\n" in (root / "memories" / "kb.gross.yaml").read_text()
    assert changed(root) == [
        "R\tmemories/KB.Fees.yaml\tmemories/KB.Fees-2.yaml", "M\tmemories/kb.gross.yaml"]
    assert ("deleted_at:" in (root / "memories" / "KB.Fees-2.yaml").read_text()) == bool(deleted)


def test_the_old_id_points_at_the_new_one(linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Every command and MCP tool given the old id names the rename, in one wording: not "no
    memory" (an agent holding the old id would take it for lost), nor a forget whose ``restore
    --rev`` would bring back a duplicate, nor ``edit``'s advice to save a new memory under it."""
    root = linked_kb.root
    invoke_cli("rename", "kb.revenue-note", "kb.paid-revenue", cwd=root, check=True)
    commit = git(root, "rev-parse", "--short=12", "HEAD").strip()
    renamed = f"Memory 'kb.revenue-note' was renamed to 'kb.paid-revenue' in commit {commit}: use that id."
    said = f"Error: {renamed}\n"
    for args in (["restore", "kb.revenue-note"], ["show", "kb.revenue-note"], ["rename", "kb.revenue-note", "kb.x"],
                 ["get", "kb.revenue-note"], ["update", "kb.revenue-note", "--title", "x"],
                 ["forget", "kb.revenue-note"], ["forget", "--soft", "kb.revenue-note"], ["edit", "kb.revenue-note"],
                 ["timeline", "kb.revenue-note"]):
        proc = invoke_cli(*args, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", said), args
    for args in (["restore", "kb.revenue-note"], ["rename", "kb.revenue-note", "kb.x"]):
        with traced_git(root.parent) as runs:
            invoke_cli(*args, cwd=root)
        # The history walked once for the deletion, its message read once (it walked twice).
        walks = [run for run in runs("log") if "--diff-filter=D" in run or "--format=%B" in run]
        assert len(walks) == 2, (args, walks)

    async def tools(session: ClientSession) -> list[str]:
        calls = [("mem_get_observation", {"id": "kb.revenue-note"}), ("mem_update", {"id": "kb.revenue-note", "title": "x"}),
                 ("mem_delete", {"id": "kb.revenue-note"}), ("forget_memory", {"id": "kb.revenue-note"}),
                 ("mem_restore", {"id": "kb.revenue-note"}), ("mem_timeline", {"observation_id": "kb.revenue-note"})]
        return [await error(session, tool, **arguments) for tool, arguments in calls]

    assert with_server_in_process(root, tools) == [renamed] * 6
    assert git(root, "rev-parse", "--short=12", "HEAD").strip() == commit
    # Forgotten after its rename: the new id's forget is what the old id's restore names.
    invoke_cli("forget", "kb.paid-revenue", cwd=root, check=True)
    forgot = git(root, "rev-parse", "--short=12", "HEAD").strip()
    assert invoke_cli("restore", "kb.paid-revenue", cwd=root).stderr == (
        f"Error: No memory with id 'kb.paid-revenue'. It was forgotten for good (not soft-deleted) in commit {forgot}; bring back "
        f"its last version with 'slayer-kb restore kb.paid-revenue --rev {forgot}~1'.\n")
    assert invoke_cli("restore", "kb.revenue-note", cwd=root).stderr == (
        f"Error: Memory 'kb.revenue-note' was renamed to 'kb.paid-revenue' in commit {commit}, and then forgotten "
        f"for good in commit {forgot}: bring its last version back with 'slayer-kb restore kb.paid-revenue --rev "
        f"{forgot}~1'.\n")


def test_a_search_by_the_old_ids_link_follows_the_rename(linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``search -e memory:<old id>`` (MCP ``search(entities=[...])``, a link in the question)
    said "No memory with id" and found nothing, where every other command names the rename:
    a lenient read, it searches the link the memory has now and says so."""
    root = linked_kb.root
    invoke_cli("rename", "kb.revenue-note", "kb.paid-revenue", cwd=root, check=True)
    commit = git(root, "rev-parse", "--short=12", "HEAD").strip()
    followed = (f"entity 'memory:kb.revenue-note': memory 'kb.revenue-note' was renamed to 'kb.paid-revenue' in "
                f"commit {commit}, so memory:kb.paid-revenue was searched for; use that id.")
    found = json_of(invoke_cli("--json", "search", "-e", "memory:kb.revenue-note", cwd=root, check=True))
    assert ([hit["id"] for hit in found["memories"]], found["resolved_input_entities"], found["warnings"]) == (
        ["kb.paid-revenue", "7", "kb.fees"], ["memory:kb.paid-revenue"], [followed])
    by_tool = json.loads(call_tool(linked_kb, "search", {"entities": ["memory:kb.revenue-note"]}).text)
    assert ([hit["id"] for hit in by_tool["memories"]], by_tool["warnings"]) == (
        ["kb.paid-revenue", "7", "kb.fees"], [followed])
    asked = json_of(invoke_cli("--json", "search", "as memory:kb.revenue-note says", cwd=root, check=True))
    assert ([hit["id"] for hit in asked["memories"]][:3], asked["warnings"]) == (
        ["kb.paid-revenue", "7", "kb.fees"], [followed])


def test_the_new_id_at_a_revision_before_the_rename_is_the_file_it_had(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``log NEW`` lists the commits before the rename; ``show NEW --rev`` and ``restore NEW
    --rev`` of one read the file the memory had then, its links to itself pointed at NEW."""
    root = linked_kb.root
    git(root, "config", "grep.patternType", "fixed")  # the rename commits are found by a regex whatever it says
    before = git(root, "rev-parse", "--short=12", "HEAD").strip()
    invoke_cli("rename", "kb.revenue-note", "kb.paid-revenue", cwd=root, check=True)
    invoke_cli("update", "kb.paid-revenue", "--learning", "Paid revenue is net of refunds", cwd=root, check=True)
    assert before in invoke_cli("log", "kb.paid-revenue", cwd=root, check=True).stdout
    shown = invoke_cli("show", "kb.paid-revenue", "--rev", before, cwd=root, check=True)
    assert shown.stdout == (
        f"(as of {before})\nid: kb.paid-revenue\nentities:\n  - shop.orders.amount\n  - memory:kb.revenue-note\n"
        "created_at: 2026-01-01T00:00:00Z\n\nPaid revenue counts captured payments only\n")
    with traced_git(root.parent) as runs:
        restored = invoke_cli("restore", "kb.paid-revenue", "--rev", before, cwd=root)
    assert (restored.returncode, restored.stderr) == (0, "")
    assert len(runs("log --reverse")) == 1  # the renames since REV, read once for the file and its links
    assert (root / "memories" / "kb.paid-revenue.yaml").read_text() == (
        "learning: Paid revenue counts captured payments only\nentities:\n- shop.orders.amount\n"
        f"- memory:kb.paid-revenue\n{CREATED}")
    assert git(root, "log", "-1", "--format=%s") == f"memory: restore kb.paid-revenue as of {before}\n"


def test_an_id_renamed_twice_names_its_last_id_and_a_forget_after(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``7`` renamed to kb.b, then kb.b to kb.c: ``7`` names kb.c, also once kb.b is given to another
    memory (``--reuse-id``; it named kb.b, that other memory), and once kb.c is forgotten, that,
    with the way back, not "use that id"."""
    root = linked_kb.root

    def head() -> str:
        return git(root, "rev-parse", "--short=12", "HEAD").strip()

    invoke_cli("rename", "7", "kb.b", cwd=root, check=True)
    first = head()
    invoke_cli("rename", "kb.b", "kb.c", cwd=root, check=True)
    second = head()
    invoke_cli("save", "Another note", "--id", "kb.b", "--reuse-id", "-e", "orders.amount", cwd=root, check=True)
    moved = f"Memory '7' was renamed to 'kb.b' in commit {first}, then to 'kb.c' in commit {second}"
    with traced_git(root.parent) as runs:
        assert invoke_cli("get", "7", cwd=root).stderr == f"Error: {moved}: use that id.\n"
    assert runs("cat-file -e") == []  # each step's new file looked up in HEAD's tree, not by a process a step
    invoke_cli("forget", "--soft", "kb.c", cwd=root, check=True)
    assert invoke_cli("update", "7", "--content", "x", cwd=root).stderr == (
        f"Error: {moved}, and then forgotten (soft-deleted): bring it back with 'slayer-kb restore kb.c' "
        "(MCP: mem_restore).\n")
    invoke_cli("restore", "kb.c", cwd=root, check=True)
    invoke_cli("forget", "kb.c", cwd=root, check=True)
    assert invoke_cli("get", "7", cwd=root).stderr == (
        f"Error: {moved}, and then forgotten for good in commit {head()}: bring its last version back with "
        f"'slayer-kb restore kb.c --rev {head()}~1'.\n")


def test_an_id_renamed_then_forgotten_and_restored_names_the_restored_memory(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    # ``7`` renamed to kb.b, kb.b forgotten for good and brought back ('restore --rev'): 'get 7'
    # still said "forgotten for good", with a restore of what HEAD holds again.
    root = linked_kb.root
    invoke_cli("rename", "7", "kb.b", cwd=root, check=True)
    renamed = git(root, "rev-parse", "--short=12", "HEAD").strip()
    invoke_cli("forget", "kb.b", cwd=root, check=True)
    invoke_cli("restore", "kb.b", "--rev", "HEAD~1", cwd=root, check=True)
    assert invoke_cli("get", "7", cwd=root).stderr == (
        f"Error: Memory '7' was renamed to 'kb.b' in commit {renamed}: use that id.\n")


def test_an_id_renamed_then_forgotten_is_not_followed_into_a_memory_given_its_new_id(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``7`` renamed to kb.b, kb.b forgotten, kb.b saved again for another note and that renamed to
    kb.z: ``get 7`` said "... then to 'kb.z'", the other note; ``7`` was forgotten as kb.b. The
    answer for a renamed id reads git's history in three processes."""
    root = linked_kb.root

    def head() -> str:
        return git(root, "rev-parse", "--short=12", "HEAD").strip()

    invoke_cli("rename", "7", "kb.b", cwd=root, check=True)
    renamed = head()
    with traced_git(root.parent) as runs:
        got = invoke_cli("get", "7", cwd=root)
    assert got.stderr == f"Error: Memory '7' was renamed to 'kb.b' in commit {renamed}: use that id.\n"
    # The deleting commit, its message and files at once, and the deletions of kb.b since.
    assert [run.split()[0] for run in runs("") if run.startswith(("log", "diff-tree"))] == ["log", "diff-tree", "log"]
    invoke_cli("forget", "kb.b", cwd=root, check=True)
    forgot = head()
    invoke_cli("save", "Another note", "--id", "kb.b", "-e", "orders.amount", cwd=root, check=True)
    invoke_cli("rename", "kb.b", "kb.z", cwd=root, check=True)
    assert invoke_cli("get", "7", cwd=root).stderr == (
        f"Error: Memory '7' was renamed to 'kb.b' in commit {renamed}, and then forgotten for good in commit {forgot}: "
        f"bring its last version back with 'slayer-kb restore kb.b --rev {forgot}~1'.\n")


def test_a_new_memory_is_refused_an_id_a_rename_moved_unless_reused_on_purpose(
        linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A save or a rename giving ``7`` (renamed to kb.b) to another memory would hand it the
    links, and the agents' ids, that mean kb.b: refused, naming kb.b and ``--reuse-id``; MCP's
    save names the id to omit. Renaming kb.b back to ``7`` is no reuse."""
    root = linked_kb.root
    invoke_cli("rename", "7", "kb.b", cwd=root, check=True)
    head = git(root, "rev-parse", "HEAD").strip()
    said = ("Memory id '7' was renamed to 'kb.b' (commit {}): agents told '7', and links to it made on clones the "
            "rename has not reached (a sync points those at 'kb.b'), mean that memory. To change it, use 'kb.b'; ")
    refused = invoke_cli("save", "A new note", "--id", "7", "-e", "orders.amount", cwd=root)
    assert (refused.returncode, refused.stderr) == (1, "Error: " + said.format(head[:12]) + (
        "for a new memory, omit --id for the next auto id or choose another id; to give '7' to it on purpose, "
        "add --reuse-id.\n"))
    invoke_cli("rename", "kb.fees", "kb.c", cwd=root, check=True)
    back = invoke_cli("rename", "kb.other", "kb.fees", cwd=root)
    assert back.stderr.startswith("Error: Memory id 'kb.fees' was renamed to 'kb.c' (commit ")
    assert back.stderr.endswith("to give 'kb.other' a name of its own, choose another; to give 'kb.fees' to it on "
                                "purpose, add --reuse-id.\n")

    async def save(session: ClientSession) -> str:
        return await error(session, "save_memory", learning="A new note", linked_entities=["shop.orders.amount"], id="7")

    assert with_server_in_process(root, save) == said.format(head[:12]) + (
        "for a new memory, omit the id for the next auto id or choose another id (a person can reuse '7' with "
        f"'slayer-kb --kb {root} save --reuse-id').")
    assert git(root, "rev-parse", "HEAD").strip() != head and not (root / "memories" / "7.yaml").exists()
    invoke_cli("rename", "kb.c", "kb.fees", cwd=root, check=True)  # back where it was: no reuse
    reused = invoke_cli("save", "A new note", "--id", "7", "--reuse-id", "-e", "orders.amount", cwd=root)
    assert (reused.returncode, reused.stdout) == (0, "Saved memory 7 (created)\n  entities: shop.orders.amount\n")
    invoke_cli("rename", "kb.other", "kb.c", "--reuse-id", cwd=root, check=True)


def test_reuse_id_with_nothing_to_reuse_is_refused(linked_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``--reuse-id`` without ``--id``, or on a save or rename to an id no rename moved, does nothing it
    says: refused, naming what to give or drop, and nothing committed."""
    root = linked_kb.root
    head = git(root, "rev-parse", "HEAD")
    no_id = invoke_cli("save", "A new note", "--reuse-id", "-e", "orders.amount", cwd=root)
    assert no_id.returncode == 2 and no_id.stderr.startswith("Usage: slayer-kb save [OPTIONS]")
    assert no_id.stderr.endswith("Try 'slayer-kb save --help' for help.\n\nError: --reuse-id gives the id of --id to "
                                 "a new memory: give --id too (or drop --reuse-id for the next auto id).\n")
    never = invoke_cli("rename", "7", "kb.seven", "--reuse-id", cwd=root)
    assert (never.returncode, never.stderr) == (1, (
        "Error: --reuse-id gives an id a rename moved to another memory, and no rename moved 'kb.seven' to one that "
        "is still there: drop --reuse-id.\n"))
    saved = invoke_cli("save", "A new note", "--id", "kb.never", "--reuse-id", "-e", "orders.amount", cwd=root)
    assert (saved.returncode, saved.stderr) == (1, (
        "Error: --reuse-id gives an id a rename moved to another memory, and no rename moved 'kb.never' to one that "
        "is still there: drop --reuse-id.\n"))
    assert git(root, "rev-parse", "HEAD") == head


def test_get_and_forget_of_an_unknown_id_on_a_branch_with_no_commit_say_there_is_none(
        empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Where a fold's record is looked for in HEAD's history, a branch with no commit yet has none."""
    root = empty_kb.root
    git(root, "checkout", "-q", "--orphan", "fresh")
    for command in ("get", "forget"):
        proc = invoke_cli("--kb", root, command, "5")
        assert (proc.returncode, proc.stderr) == (1, "Error: No memory with id '5'.\n"), command
