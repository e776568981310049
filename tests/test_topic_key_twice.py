"""A topic key that a branch's change gives a memory while another memory holds it on the other
side: ``sync`` refuses to push it, ``validate --against`` and ``review`` name it (docs/teams.md,
"A topic key given where another memory holds it"). Clones of one bare remote, every command as a
user types it in the clone's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, git, in_process_runner, in_the_kb, json_of, make_team, make_team_after

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb

KEY = ("--project", "api", "--topic-key", "decision/retry")
# Long distinct texts: git never pairs these memories as a rename.
FIRST = "Time zones: every timestamp in the shop schema is stored in UTC and cut into days at midnight UTC."
RETRY = "Retries against the payments api: three attempts with exponential backoff, never more, then a page."


def _twice(memory_id: str, other: str, merged: str = "") -> str:
    """The problem of memory ``memory_id``, given the key memory ``other`` holds."""
    ids = ", ".join(sorted((memory_id, other), key=int))
    return (f"topic_key 'decision/retry' in project 'api' is held by 2 memories ({ids}){merged}: this branch gave it "
            f"to memory {memory_id}, and a save under the key revises only the newest. Keep one: give memory "
            f"{memory_id} another key or none ('slayer-kb update {memory_id} --topic-key NEW', '' for none), or "
            "forget one of them ('slayer-kb forget ID')")


def _keyed_after_a_push(kbs: list[Path]) -> None:
    """Clone a saves memory 1 (no key) and both clones hold it; then a saves memory 2 under the
    key and syncs."""
    a, b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    invoke_cli("--kb", a, "save", FIRST, "--title", "Time zones", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    saved = invoke_cli("--kb", a, "save", RETRY, "--title", "Retry budget", "--type", "decision", *KEY, check=True)
    assert saved.stdout.endswith("(memory 2)\n")
    invoke_cli("--kb", a, "sync", check=True)


def _pushed_then_keyed(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The remote and clones a and b after ``_keyed_after_a_push``, made once a process and copied
    (``make_team_after``)."""
    bare, (a, b) = make_team_after(tmp_path, "keyed-after-a-push", _keyed_after_a_push)
    return bare, a, b


