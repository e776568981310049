"""git's states respected (issue 27, point 5): while a merge, rebase, cherry-pick, revert or bisect
is not concluded, every write refuses in git's words with the way out, and reads go on; a memory
file git left with conflict markers is reported in one wording by every command."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, git, json_of

CONFLICTED = "memories/13.yaml"
CONFLICT = ("memories/13.yaml:7: unresolved merge conflict in memories/13.yaml: resolve it, then "
            "`git add memories/13.yaml`")


def _describe(root: Path, description: str) -> None:
    """Commit memory 13 with ``description`` added before its entities (a plain git commit)."""
    path = root / CONFLICTED
    text = path.read_text()
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith("description:")]
    at = lines.index("entities:\n")
    path.write_text("".join([*lines[:at], f"description: {description}\n", *lines[at:]]))
    git(root, "commit", "-qam", f"describe 13 as {description}")


def _two_sides(root: Path) -> None:
    """Branch ``side`` and the current branch each give memory 13 another description."""
    git(root, "branch", "side")
    _describe(root, "ours")
    git(root, "checkout", "-q", "side")
    _describe(root, "theirs")
    git(root, "checkout", "-q", "-")


def _failing(root: Path, *args: str) -> None:
    """A git command that stops on the conflict, as it should here."""
    assert subprocess.run(["git", *args], cwd=root, capture_output=True).returncode != 0


def merge(root: Path) -> None:
    _two_sides(root)
    _failing(root, "merge", "side")


def rebase(root: Path) -> None:
    _two_sides(root)
    _failing(root, "rebase", "side")


def cherry_pick(root: Path) -> None:
    _two_sides(root)
    _failing(root, "cherry-pick", "side")


def revert(root: Path) -> None:
    _describe(root, "first")
    _describe(root, "second")
    _failing(root, "revert", "--no-edit", "HEAD~1")


def bisect(root: Path) -> None:
    _describe(root, "first")
    git(root, "bisect", "start", "HEAD", "HEAD~1")


STATES: dict[str, tuple[Callable[[Path], None], str]] = {
    "merge": (merge, "You have not concluded your merge (MERGE_HEAD exists). Conclude it with `git commit` "
                     "or abort it with `git merge --abort`, then run the command again."),
    "rebase": (rebase, "You are in the middle of a rebase (rebase-merge exists). Conclude it with "
                       "`slayer-kb rebase --continue` (git's, with the KB's merge driver) or abort it with "
                       "`slayer-kb rebase --abort`, then run the command again."),
    "cherry-pick": (cherry_pick, "You have not concluded your cherry-pick (CHERRY_PICK_HEAD exists). Conclude it "
                                 "with `git cherry-pick --continue` or abort it with `git cherry-pick --abort`, then "
                                 "run the command again."),
    "revert": (revert, "You have not concluded your revert (REVERT_HEAD exists). Conclude it with "
                       "`git revert --continue` or abort it with `git revert --abort`, then run the command again."),
    "bisect": (bisect, "You are currently bisecting (BISECT_LOG exists). End it with `git bisect reset`, then "
                       "run the command again."),
}

WRITES = {
    "save": ("save", "Refunds are negative rows", "-e", "shop.orders.amount"),
    "update": ("update", "1", "--description", "the order total"),
    "forget": ("forget", "2"),
    "engram save": ("save", "JWT over sessions", "--title", "Auth decision", "--project", "api"),
    "session-start": ("session-start", "s9", "--project", "api"),
}


@pytest.mark.parametrize("state", sorted(STATES))
def test_writes_refuse_while_a_git_operation_is_not_concluded(
    indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, state: str
) -> None:
    root = indexed_example_kb.root
    start, message = STATES[state]
    start(root)
    head = git(root, "rev-parse", "HEAD")
    status = git(root, "status", "--porcelain")
    for name, command in WRITES.items():
        proc = invoke_cli("--kb", root, *command)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n"), name
    # edit refuses before its editor opens: what the person typed would be refused and lost.
    opened = root.parent / "editor-opened"
    proc = invoke_cli("--kb", root, "edit", "1", env={"VISUAL": f"touch {opened}", "EDITOR": f"touch {opened}"})
    assert (proc.returncode, proc.stderr, opened.exists()) == (1, f"Error: {message}\n", False)
    # A usage error is told before the KB's state: it is wrong in any state.
    proc = invoke_cli("--kb", root, "delete-model", "shop.orders", "--datasource", "wh")
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (
        2, "Error: 'shop.orders' names datasource 'shop' but --datasource says 'wh': name the datasource once, in "
           "MODEL or with --datasource.")
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == status
    # Reads keep working.
    assert invoke_cli("--kb", root, "get", "1", check=True).stdout.startswith("id: 1\n")
    assert "[1]" in invoke_cli("--kb", root, "search", "order total", "--limit", "30", check=True).stdout
    assert invoke_cli("--kb", root, "list", check=True).returncode == 0


def test_writes_refuse_in_a_linked_worktree_in_a_merge(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    """The markers are looked up in the work tree's own git dir (`git rev-parse --git-path`)."""
    root = indexed_example_kb.root
    other = tmp_path / "other"
    git(root, "worktree", "add", "-q", str(other), "-b", "other")
    merge(other)
    proc = invoke_cli("--kb", other, *WRITES["save"])
    assert (proc.returncode, proc.stderr) == (1, f"Error: {STATES['merge'][1]}\n")
    # The main work tree is in no merge: it saves.
    assert invoke_cli("--kb", root, *WRITES["save"], check=True).stdout.startswith("Saved memory 27")


