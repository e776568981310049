"""A memory a commit took away, asked for by its id: forgotten (by ``forget`` or a ``git rm``
committed) names the ``restore --rev`` that brings it back; moved by hand (``git mv`` committed)
or folded by a sync into the memory another clone saved first names the id it has now. Through ``get``, ``update``, ``forget`` and ``restore``, and the tools."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from slayer_kb import KnowledgeBase
from testing import CliRunner, git, json_of, make_team


def _head(root: Path) -> str:
    return git(root, "rev-parse", "--short=12", "HEAD").strip()


def test_a_memory_a_commit_forgot_or_moved_says_what_became_of_it(example_kb: KnowledgeBase,
                                                                  invoke_cli: CliRunner) -> None:
    root = example_kb.root
    invoke_cli("forget", "3", cwd=root, check=True)
    forgot = _head(root)
    git(root, "rm", "-q", "memories/2.yaml")
    git(root, "commit", "-q", "-m", "drop 2 by hand")
    deleted = _head(root)
    git(root, "mv", "memories/1.yaml", "memories/retry-note.yaml")
    git(root, "commit", "-q", "-m", "move 1 by hand")
    moved = _head(root)

    def said(*args: str) -> str:
        proc = invoke_cli(*args, cwd=root)
        assert proc.returncode == 1 and proc.stdout == "", args
        return proc.stderr

    for args in (("get", "3"), ("update", "3", "--title", "x"), ("forget", "3")):
        assert said(*args) == (f"Error: No memory with id '3'. It was forgotten for good (not soft-deleted) in commit {forgot}; bring "
                               f"back its last version with 'slayer-kb restore 3 --rev {forgot}~1'.\n"), args
    assert said("get", "2") == (f"Error: No memory with id '2'. It was forgotten for good (not soft-deleted) in commit {deleted}; "
                                f"bring back its last version with 'slayer-kb restore 2 --rev {deleted}~1'.\n")
    by_hand = (f"Error: No memory with id '1'. It was moved by hand to 'retry-note' in commit {moved} (its file "
               "renamed, with no 'slayer-kb rename'); use that id.\n")
    for args in (("get", "1"), ("update", "1", "--title", "x"), ("restore", "1"), ("rename", "1", "kb.x")):
        assert said(*args) == by_hand, args
    assert said("get", "99") == "Error: No memory with id '99'.\n"

    invoke_cli("restore", "3", "--rev", f"{forgot}~1", cwd=root, check=True)
    assert invoke_cli("get", "3", cwd=root, check=True).stdout.startswith("id: 3\n")
    # Moved, then forgotten under its new id: the move is said, not taken for the forget.
    invoke_cli("forget", "retry-note", cwd=root, check=True)
    assert said("get", "1") == (f"Error: No memory with id '1'. It was moved by hand to 'retry-note' in commit {moved} "
                                "(its file renamed, with no 'slayer-kb rename'), which no memory holds now: 'slayer-kb "
                                "get retry-note' says what became of it.\n")
    assert said("get", "retry-note").startswith("Error: No memory with id 'retry-note'. It was forgotten for good")


def test_the_tools_say_a_person_can_bring_a_forgotten_memory_back(example_kb: KnowledgeBase,
                                                                  invoke_cli: CliRunner) -> None:
    from mcp import ClientSession

    from testing.mcp import error, with_server_in_process

    root = example_kb.root
    invoke_cli("forget", "3", cwd=root, check=True)
    forgot = _head(root)

    async def script(session: ClientSession) -> None:
        assert await error(session, "mem_get_observation", id=3) == (
            f"No memory with id '3'. It was forgotten for good (not soft-deleted) in commit {forgot}; the tools cannot bring it "
            f"back, a person can: 'slayer-kb --kb {root} restore 3 --rev {forgot}~1'.")

    with_server_in_process(root, script)


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
def test_a_memory_another_clones_sync_folded_names_the_memory_it_went_into(tmp_path: Path,
                                                                          invoke_cli: CliRunner) -> None:
    _bare, (a, b) = make_team(tmp_path)
    saved = [invoke_cli("--kb", root, "save", f"{who}: retries back off exponentially.", "--title", "Retry policy",
                        "--topic-key", "decision/retry", "--json", check=True) for root, who in ((a, "A"), (b, "B"))]
    theirs = json_of(saved[1])["memory_id"]
    for root in (a, b, a):
        invoke_cli("--kb", root, "sync", check=True)
    fold = git(a, "log", "-1", "--format=%h", "--abbrev=12", f"--grep=merge {theirs} into").strip()
    assert fold
    ours = json_of(saved[0])["memory_id"]
    assert invoke_cli("--kb", a, "get", theirs).stderr == (
        f"Error: No memory with id '{theirs}'. It was merged into '{ours}' in commit {fold}, the memory kept under "
        "the same topic key; use that id.\n")


def test_a_restore_never_replaces_another_memory_given_the_id_since(example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                                    minutes_apart: None) -> None:
    root = example_kb.root
    invoke_cli("forget", "1", cwd=root, check=True)
    forgot = _head(root)
    invoke_cli("save", "--id", "1", "Replacement: invoices round tax per line.", "-e", "shop.orders.amount", cwd=root,
               check=True)
    head, text = _head(root), (root / "memories" / "1.yaml").read_text()
    proc = invoke_cli("restore", "1", "--rev", f"{forgot}~1", cwd=root)
    created = yaml.safe_load(text)["created_at"]
    old = yaml.safe_load(git(root, "show", f"{forgot}~1:memories/1.yaml"))["created_at"]
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: Memory '1' is another memory now (saved {created}) than the one at {forgot}~1 (saved {old}): restoring "
        "would replace it. To keep both, give the memory that holds '1' now another id first ('slayer-kb rename 1 "
        "NEW'), then restore.\n"))
    assert (_head(root), (root / "memories" / "1.yaml").read_text()) == (head, text)
    # The fix as written keeps both.
    invoke_cli("rename", "1", "kb.replacement", cwd=root, check=True)
    invoke_cli("restore", "1", "--rev", f"{forgot}~1", cwd=root, check=True)
    assert (root / "memories" / "1.yaml").read_text() == git(root, "show", f"{forgot}~1:memories/1.yaml")
    assert "Replacement" in (root / "memories" / "kb.replacement.yaml").read_text()


def test_a_link_to_a_memory_moved_by_hand_is_pointed_at_it_not_stripped(example_kb: KnowledgeBase,
                                                                          invoke_cli: CliRunner) -> None:
    root = example_kb.root
    git(root, "mv", "memories/10.yaml", "memories/kb.ten.yaml")
    git(root, "commit", "-q", "-m", "move 10 by hand")
    moved = _head(root)
    proc = invoke_cli("validate", cwd=root)
    assert (proc.returncode, proc.stdout) == (1, (
        f"memories/25.yaml:12: 'memory:10' refers to 10, which commit {moved} moved by hand to kb.ten: run "
        "'slayer-kb prune' to point it at kb.ten\n1 problem in 1 file (40 files checked)\n"))
    assert invoke_cli("prune", cwd=root, check=True).stdout.startswith(
        "Pointed in memory 25: memory:10 at memory:kb.ten")
    assert "- memory:kb.ten\n" in (root / "memories" / "25.yaml").read_text()
    assert invoke_cli("validate", cwd=root).returncode == 0


def test_a_memory_folded_here_into_one_forgotten_since_says_so(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _bare, (a, b) = make_team(tmp_path)
    saved = [json_of(invoke_cli("save", f"{who}: retries back off exponentially.", "--title", "Retry policy",
                                "--topic-key", "decision/retry", "--json", cwd=root, check=True))["memory_id"]
             for root, who in ((a, "A"), (b, "B"))]
    for root in (a, b):
        invoke_cli("sync", cwd=root, check=True)
    invoke_cli("forget", saved[0], cwd=a, check=True)
    invoke_cli("sync", cwd=a, check=True)
    invoke_cli("sync", cwd=b, check=True)
    proc = invoke_cli("get", saved[1], cwd=b)
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: Memory id '{saved[1]}' moved: sync merged this clone's memory {saved[1]} into {saved[0]}, which the "
        f"upstream holds under the same topic key; no memory has id '{saved[1]}' now. Use {saved[0]} for "
        f"the memory saved here (no memory has id '{saved[0]}' now either: 'slayer-kb get {saved[0]}' says what "
        f"became of it); to mean what '{saved[1]}' names now, run 'slayer-kb renumber --accept {saved[1]}' first.\n"))


def test_show_of_a_memory_moved_by_hand_names_where_it_went(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """show (with no --rev) printed the old file's last version as a deleted memory's; and a move
    to a name no id has was told to use that 'id'."""
    root = example_kb.root
    git(root, "mv", "memories/2.yaml", "memories/four x.yaml")
    git(root, "mv", "memories/3.yaml", "memories/kb.three.yaml")
    git(root, "commit", "-q", "-m", "moves by hand")
    moved = _head(root)
    proc = invoke_cli("show", "3", cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: No memory with id '3'. It was moved by hand to 'kb.three' in commit {moved} (its file renamed, with "
        "no 'slayer-kb rename'); use that id.\n"))
    for command in ("show", "get"):
        proc = invoke_cli(command, "2", cwd=root)
        assert (proc.returncode, proc.stderr) == (1, (
            f"Error: No memory with id '2'. It was moved by hand to memories/four x.yaml in commit {moved}, a name no "
            "id has, so no command reads it: move it back with git mv 'memories/four x.yaml' memories/2.yaml, and "
            "commit.\n")), command