def test_a_sync_refuses_a_key_an_update_gave_to_a_pushed_memory(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # b gave memory 1 the key a had saved memory 2 under: the sync said "rebased, 1 pulled, 1 pushed"
    # and main held the key twice (validate failed there).
    bare, a, b = _pushed_then_keyed(tmp_path)
    invoke_cli("--kb", b, "update", "1", *KEY, check=True)
    remote, mine = git(bare, "rev-parse", "main"), git(b, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", b, "sync")
    assert (refused.returncode, refused.stdout, refused.stderr) == (1, "", (
        "Error: After merging the upstream these memories do not validate, so nothing was pushed and the "
        f"repository is back as it was:\nmemories/1.yaml:1: {_twice('1', '2')}\n"
        "Fix them on your branch (each names its fix; commit what you change by hand) and run 'slayer-kb sync' again.\n"))
    assert (git(bare, "rev-parse", "main"), git(b, "rev-parse", "HEAD")) == (remote, mine)
    assert git(b, "status", "--porcelain") == ""
    # The fix as it says: memory 1 under a key of its own, and the sync goes through.
    invoke_cli("--kb", b, "update", "1", "--topic-key", "decision/time-zones", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: rebased, 1 pulled, 2 pushed.\n"
    invoke_cli("--kb", a, "sync", check=True)
    assert invoke_cli("--kb", a, "validate").stdout == "Checked 4 files: no problems.\n"


@pytest.mark.slow  # a variant (docs/testing.md, "A flow's variants")
def test_a_sync_refuses_a_key_a_plain_git_commit_gave_a_second_memory(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Every problem validate reports stops the sync: a person's commit is checked as an update is.
    bare, a, _b = _pushed_then_keyed(tmp_path)
    path = a / "memories" / "1.yaml"
    path.write_text(path.read_text().replace("scope: project\n", "project: api\nscope: project\ntopic_key: decision/retry\n"))
    assert invoke_cli("--kb", a, "validate").stdout.splitlines()[-1] == "2 problems in 2 files (4 files checked)"
    git(a, "commit", "-qam", "time zones: the retry key")
    remote = git(bare, "rev-parse", "main")
    refused = invoke_cli("--kb", a, "sync")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: These memories do not validate, so nothing was pushed and the repository is back as it was:\n"
        f"memories/1.yaml:1: {_twice('1', '2')}\n"
        "Fix them on your branch (each names its fix; commit what you change by hand) and run 'slayer-kb sync' again.\n"))
    assert git(bare, "rev-parse", "main") == remote


def _pull_request(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path]:
    """Branch agent-b (clone b) gives memory 1 the key and syncs; then clone a saves memory 2 under
    it on main and syncs, and b fetches. Returns (b, a reviewer's clone)."""
    _bare, (a, b, reviewer) = make_team(tmp_path, clones=3)
    invoke_cli("--kb", a, "save", FIRST, "--title", "Time zones", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "pull", "-q", "origin", "main")
    git(b, "switch", "-q", "-c", "agent-b")
    invoke_cli("--kb", b, "update", "1", *KEY, check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "save", RETRY, "--title", "Retry budget", "--type", "decision", *KEY, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    return b, reviewer


# validate --against said "no problems" and review listed none: the key check covered only
# memories new on the branch.
MERGED = " once merged with origin/main, which added memory 2 since this branch parted from it"


def test_validate_against_names_a_key_the_branch_gave_that_main_saved_since(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    b, reviewer = _pull_request(tmp_path, invoke_cli)
    checked = invoke_cli("--kb", b, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: {_twice('1', '2', MERGED)}\n1 problem in 1 file (1 file checked)\n"))
    # What it warns of: the reviewer's plain merge leaves main with the key held twice.
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--ff-only", "origin/main")
    git(reviewer, "merge", "-q", "--no-ff", "--no-edit", "origin/agent-b")
    assert invoke_cli("--kb", reviewer, "validate").stdout.splitlines()[-1] == "2 problems in 2 files (4 files checked)"
    # The fix on the branch (the key taken off memory 1) leaves nothing to name.
    invoke_cli("--kb", b, "update", "1", "--topic-key", "", check=True)
    assert invoke_cli("--kb", b, "validate", "--against", "origin/main").returncode == 0


@pytest.mark.slow  # a variant (docs/testing.md, "A flow's variants")
def test_review_names_a_key_the_branch_gave_that_main_saved_since(tmp_path: Path, invoke_cli: CliRunner) -> None:
    b, _reviewer = _pull_request(tmp_path, invoke_cli)
    reviewed = invoke_cli("--kb", b, "review", "origin/main", check=True)
    assert reviewed.stdout.split("### Problems\n\n", 1)[1] == f"- memories/1.yaml:1: {_twice('1', '2', MERGED)}\n"
    assert json_of(invoke_cli("--kb", b, "--json", "review", "origin/main", check=True))["problems"] == [
        f"memories/1.yaml:1: {_twice('1', '2', MERGED)}"]
    invoke_cli("--kb", b, "update", "1", "--topic-key", "", check=True)
    assert "### Problems" not in invoke_cli("--kb", b, "review", "origin/main", check=True).stdout


@pytest.mark.slow  # a variant (docs/testing.md, "A flow's variants")
def test_validate_against_names_a_key_main_gave_a_memory_it_held_before(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Both sides gave the key to a memory each held before: no merge folds either.
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", FIRST, "--title", "Time zones", check=True)
    invoke_cli("--kb", a, "save", RETRY, "--title", "Retry budget", "--type", "decision", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "pull", "-q", "origin", "main")
    git(b, "switch", "-q", "-c", "agent-b")
    invoke_cli("--kb", b, "update", "1", *KEY, check=True)
    invoke_cli("--kb", a, "update", "2", *KEY, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    merged = " once merged with origin/main, which changed memory 2 since this branch parted from it"
    checked = invoke_cli("--kb", b, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: {_twice('1', '2', merged)}\n1 problem in 1 file (1 file checked)\n"))


def test_a_pair_pushed_before_does_not_stop_a_sync_of_an_edit(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A key held twice on the remote already (pushed past sync) is validate's to name; an edit of
    # either memory that leaves the key as it was is no new pair, and syncs.
    bare, a, b = _pushed_then_keyed(tmp_path)
    path = a / "memories" / "1.yaml"
    path.write_text(path.read_text().replace("scope: project\n", "project: api\nscope: project\ntopic_key: decision/retry\n"))
    git(a, "commit", "-qam", "time zones: the retry key")
    git(a, "push", "-q", "origin", "main")
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", FIRST + " Daylight saving never shifts it.", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: pushed, 0 pulled, 1 pushed.\n"
    assert git(bare, "rev-parse", "main") == git(b, "rev-parse", "HEAD")
    assert invoke_cli("--kb", b, "validate").stdout.splitlines()[-1] == "2 problems in 2 files (4 files checked)"


def _forget_one(b: Path, invoke_cli: CliRunner) -> None:
    invoke_cli("--kb", b, "forget", "1", check=True)


def _priority_touched(b: Path, invoke_cli: CliRunner) -> None:
    with (b / "priority.yaml").open("a") as priority:
        priority.write("# the shop first\n")
    git(b, "commit", "-qam", "priority: a comment")


# Once the branch forgot a memory or touched priority.yaml, validate --against checked every file
# and left the key out ("Checked 3 files: no problems.", exit 0), while review still named it.
@pytest.mark.parametrize("then", [None, _forget_one, _priority_touched], ids=["plain", "forget", "priority"])
def test_validate_against_names_a_key_main_saved_whatever_else_the_branch_did(
        tmp_path: Path, invoke_cli: CliRunner, then: object) -> None:
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", FIRST, "--title", "Time zones", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "pull", "-q", "origin", "main")
    git(b, "switch", "-q", "-c", "feat-y")
    invoke_cli("--kb", a, "save", RETRY, "--title", "Retry budget", "--type", "decision", *KEY, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    mine = "Retry budget on the branch: two attempts with a fixed pause of one second, then give up quietly."
    saved = invoke_cli("--kb", b, "save", mine, "--title", "Retry budget", "--type", "decision", *KEY, check=True)
    assert saved.stdout.endswith("(memory 101)\n")
    if callable(then):
        then(b, invoke_cli)
    git(b, "fetch", "-q", "origin")
    checked = invoke_cli("--kb", b, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (1, (
        "memories/101.yaml:1: topic_key 'decision/retry' in project 'api' is also held by memory 2 that origin/main "
        "added since this branch parted from it; merged, the key would be held twice. Run 'git fetch origin && "
        "slayer-kb merge origin/main': it folds this memory into 2 (one memory, both sides' revisions)"))
