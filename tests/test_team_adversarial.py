"""A team's clones driven as a stranger would drive them (branches per agent, squash merges,
clones saving before they sync), each test the reproduction of a defect such a run found: what
the user sees, and that the advice given works when typed."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import (
    CliRunner,
    git,
    in_process_runner,
    in_the_kb,
    json_of,
    make_team,
    make_team_after,
    squash_merged_branch,
    traced_git,
)

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb

# What the agent saves on its branch before main squash-merges it (``squash_merged_branch``).
REFUNDS = ("save", "Refund reasons are free text", "-e", "shop.refunds.amount")
CENTS = ("save", "Amounts are in cents", "-e", "shop.orders.amount")


def _two_linked_sent(kbs: list[Path]) -> None:
    """Memory 2 linking memory 1, saved on clone a and synced: made once a process and copied
    (``make_team_after``) for the tests that start there."""
    run = in_the_kb(in_process_runner())
    run("--kb", kbs[0], "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    run("--kb", kbs[0], "save", "Group them by hand (see 1)", "-e", "shop.refunds.amount", "-e", "memory:1", check=True)
    run("--kb", kbs[0], "sync", check=True)


def test_validate_against_names_a_squash_merged_memory_the_branch_edited_since(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's memory 1; the agent then revised it on its branch. Both
    # histories added memory 1 (one memory: no id collision), under two commits, so git's merge
    # base lacks it and the reviewer's plain 'git merge' of the branch stops on an add/add. The
    # review's check passed it ("no problems") as if it were an id collision, which it is not.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS)
    invoke_cli("--kb", agent, "update", "1", "--content", "Refund reasons: free text, grouped by hand", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/1.yaml:1: origin/main wrote this memory too since this branch parted from it, in lines git's "
        "merge cannot join: a plain git merge of this branch stops on it. Run 'git fetch origin && slayer-kb merge "
        "origin/main': it merges both sides' revisions of a topic key, and fields each side changed alone, and "
        "stops on two edits of one field (two memories under one id among them) with the steps to merge by hand\n"
        "1 problem in 1 file (1 file checked)\n"))

    # The fix, typed by the agent, makes the reviewer's plain merge go through with the agent's edit.
    git(agent, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout == "Merged origin/main; run slayer-kb sync to push.\n"
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    again = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (again.returncode, again.stdout) == (0, "Checked 1 file: no problems.\n")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    assert "Refund reasons: free text, grouped by hand" in (reviewer / "memories" / "1.yaml").read_text()


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_a_forget_a_plain_merge_would_undo(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's memories 1 and 2; the agent then forgot 2 on its branch. git's
    # merge base is older than memory 2, so the reviewer's plain 'git merge' saw main add it and the
    # branch leave it alone, and kept it: the forget the agent was told of undone, and the check
    # (and the review) said nothing of it.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/2.yaml:1: this branch forgot memory 2 after origin/main took it in from this branch (a squash "
        "or rebase merge, under commits of its own): a plain git merge of this branch keeps it, since git's merge "
        "base is older than the memory. Run 'git fetch origin && slayer-kb merge origin/main': it keeps the "
        "memory forgotten\n"
        "1 problem in 1 file (1 file checked)\n"))

    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    again = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (again.returncode, again.stdout) == (0, "Checked 1 file: no problems.\n")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    assert git(reviewer, "ls-files", "memories/1.yaml", "memories/2.yaml").split() == ["memories/1.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_a_link_ref_added_to_a_memory_the_branch_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Agent A forgot memory 1 on its branch while agent B's branch, merged into main first, added
    # memory 101 linking memory:1. The check of A's branch passed it, and the reviewer's plain
    # merge made a main whose memory 101 links nothing: 'validate' fails there.
    _bare, (a, b, reviewer) = make_team(tmp_path, clones=3)
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (b, reviewer):
        git(clone, "pull", "-q", "origin", "main")
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "switch", "-q", "-c", "agent-b")
    saved = invoke_cli("--kb", b, "save", "Group refunds by hand (see 1)", "-e", "shop.refunds.amount", "-e", "memory:1",
                       check=True)
    assert saved.stdout.startswith("Saved memory 101 (created)")
    invoke_cli("--kb", b, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-b", "-m", "Merge agent-b")
    git(reviewer, "push", "-q", "origin", "main")

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/101.yaml:1: memory 101, which origin/main added or changed since this branch parted from it, "
        "links 'memory:1', which this branch forgot; merged as it is, the link would point at nothing. Run 'git "
        "fetch origin && slayer-kb merge origin/main': it strips links to forgotten memories, in one commit\n"
        "1 problem in 1 file (0 files checked)\n"))

    assert _merged_as_advised(invoke_cli, a, reviewer) == (
        "Merged origin/main; run slayer-kb sync to push.\n  stripped links to forgotten memories: memory:1 from 101\n")
    assert invoke_cli("--kb", reviewer, "validate").returncode == 0


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_a_link_ref_added_to_an_entity_the_branch_deleted(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Agent A deleted model shop.refunds on its branch while main gained memory 101 linking
    # shop.refunds.amount. The check of A's branch said "no problems", and the reviewer's plain
    # merge made a main whose memory 101 links nothing: 'validate' fails there.
    _bare, (a, reviewer) = make_team(tmp_path)
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "delete-model", "shop.refunds", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", reviewer, "save", "Refunds are negative", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/101.yaml:1: memory 101, which origin/main added or changed since this branch parted from it, "
        "links 'shop.refunds.amount', which this branch deleted from the catalog; merged as it is, the link would "
        "point at nothing. Run 'git fetch origin && slayer-kb merge origin/main': it strips links to deleted "
        "entities, as the delete would have, in one commit\n"
        "1 problem in 1 file (0 files checked)\n"))

    assert _merged_as_advised(invoke_cli, a, reviewer) == (
        "Merged origin/main; run slayer-kb sync to push.\n"
        "  stripped entities deleted from the catalog: shop.refunds.amount from 101\n")
    assert invoke_cli("--kb", reviewer, "validate").stdout.endswith("no problems.\n")


def test_a_forget_holds_against_another_clones_strip_of_its_links(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Memory 2 links memory:1. Clone A forgot 2 and synced; clone B forgot 1, which stripped
    # memory:1 from 2, an edit of 2 only in the links a forget takes along. B's sync stopped on
    # "origin/main forgot memories/2.yaml, which your commits edited", for a person, and B's other
    # saves stayed off the remote until one came: every later sync stopped the same way.
    _bare, (a, b) = make_team_after(tmp_path, "two-linked-sent-from-a", _two_linked_sent)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "2", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    forgot = invoke_cli("--kb", b, "forget", "1", check=True)
    assert forgot.stdout == "Forgot memory 1\n  stripped memory:1 from 2\n"
    invoke_cli("--kb", b, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)

    synced = invoke_cli("--kb", b, "sync")
    assert (synced.returncode, synced.stdout, synced.stderr) == (
        0, "Synced main with origin: rebased, 1 pulled, 2 pushed.\n  merged both sides of: memories/2.yaml\n", "")
    assert git(b, "ls-files", "memories").split() == ["memories/101.yaml"]
    assert git(b, "status", "--porcelain") == ""
    invoke_cli("--kb", a, "sync", check=True)
    assert git(a, "ls-files", "memories").split() == ["memories/101.yaml"]
    assert invoke_cli("--kb", a, "validate").returncode == 0


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_restore_against_another_clones_forget_goes_to_a_person(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A soft-forgot memory 1 and synced; B forgot it for good; A then restored it. The restore only
    # clears deleted_at (and stamps updated_at), which the strip rule took for no change: A's sync
    # dropped the memory A had just brought back and told A nothing.
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "forget", "1", "--soft", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", b, "forget", "1", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "restore", "1", check=True)

    synced = invoke_cli("--kb", a, "sync")
    assert synced.returncode == 1
    assert "origin/main forgot memories/1.yaml, which your commits edited" in synced.stderr
    assert git(a, "ls-files", "memories").split() == ["memories/1.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_an_entity_dropped_by_hand_against_another_clones_forget_goes_to_a_person(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A forgot memory 1; B's 'update 1 -e' dropped one of its entities on purpose. Only a strip of
    # links to memories B's own side forgot is a forget's cascade; this edit was taken for one
    # and lost, with only "merged both sides of" printed.
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Refunds in cents", "-e", "shop.refunds.amount", "-e", "shop.orders.amount",
               check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "-e", "shop.refunds.amount", check=True)

    synced = invoke_cli("--kb", b, "sync")
    assert synced.returncode == 1
    assert "origin/main forgot memories/1.yaml, which your commits edited" in synced.stderr
    assert git(b, "ls-files", "memories").split() == ["memories/1.yaml"]


def _check_agent_a(invoke_cli: CliRunner, reviewer: Path) -> tuple[int, str]:
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    return checked.returncode, checked.stdout


def _merged_as_advised(invoke_cli: CliRunner, agent: Path, reviewer: Path, checked: str = "1 file") -> str:
    """The check's advice typed on the agent's clone ('git fetch origin && slayer-kb merge
    origin/main', then sync), the check passing after it, then the reviewer's plain git merge of
    the branch into main; what the agent's merge printed."""
    git(agent, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True).stdout
    invoke_cli("--kb", agent, "sync", check=True)
    assert _check_agent_a(invoke_cli, reviewer) == (0, f"Checked {checked}: no problems.\n")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    return merged


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_a_forget_of_a_memory_updated_before_the_squash(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The agent saved memory 2 and updated it before main squash-merged the branch (the squash
    # holds the updated text, not the first the branch added), then forgot it. same_memory
    # compared the first blob each side added, so the forget a plain merge undoes went unnamed.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS,
                                           ("update", "2", "--content", "Amounts are in cents, always"))
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/2.yaml:1: this branch forgot memory 2 after origin/main took it in from this branch (a squash "
        "or rebase merge, under commits of its own): a plain git merge of this branch keeps it, since git's merge "
        "base is older than the memory. Run 'git fetch origin && slayer-kb merge origin/main': it keeps the "
        "memory forgotten\n"
        "1 problem in 1 file (1 file checked)\n"))
    _merged_as_advised(invoke_cli, agent, reviewer)
    assert git(reviewer, "ls-files", "memories").split() == ["memories/1.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_an_edit_of_a_memory_updated_before_the_squash(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # As above, but the agent edited memory 1 again after the squash: the plain merge's add/add stop
    # was called an id collision, and its renumber advice made memory 1 twice (as 1 and 101).
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS,
                                           ("update", "1", "--content", "Refund reasons are free text v2"))
    invoke_cli("--kb", agent, "update", "1", "--content", "Refund reasons v3", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/1.yaml:1: origin/main wrote this memory too since this branch parted from it, in lines git's "
        "merge cannot join: a plain git merge of this branch stops on it. Run 'git fetch origin && slayer-kb merge "
        "origin/main': it merges both sides' revisions of a topic key, and fields each side changed alone, and "
        "stops on two edits of one field (two memories under one id among them) with the steps to merge by hand\n"
        "1 problem in 1 file (1 file checked)\n"))
    _merged_as_advised(invoke_cli, agent, reviewer)
    assert git(reviewer, "ls-files", "memories").split() == ["memories/1.yaml"]
    assert "Refund reasons v3" in (reviewer / "memories" / "1.yaml").read_text()


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_a_link_main_gained_to_a_squash_merged_memory_the_branch_forgot_is_named_and_stripped(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged memory 2 and then saved 101 linking memory:2; the agent forgot 2 on its
    # branch. The check counted only forgets of memories held where the sides parted (2 is
    # younger), and the advised 'slayer-kb merge origin/main' left 101 linking nothing, which the
    # agent's next sync then refused.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", reviewer, "save", "See 2", "-e", "shop.orders.amount", "-e", "memory:2", check=True)
    git(reviewer, "push", "-q", "origin", "main")
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    code, out = _check_agent_a(invoke_cli, reviewer)
    assert (code, out.splitlines()[::2]) == (1, [
        "memories/101.yaml:1: memory 101, which origin/main added or changed since this branch parted from it, "
        "links 'memory:2', which this branch forgot; merged as it is, the link would point at nothing. Run "
        "'git fetch origin && slayer-kb merge origin/main': it strips links to forgotten memories, in one commit",
        "2 problems in 2 files (1 file checked)"])
    assert _merged_as_advised(invoke_cli, agent, reviewer, "2 files") == (
        "Merged origin/main; run slayer-kb sync to push.\n  stripped links to forgotten memories: memory:2 from 101\n")
    assert invoke_cli("--kb", reviewer, "validate").returncode == 0


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
@pytest.mark.parametrize("command", [("merge", "origin/main"), ("rebase", "--rewrite-pushed", "origin/main")])
def test_merge_and_rebase_take_a_forget_against_the_other_sides_strip_of_its_links(
        tmp_path: Path, invoke_cli: CliRunner, command: tuple[str, ...]) -> None:
    # The branch forgot memory 2; main forgot 1, which stripped memory:1 from 2. Sync takes the
    # forget (the strip leaves nothing to keep), but 'slayer-kb merge' and 'rebase', which
    # validate's advice names, stopped on "forgot memories/2.yaml, which origin/main edited".
    _bare, (a, reviewer) = make_team_after(tmp_path, "two-linked-sent-from-a", _two_linked_sent)
    git(reviewer, "pull", "-q", "origin", "main")
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "forget", "2", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", reviewer, "forget", "1", check=True)
    git(reviewer, "push", "-q", "origin", "main")
    git(a, "fetch", "-q", "origin")

    done = invoke_cli("--kb", a, *command)
    assert (done.returncode, done.stderr) == (0, "")
    assert git(a, "ls-files", "memories").split() == []
    assert git(a, "status", "--porcelain") == ""
    assert invoke_cli("--kb", a, "validate").returncode == 0


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_passes_a_memory_main_renamed_that_linked_a_memory_the_branch_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Memory 2 links memory:1; the branch forgot 1 (stripping the link from its 2) while main
    # renamed 2 to kb.grouping. The check read the renamed file as a new one and named its old
    # link as one main gained, though the plain merge follows the rename and validates.
    _bare, (a, reviewer) = make_team_after(tmp_path, "two-linked-sent-from-a", _two_linked_sent)
    git(reviewer, "pull", "-q", "origin", "main")
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", reviewer, "rename", "2", "kb.grouping", check=True)
    git(reviewer, "push", "-q", "origin", "main")

    assert _check_agent_a(invoke_cli, reviewer) == (0, "Checked 1 file: no problems.\n")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    assert invoke_cli("--kb", reviewer, "validate").returncode == 0


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_says_a_forget_main_edited_after_the_squash_stops_the_merge(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main edited memory 2 after squash-merging it; the branch forgot 2. The advice said 'slayer-kb
    # merge' "keeps the memory forgotten"; it stops on the forget against main's edit.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", reviewer, "update", "2", "--content", "Amounts are in cents (reviewed)", check=True)
    git(reviewer, "push", "-q", "origin", "main")
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/2.yaml:1: this branch forgot memory 2 after origin/main took it in from this branch (a squash "
        "or rebase merge, under commits of its own) and edited it: a plain git merge of this branch keeps that "
        "edit without a word, since git's merge base is older than the memory. Run 'git fetch origin && "
        "slayer-kb merge origin/main': it stops on the forget against the edit, with the steps to keep either\n"
        "1 problem in 1 file (1 file checked)\n"))
    git(agent, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", agent, "merge", "origin/main")
    assert (merged.returncode, merged.stderr.startswith(
        "Error: This branch forgot memories/2.yaml, which origin/main edited; the merge stopped")) == (1, True)


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_a_rename_after_the_squash_as_a_rename(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The branch renamed squash-merged memory 2 to kb.cents: named as "this branch forgot memory 2",
    # though the plain merge keeps it under both ids.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", agent, "rename", "2", "kb.cents", check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    assert _check_agent_a(invoke_cli, reviewer) == (1, (
        "memories/2.yaml:1: this branch renamed memory 2 to 'kb.cents' after origin/main took it in from this "
        "branch (a squash or rebase merge, under commits of its own): a plain git merge of this branch keeps it "
        "under both ids, since git's merge base is older than the memory. Run 'git fetch origin && slayer-kb "
        "merge origin/main': it keeps it as kb.cents alone\n"
        "1 problem in 1 file (2 files checked)\n"))
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert git(agent, "ls-files", "memories").split() == ["memories/1.yaml", "memories/kb.cents.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_no_link_in_a_memory_the_branch_forgot_itself(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The branch forgot 1 and 2; main edited 2 to link memory:1. Besides the stop on 2 (a forget
    # against main's edit) the check named main's link from 2 to 1, in a memory the branch forgot.
    _bare, (a, reviewer) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "save", "Amounts in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q", "origin", "main")
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "forget", "2", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", reviewer, "update", "2", "-e", "shop.orders.amount", "-e", "memory:1", check=True)
    git(reviewer, "push", "-q", "origin", "main")

    code, out = _check_agent_a(invoke_cli, reviewer)
    assert (code, [line.split(":")[0] for line in out.splitlines()]) == (1, ["memories/2.yaml", "1 problem in 1 file (0 files checked)"])
    assert "wrote this memory too" in out


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_names_no_topic_key_holder_the_branch_forgot_after_the_squash(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The branch forgot squash-merged topic memory 2 and saved the key anew (memory 3). Besides the
    # forget, the check said 'slayer-kb merge' "folds this memory into 2", which it does not: the
    # merge keeps 2 forgotten and 3 as it is.
    topic = ("--title", "Cache TTL", "--project", "api", "--topic-key", "decision/cache-ttl")
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, (*CENTS, *topic))
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "save", "Cache TTL is 30 s", *topic, check=True)
    invoke_cli("--kb", agent, "sync", check=True)

    code, out = _check_agent_a(invoke_cli, reviewer)
    assert (code, [line.split(":")[0] for line in out.splitlines()]) == (1, ["memories/2.yaml", "1 problem in 1 file (3 files checked)"])
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert git(agent, "ls-files", "memories").split() == ["memories/1.yaml", "memories/3.yaml"]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_validate_against_walks_the_history_once_for_all_squash_merged_memories(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Each squash-merged memory the branch edited or forgot cost two 'git log --full-history'
    # walks, done again for id collisions, and a hash-object each, and the fix's remote was
    # asked up to three times: 30 memories, 165 git processes where 103 had done.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, *(
        ("save", f"Fact number {n}", "-e", "shop.orders.amount") for n in range(6)))
    for n in ("1", "2", "3"):
        invoke_cli("--kb", agent, "update", n, "--content", f"Fact {n} revised", check=True)
    for n in ("4", "5", "6"):
        invoke_cli("--kb", agent, "forget", n, check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")

    with traced_git(tmp_path) as runs:
        checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert checked.stdout.endswith("6 problems in 6 files (3 files checked)\n")
    # Two walks (one a side) for the id collisions' and the plain merge's stops, asked once for
    # both, and two for the forgets: none a memory.
    walks = [run for run in runs("log") if "--raw" in run]
    assert (len(walks), len(runs("hash-object")), len(runs("remote"))) == (4, 1, 1)


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_review_says_a_squash_merged_memory_is_on_main_already(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's memories 1 and 2; the agent then edited 1 and saved 3. The
    # review listed 1, 2 and 3 as added (git's merge base is older than the squash), where the
    # pull request adds 3 and changes 1, and main holds 2 as the branch does.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", agent, "update", "1", "--content", "Refund reasons are free text before 2024", check=True)
    invoke_cli("--kb", agent, "save", "Costs are in cents", "-e", "shop.orders.cost", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    review = invoke_cli("--kb", reviewer, "review", "origin/main", check=True)
    assert review.stdout == (
        "## Knowledge base changes (origin/main...HEAD)\n\n"
        "Memories: 1 added, 1 changed, 0 re-linked, 0 removed, 1 already on origin/main.\n\n"
        "### Added\n\n"
        "- **3**: Costs are in cents (entities: `shop.orders.cost`)\n\n"
        "### Changed\n\n"
        "- **1**: Refund reasons are free text before 2024 (changed: learning, updated_at)\n\n"
        "  ```diff\n  Refund reasons are free text{+ before 2024+}\n  ```\n\n"
        "### Already on origin/main\n\n"
        "- **2**: Amounts are in cents (entities: `shop.orders.amount`; taken in by a squash or rebase merge; "
        "unchanged since)\n")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert data["taken_in"] == [{"id": "2", "label": "Amounts are in cents", "entities": ["shop.orders.amount"],
                                 "taken_in_by": "base", "how": "a squash or rebase merge, under commits of its own"}]
    assert [c["id"] for c in data["added"]] == ["3"]


def test_review_shows_a_squash_merged_memory_main_forgot_renamed_or_edited_since(tmp_path: Path,
                                                                                invoke_cli: CliRunner) -> None:
    # main squash-merged 1 to 5, then forgot 2, renamed 3 and edited 4 and 5; the agent edited 2
    # and 5. The review filed 1, 3 and 4 as already on main, unchanged, and 5 as changed: a merge
    # brings 2 and 3 back (3 twice over), and a plain git merge stops on 4 and 5 (add/add), none
    # of which the reviewer saw.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS, ("save", "Orders have a status", "-e", "shop.orders.status"),
                                           ("save", "Orders have an id", "-e", "shop.orders.id"),
                                           ("save", "Costs are in cents", "-e", "shop.orders.cost"))
    invoke_cli("--kb", reviewer, "forget", "2", check=True)
    invoke_cli("--kb", reviewer, "rename", "3", "kb.status", check=True)
    invoke_cli("--kb", reviewer, "update", "4", "--content", "Orders have a numeric id", check=True)
    invoke_cli("--kb", reviewer, "update", "5", "--description", "when placed", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "update", "2", "--content", "Amounts are in cents, always", check=True)
    invoke_cli("--kb", agent, "update", "5", "--content", "Costs are in whole cents", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    review = invoke_cli("--kb", reviewer, "review", "origin/main", check=True)
    gone = ("origin/main took it in from this branch (a squash or rebase merge, under commits of its own) and has {} "
            "since: merging brings it back")
    forgot, moved = gone.format("forgotten it"), gone.format("renamed it to 'kb.status'")
    edited = ("origin/main has edited it since: a plain git merge stops on it, where 'git fetch origin && slayer-kb "
              "merge origin/main' merges the two")
    assert review.stdout == (
        "## Knowledge base changes (origin/main...HEAD)\n\n"
        "Memories: 2 added, 1 changed, 0 re-linked, 0 removed, 2 already on origin/main.\n\n"
        "### Added\n\n"
        f"- **2**: Amounts are in cents, always (entities: `shop.orders.amount`; {forgot})\n"
        f"- **3**: Orders have a status (entities: `shop.orders.status`; {moved})\n\n"
        "### Changed\n\n"
        f"- **5**: Costs are in whole cents (changed: learning, updated_at; {edited})\n\n"
        "  ```diff\n  Costs are in {+whole +}cents\n  ```\n\n"
        "### Already on origin/main\n\n"
        "- **1**: Refund reasons are free text (entities: `shop.refunds.amount`; taken in by a squash or rebase "
        "merge; unchanged since)\n"
        "- **4**: Orders have an id (entities: `shop.orders.id`; taken in by a squash or rebase merge; unchanged "
        f"since, but {edited})\n")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert [(c["id"], c.get("note")) for c in data["added"]] == [("2", forgot), ("3", moved)]
    assert [(c["id"], c.get("note")) for c in data["taken_in"]] == [("1", None), ("4", edited)]
    assert [(c["id"], c.get("note")) for c in data["changed"]] == [("5", edited)]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_review_does_not_say_a_merge_stops_on_a_memory_the_branch_took_from_main(tmp_path: Path,
                                                                                invoke_cli: CliRunner) -> None:
    # main squash-merged 1 and 2, then edited 2; the agent took main's edit byte for byte. The
    # review said a plain git merge stops on 2, where git merges two equal versions in silence.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", reviewer, "update", "2", "--content", "Amounts are in cents, always", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "fetch", "-q", "origin")
    git(agent, "checkout", "-q", "origin/main", "--", "memories/2.yaml")
    git(agent, "commit", "-q", "-m", "take main's 2")
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert [(c["id"], c.get("note")) for c in data["changed"]] == [("2", None)]
    assert [(c["id"], c.get("note")) for c in data["taken_in"]] == [("1", None)]


@pytest.mark.slow  # one of each kind by default (docs/testing.md, "The crossing suites")
def test_review_lists_a_memory_whose_squash_merged_version_does_not_parse(tmp_path: Path,
                                                                          invoke_cli: CliRunner) -> None:
    # The agent pushed memory 1 broken by hand, main squash-merged it, and the agent then mended
    # it. Compared with the broken version main took in, it was in no list of the review at all.
    _bare, (agent, reviewer) = make_team(tmp_path)
    git(agent, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", agent, *REFUNDS, check=True)
    saved = (agent / "memories" / "1.yaml").read_text(encoding="utf-8")
    (agent / "memories" / "1.yaml").write_text("learning: [Refund reasons\n", encoding="utf-8")
    git(agent, "commit", "-q", "-am", "broken by hand")
    git(agent, "push", "-q", "origin", "agent-a")
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--squash", "origin/agent-a")
    git(reviewer, "commit", "-q", "-m", "Squash agent-a")
    git(reviewer, "push", "-q", "origin", "main")
    (agent / "memories" / "1.yaml").write_text(saved, encoding="utf-8")
    git(agent, "commit", "-q", "-am", "mended")
    git(agent, "push", "-q", "origin", "agent-a")
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert [c["id"] for c in data["added"]] == ["1"]


def test_validate_against_asks_for_the_remote_once_for_every_fix(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The branch forgot 2 and linked 1 while main forgot 1 and linked 2: two problems, each fix
    # naming 'git fetch origin'. The link to what main forgot asked git for the remote again.
    _bare, (agent, reviewer) = make_team(tmp_path)
    for text in ("Refund reasons are free text", "Amounts are in cents"):
        invoke_cli("--kb", reviewer, "save", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "pull", "-q", "origin", "main")
    git(agent, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "save", "See 1", "--id", "kb.a", "-e", "memory:1", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    invoke_cli("--kb", reviewer, "forget", "1", check=True)
    invoke_cli("--kb", reviewer, "save", "See 2", "--id", "kb.m", "-e", "memory:2", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "fetch", "-q", "origin")
    with traced_git(tmp_path) as runs:
        checked = invoke_cli("--kb", agent, "validate", "--against", "origin/main")
    fix = "Run 'git fetch origin && slayer-kb merge origin/main': it strips links to forgotten memories, in one commit"
    assert (checked.returncode, checked.stdout) == (1, (
        "memories/kb.a.yaml:1: memory kb.a links 'memory:1', which origin/main forgot since this branch parted from "
        f"it; merged as it is, the link would point at nothing. {fix}\n"
        "memories/kb.m.yaml:1: memory kb.m, which origin/main added or changed since this branch parted from it, "
        f"links 'memory:2', which this branch forgot; merged as it is, the link would point at nothing. {fix}\n"
        "2 problems in 2 files (2 files checked)\n"))
    assert len(runs("remote")) == 1