def test_conflict_markers_are_reported_alike_by_every_command(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "list", check=True)
    merge(root)
    assert (root / CONFLICTED).read_text().splitlines()[6].startswith("<<<<<<< ")
    proc = invoke_cli("--kb", root, "list", "--limit", "30")
    assert proc.returncode == 0
    assert proc.stdout.endswith(f"\nwarning: {CONFLICT} (skipped)\n")
    assert "[13]" not in proc.stdout
    # Every later look-up warns too, not only the one that read the file first.
    for _ in range(2):
        proc = invoke_cli("--kb", root, "search", "conversion rate")
        assert proc.returncode == 0
        assert f"warning: {CONFLICT} (skipped)" in proc.stdout.splitlines()
    assert invoke_cli("--kb", root, "list", "--limit", "30").stdout.endswith(f"\nwarning: {CONFLICT} (skipped)\n")
    assert json_of(invoke_cli("--kb", root, "--json", "list"))["warnings"] == [f"{CONFLICT} (skipped)"]
    proc = invoke_cli("--kb", root, "get", "13")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {CONFLICT}\n")
    proc = invoke_cli("validate", cwd=root)
    assert (proc.returncode, proc.stdout) == (1, f"{CONFLICT}\n1 problem in 1 file (40 files checked)\n")


def test_conflict_markers_in_a_session_file_are_reported_alike(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    session = next((root / "sessions").glob("*.yaml"))
    name = f"sessions/{session.name}"
    session.write_text("<<<<<<< HEAD\nproject: a\n=======\nproject: b\n>>>>>>> side\n" + session.read_text())
    proc = invoke_cli("validate", cwd=root)
    expected = f"{name}:1: unresolved merge conflict in {name}: resolve it, then `git add {name}`"
    assert proc.returncode == 1
    assert expected in proc.stdout.splitlines()


def test_mcp_writes_refuse_during_a_merge_and_reads_go_on(indexed_example_kb: KnowledgeBase) -> None:
    from mcp import ClientSession

    from testing.mcp import call_json, error, with_server_in_process

    root = indexed_example_kb.root
    merge(root)
    head = git(root, "rev-parse", "HEAD")
    message = STATES["merge"][1]

    async def script(session: ClientSession) -> None:
        writes = {
            "save_memory": {"learning": "Refunds are negative rows", "linked_entities": ["orders.amount"]},
            "forget_memory": {"id": "2"},
            "mem_save": {"title": "Auth decision", "content": "JWT over sessions"},
            "mem_update": {"id": 1, "type": "pattern"},
            "mem_delete": {"id": 2},
            "mem_session_start": {"id": "s9", "project": "api"},
        }
        for tool, arguments in writes.items():
            assert message in await error(session, tool, **arguments), tool
        found = await call_json(session, "search", question="order total", max_results=30)
        assert "1" in [m["id"] for m in found["memories"]]

    with_server_in_process(root, script)
    assert git(root, "rev-parse", "HEAD") == head
