"""What ``validate --against`` and ``review`` tell a reviewer of a branch about memories ``main``
renamed, forgot or whose id it gave to another memory since (``rename``, ``forget``, ``save
--reuse-id``): one the branch links, or one ``main`` took in from the branch by a squash merge,
where git's merge base is older than the memory, so what a merge of the branch does with it is
not what ``git diff`` suggests. Each test is one team (``make_team``, ``squash_merged_branch``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from testing import CliRunner, git, json_of, make_team, next_second, squash_merged_branch

# A crossing suite: run by `-m slow`, which CI runs (docs/testing.md, "The crossing suites").
pytestmark = [pytest.mark.slow, pytest.mark.typed_in_the_kb]

# What the agent saves on its branch before main squash-merges it.
REFUNDS = ("save", "Refund reasons are free text", "-e", "shop.refunds.amount")
CENTS = ("save", "Amounts are in cents", "-e", "shop.orders.amount")


def _on_agent_a(reviewer: Path) -> None:
    """The reviewer's clone at the agent's pushed branch, as CI checks it out."""
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-a")


def _checked_clean_then_merged(invoke_cli: CliRunner, reviewer: Path) -> list[str]:
    """The reviewer's check of the agent's pushed branch, which must pass, then its plain merge
    into main (the merge button): the memory files main then holds."""
    _on_agent_a(reviewer)
    again = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (again.returncode, again.stdout) == (0, "Checked 1 file: no problems.\n")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    return git(reviewer, "ls-files", "memories").split()


def _main_renamed_1_and_forgot_2(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path]:
    """The agent's memories 1 and 2 squash-merged into main, which then renamed 1 to kb.refunds
    and forgot 2: (the agent's clone, the reviewer's)."""
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    invoke_cli("--kb", reviewer, "rename", "1", "kb.refunds", check=True)
    invoke_cli("--kb", reviewer, "forget", "2", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    return agent, reviewer


def test_validate_against_names_a_squash_merged_memory_main_renamed_or_forgot_since(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's memories 1 and 2, then renamed 1 and forgot 2; the agent left
    # both as they were. The review noted both, 'validate --against' said "no problems", and any
    # merge of the branch (slayer-kb merge too) brought 2 back, and 1 beside kb.refunds.
    agent, reviewer = _main_renamed_1_and_forgot_2(tmp_path, invoke_cli)
    invoke_cli("--kb", agent, "save", "Orders ship in boxes", "-e", "shop.orders.status", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    taken = ("origin/main took memory {} in from this branch (a squash or rebase merge, under commits of its own) "
             "and has ")
    renamed = (taken.format(1) + "renamed it to 'kb.refunds' since, and this branch holds it as taken in, under its "
               "old id: a merge of this branch (a plain git merge, or slayer-kb merge) brings it back beside "
               "'kb.refunds', one memory under two ids, since git's merge base is older than the memory. Run 'git rm "
               "-q -- memories/1.yaml && git commit -q -m \"memory: drop 1, renamed to kb.refunds on origin/main\"': "
               "with this branch's copy gone, the merge keeps it as 'kb.refunds' alone")
    forgot = (taken.format(2) + "forgotten it since, and this branch holds it as taken in: a merge of this branch (a "
              "plain git merge, or slayer-kb merge) brings it back, since git's merge base is older than the memory. "
              "Run 'slayer-kb forget 2': it forgets it on this branch too, in one commit")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: {renamed}\nmemories/2.yaml:1: {forgot}\n2 problems in 2 files (3 files checked)\n"))
    data = json_of(invoke_cli("--kb", reviewer, "--json", "validate", "--against", "origin/main"))
    assert [(p["path"], p["message"]) for p in data["problems"]] == [("memories/1.yaml", renamed),
                                                                     ("memories/2.yaml", forgot)]

    # The two fixes, pasted on the agent's clone, make the reviewer's plain merge right.
    subprocess.run(["sh", "-c", renamed.split("Run '")[1].split("': ")[0]], cwd=agent, check=True)
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    assert _checked_clean_then_merged(invoke_cli, reviewer) == ["memories/3.yaml", "memories/kb.refunds.yaml"]


def test_review_says_main_soft_forgot_or_gave_the_id_to_another_memory(tmp_path: Path,
                                                                        invoke_cli: CliRunner) -> None:
    # main squash-merged 1, 2, kb.cents and kb.fees, then soft-forgot 1 and 2, and renamed kb.cents
    # and kb.fees away, giving each id to a new memory (--reuse-id); the agent edited 2 and kb.fees.
    # The review said "origin/main has edited it since ... 'slayer-kb merge origin/main' merges the
    # two" of all four: a forget, and a different memory under the id, which that merge stops on.
    agent, reviewer = squash_merged_branch(
        tmp_path, invoke_cli, REFUNDS, CENTS, ("save", "Costs are in cents", "-e", "shop.orders.cost", "--id", "kb.cents"),
        ("save", "Fees are netted", "-e", "shop.orders.amount", "--id", "kb.fees"))
    for memory_id in ("1", "2"):
        invoke_cli("--kb", reviewer, "forget", "--soft", memory_id, check=True)
    for memory_id, new in (("kb.cents", "kb.money"), ("kb.fees", "kb.netted")):
        invoke_cli("--kb", reviewer, "rename", memory_id, new, check=True)
        invoke_cli("--kb", reviewer, "save", "Another note", "-e", "shop.orders.status", "--id", memory_id,
                   "--reuse-id", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "update", "2", "--content", "Amounts are in whole cents", check=True)
    invoke_cli("--kb", agent, "update", "kb.fees", "--content", "Fees are netted monthly", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    merge = "'git fetch origin && slayer-kb merge origin/main'"
    soft = "origin/main has forgotten it since (a soft forget): a plain git merge stops on it"
    kept, asked = f"{soft}, where {merge} keeps it forgotten", f"{soft}, and so does {merge}, for a person to keep the edit or the forget"
    given = "origin/main has renamed it to '{}' since and given '{}' to another memory: a plain git merge stops on it; "
    removed = given.format("kb.money", "kb.cents") + (
        "remove this branch's copy ('git rm -q -- memories/kb.cents.yaml && git commit -q -m \"memory: drop kb.cents, "
        "renamed to kb.money on origin/main\"'): the merge then takes the rename")
    moved = given.format("kb.netted", "kb.fees") + (
        f"{merge} stops on it too, with the steps that make this branch's change on 'kb.netted'")
    review = invoke_cli("--kb", reviewer, "review", "origin/main", check=True)
    assert review.stdout == (
        "## Knowledge base changes (origin/main...HEAD)\n\n"
        "Memories: 0 added, 2 changed, 0 re-linked, 0 removed, 2 already on origin/main.\n\n"
        "### Changed\n\n"
        f"- **2**: Amounts are in whole cents (changed: learning, updated_at; {asked})\n\n"
        "  ```diff\n  Amounts are in {+whole +}cents\n  ```\n"
        f"- **kb.fees**: Fees are netted monthly (changed: learning, updated_at; {moved})\n\n"
        "  ```diff\n  Fees are netted{+ monthly+}\n  ```\n\n"
        "### Already on origin/main\n\n"
        "- **1**: Refund reasons are free text (entities: `shop.refunds.amount`; taken in by a squash or rebase "
        f"merge; unchanged since, but {kept})\n"
        "- **kb.cents**: Costs are in cents (entities: `shop.orders.cost`; taken in by a squash or rebase merge; "
        f"unchanged since, but {removed})\n")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert [(c["id"], c.get("note")) for c in data["changed"]] == [("2", asked), ("kb.fees", moved)]
    assert [(c["id"], c.get("note")) for c in data["taken_in"]] == [("1", kept), ("kb.cents", removed)]

    # 'validate --against' said of kb.cents and kb.fees that 'slayer-kb merge' merges both sides' revisions.
    checked = json_of(invoke_cli("--kb", reviewer, "--json", "validate", "--against", "origin/main"))
    taken = ("origin/main took memory {0} in from this branch (a squash or rebase merge, under commits of its own) and "
             "has renamed it to '{1}' since, and given '{0}' to another memory: a plain git merge of this branch stops "
             "on it, and so does slayer-kb merge")
    assert [(p["path"], p["message"]) for p in checked["problems"] if p["path"].startswith("memories/kb.")] == [
        ("memories/kb.cents.yaml", taken.format("kb.cents", "kb.money") + (
            ". Run 'git rm -q -- memories/kb.cents.yaml && git commit -q -m \"memory: drop kb.cents, renamed to "
            "kb.money on origin/main\"': with this branch's copy gone, the merge takes origin/main's 'kb.cents' and "
            "'kb.money' as they are")),
        ("memories/kb.fees.yaml", taken.format("kb.fees", "kb.netted") + (
            f", since this branch changed it. Run {merge}: it stops with the steps that make this branch's change on "
            "'kb.netted'"))]


def test_validate_against_names_a_link_to_an_id_main_renamed_and_gave_to_another_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The agent's memory 101 links kb.cents; main then renamed kb.cents to kb.money and gave
    # kb.cents to a new memory (--reuse-id), twice. 'validate --against' and the review said nothing, and
    # the reviewer's plain merge made 101 link the new memory, which it never meant.
    _bare, (agent, reviewer) = make_team(tmp_path)
    invoke_cli("--kb", reviewer, *CENTS, "--id", "kb.cents", check=True)
    invoke_cli("--kb", reviewer, *REFUNDS, "--id", "kb.fees", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "pull", "-q", "origin", "main")
    git(agent, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", agent, "save", "Totals: see kb.cents", "-e", "shop.orders.amount", "-e", "memory:kb.cents",
               "-e", "memory:kb.fees", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    # Given twice: the first memory given kb.cents was renamed to kb.other in turn. The branch's link
    # was named "renamed to 'kb.other'", and the merge pointed it there.
    for renamed_to in ("kb.money", "kb.other"):
        invoke_cli("--kb", reviewer, "rename", "kb.cents", renamed_to, check=True)
        next_second()  # the id given again is another memory by its created_at too (a later second)
        invoke_cli("--kb", reviewer, "save", "Another note", "-e", "shop.orders.status", "--id", "kb.cents",
                   "--reuse-id", check=True)
    # kb.fees renamed to kb.a, forgotten there, kb.a saved again for another note and renamed on:
    # the link was named "renamed to 'kb.z'", that other note. The chain ended at the forget.
    invoke_cli("--kb", reviewer, "rename", "kb.fees", "kb.a", check=True)
    invoke_cli("--kb", reviewer, "forget", "kb.a", check=True)
    invoke_cli("--kb", reviewer, "save", "A third note", "-e", "shop.orders.status", "--id", "kb.a", check=True)
    invoke_cli("--kb", reviewer, "rename", "kb.a", "kb.z", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    _on_agent_a(reviewer)

    forgot = ("memory 101 links 'memory:kb.fees', which origin/main forgot since this branch parted from it; merged as "
              "it is, the link would point at nothing. Run 'git fetch origin && slayer-kb merge origin/main': it strips "
              "links to forgotten memories, in one commit")
    problem = ("memory 101 links 'memory:kb.cents', which origin/main renamed to 'kb.money' since this branch parted "
               "from it, and then gave 'kb.cents' to another memory; merged as it is, the link would name that other "
               "memory. Run 'git fetch origin && slayer-kb merge origin/main': it points links to renamed memories at "
               "their new ids, in one commit")
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (
        1, f"memories/101.yaml:1: {forgot}\nmemories/101.yaml:1: {problem}\n2 problems in 1 file (1 file checked)\n")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "validate", "--against", "origin/main"))
    assert [(p["path"], p["message"]) for p in data["problems"]] == [("memories/101.yaml", forgot),
                                                                      ("memories/101.yaml", problem)]
    reviewed = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert reviewed["problems"] == [f"memories/101.yaml:1: {forgot}", f"memories/101.yaml:1: {problem}"]

    # The fix, typed on the agent's clone, points the link at kb.money (and strips the one to kb.fees)
    # before the reviewer merges.
    git(agent, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert merged.stdout == ("Merged origin/main; run slayer-kb sync to push.\n"
                             "  rewrote links to renamed memories: memory:kb.cents -> memory:kb.money in 101\n"
                             "  stripped links to forgotten memories: memory:kb.fees from 101\n")
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)
    again = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (again.returncode, again.stdout) == (0, "Checked 1 file: no problems.\n")


def test_after_the_printed_fix_for_a_reused_id_the_branch_merges_keeping_mains_memories(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged kb.fees, renamed it to kb.netted and gave kb.fees to a new memory. After
    # the fix 'validate --against' printed (remove the branch's copy) it said "this branch forgot
    # memory kb.fees ... and edited it", and 'slayer-kb merge' stopped offering to 'git rm' main's
    # new kb.fees.
    agent, reviewer = squash_merged_branch(
        tmp_path, invoke_cli, ("save", "Fees are netted", "-e", "shop.orders.amount", "--id", "kb.fees"))
    invoke_cli("--kb", reviewer, "rename", "kb.fees", "kb.netted", check=True)
    invoke_cli("--kb", reviewer, "save", "Another note", "-e", "shop.orders.status", "--id", "kb.fees", "--reuse-id",
               check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    _on_agent_a(reviewer)
    fix = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main").stdout.split("Run '", 1)[1]
    subprocess.run(["sh", "-c", fix.split("': ", 1)[0]], cwd=agent, check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (0, "Checked 0 files: no problems.\n")
    mains = {name: git(reviewer, "show", f"origin/main:memories/{name}") for name in ("kb.fees.yaml", "kb.netted.yaml")}
    git(agent, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", agent, "merge", "origin/main")
    assert (merged.returncode, merged.stdout) == (0, "Merged origin/main; run slayer-kb sync to push.\n")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    for clone in (agent, reviewer):
        assert {name: (clone / "memories" / name).read_text() for name in mains} == mains
        assert git(clone, "ls-files", "memories").split() == ["memories/kb.fees.yaml", "memories/kb.netted.yaml"]


def test_validate_against_names_an_edit_of_a_taken_in_memory_main_renamed_or_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # As the first test, but the agent edited 1 and 2 after main renamed 1 and forgot 2:
    # 'validate --against' said "no problems", and any merge gave 1 beside kb.refunds and brought 2 back.
    agent, reviewer = _main_renamed_1_and_forgot_2(tmp_path, invoke_cli)
    invoke_cli("--kb", agent, "update", "1", "--content", "Refund reasons are free text, always", check=True)
    invoke_cli("--kb", agent, "update", "2", "--content", "Amounts are in whole cents", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    taken = ("origin/main took memory {} in from this branch (a squash or rebase merge, under commits of its own) "
             "and has ")
    drop = "git rm -q -- memories/1.yaml && git commit -q -m \"memory: drop 1, renamed to kb.refunds on origin/main\""
    renamed = (taken.format(1) + "renamed it to 'kb.refunds' since, and this branch has edited it under its old id: a "
               "merge of this branch (a plain git merge, or slayer-kb merge) brings it back beside 'kb.refunds', one "
               "memory under two ids, the edit on the old one alone, since git's merge base is older than the memory. "
               f"Make the edit on 'kb.refunds' instead: run '{drop}', then 'git fetch origin && slayer-kb merge "
               "origin/main', and edit 'kb.refunds'")
    forgot = (taken.format(2) + "forgotten it since, and this branch has edited it: a merge of this branch (a plain "
              "git merge, or slayer-kb merge) brings it back with the edit, since git's merge base is older than the "
              "memory. Run 'slayer-kb forget 2' if it is to stay forgotten (the edit goes with it); merged as it is, "
              "the edit keeps it")
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: {renamed}\nmemories/2.yaml:1: warning: {forgot}\n"
        "1 problem in 1 file (2 files checked), 1 warning\n"))
    data = json_of(invoke_cli("--kb", reviewer, "--json", "validate", "--against", "origin/main"))
    assert [(p["path"], p["message"]) for p in data["problems"]] == [("memories/1.yaml", renamed)]
    assert [(p["path"], p["message"]) for p in data["warnings"]] == [("memories/2.yaml", forgot)]

    # The agent follows both: the edit made again on kb.refunds, 2 forgotten; the merge is then clean.
    subprocess.run(["sh", "-c", drop], cwd=agent, check=True)
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    invoke_cli("--kb", agent, "update", "kb.refunds", "--content", "Refund reasons are free text, always", check=True)
    invoke_cli("--kb", agent, "forget", "2", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    assert _checked_clean_then_merged(invoke_cli, reviewer) == ["memories/kb.refunds.yaml"]
    assert "Refund reasons are free text, always" in (reviewer / "memories" / "kb.refunds.yaml").read_text()


def test_validate_against_says_main_soft_forgot_a_taken_in_memory_and_runs_the_merge_that_keeps_it(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's 1 and 2, then soft-forgot both; the agent left 1 as it was and
    # edited 2. 'validate --against' said of both "origin/main wrote this memory too ... it merges
    # both sides' revisions of a topic key", where main took it in and forgot it since.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    for memory_id in ("1", "2"):
        invoke_cli("--kb", reviewer, "forget", "--soft", memory_id, check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "update", "2", "--content", "Amounts are in whole cents", check=True)
    invoke_cli("--kb", agent, "save", "Orders ship in boxes", "-e", "shop.orders.status", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    said = ("origin/main took memory {} in from this branch (a squash or rebase merge, under commits of its own) and "
            "has forgotten it since (a soft forget), and this branch {}: a plain git merge of this branch stops on it, "
            "since git's merge base is older than the memory. Run 'git fetch origin && slayer-kb merge origin/main': ")
    restore = "git switch main && slayer-kb sync && slayer-kb restore 1 && slayer-kb sync"
    kept = said.format(1, "holds it as taken in") + (
        "it keeps it forgotten on this branch too, and the plain merge then goes through (to keep the memory instead, "
        f"after that merge, on a checkout of main: '{restore}')")
    edited = said.format(2, "has edited it") + "it stops on the forget against the edit, with the steps to keep either"
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: {kept}\nmemories/2.yaml:1: {edited}\n2 problems in 2 files (3 files checked)\n"))
    data = json_of(invoke_cli("--kb", reviewer, "--json", "validate", "--against", "origin/main"))
    assert [(p["path"], p["message"]) for p in data["problems"]] == [("memories/1.yaml", kept),
                                                                     ("memories/2.yaml", edited)]

    # The agent runs the fix: 1 stays forgotten, the merge stops on 2, where the agent keeps the forget.
    git(agent, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", agent, "merge", "origin/main")
    assert (stopped.returncode, git(agent, "status", "--short").splitlines()) == (1, ["M  memories/1.yaml",
                                                                                      "AA memories/2.yaml"])
    git(agent, "checkout", "-q", "--theirs", "memories/2.yaml")
    git(agent, "add", "memories/2.yaml")
    git(agent, "commit", "-q", "--no-edit")
    invoke_cli("--kb", agent, "sync", check=True)
    # Then 1 is restored as the message says, typed as printed in the agent's clone, whose main
    # predates the squash: on main, after the merge (restored before it, the merge takes the restore
    # and a plain merge still stops on 1; on the branch, 1 is not forgotten before the merge).
    typed = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", restore], cwd=agent, env=typed, capture_output=True, check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--ff-only", "origin/main")
    assert _checked_clean_then_merged(invoke_cli, reviewer) == ["memories/1.yaml", "memories/2.yaml",
                                                                "memories/3.yaml"]
    assert ["\ndeleted_at: " in (reviewer / "memories" / f"{memory_id}.yaml").read_text() for memory_id in "12"] == [
        False, True]


def test_validate_against_and_review_say_both_sides_soft_forgot_a_taken_in_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's 1 and 2 and soft-forgot both; so did the agent, after editing 2.
    # 'validate --against' said of both "this branch has edited it ... it stops on the forget against
    # the edit" and review "for a person to keep the edit or the forget", where both forgot them and
    # 'slayer-kb merge' goes through.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS, CENTS)
    for memory_id in ("1", "2"):
        invoke_cli("--kb", reviewer, "forget", "--soft", memory_id, check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    # Each forget's own time: the two may fall in two seconds on a loaded machine.
    forgot = [yaml.safe_load((reviewer / "memories" / f"{memory_id}.yaml").read_text())["deleted_at"]
              for memory_id in "12"]
    time.sleep(1)  # the agent's forget of 1 in another second: else both files are one, and git merges them
    invoke_cli("--kb", agent, "update", "2", "--content", "Amounts are in whole cents", check=True)
    for memory_id in ("1", "2"):
        invoke_cli("--kb", agent, "forget", "--soft", memory_id, check=True)
    invoke_cli("--kb", agent, "save", "Orders ship in boxes", "-e", "shop.orders.status", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    merge = "git fetch origin && slayer-kb merge origin/main"
    said = ("origin/main took memory {} in from this branch (a squash or rebase merge, under commits of its own) and "
            "has forgotten it since (a soft forget), and this branch has forgotten it too: a plain git merge of this "
            f"branch stops on it, since git's merge base is older than the memory. Run '{merge}': it keeps it "
            "forgotten, from the first of the two forgets, and the plain merge then goes through")
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/1.yaml:1: {said.format(1)}\nmemories/2.yaml:1: {said.format(2)}\n"
        "2 problems in 2 files (3 files checked)\n"))
    both = (f"origin/main has forgotten it since (a soft forget), and so has this branch: a plain git merge stops on "
            f"it, where '{merge}' keeps it forgotten")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    # Soft-deleted on the branch, so listed as removed, with what a merge does to it.
    assert [(c["id"], c.get("note")) for c in data["removed"]] == [("1", both), ("2", both)]

    # The merge goes through as said: both stay forgotten since main's forget, 2 with the agent's edit.
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)
    again = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (again.returncode, again.stdout) == (0, "Checked 2 files: no problems.\n")  # 2's edit, and 3
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    merged = [yaml.safe_load((reviewer / "memories" / f"{memory_id}.yaml").read_text()) for memory_id in "12"]
    assert [(m["learning"], m["deleted_at"]) for m in merged] == [("Refund reasons are free text", forgot[0]),
                                                                  ("Amounts are in whole cents", forgot[1])]


def test_validate_against_says_the_branch_took_in_from_main_what_main_forgot_since(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The agent cherry-picked main's saves of three memories; main then forgot two, one soft, one
    # not, and the agent the third. 'validate --against' said "origin/main took memory N in from
    # this branch", the other way round: the check matches a memory both sides added as one
    # whichever side added it first.
    _bare, (agent, reviewer) = make_team(tmp_path)
    git(agent, "switch", "-q", "-c", "agent-a")
    saved = [json_of(invoke_cli("--kb", reviewer, "--json", *command, check=True))["memory_id"]
             for command in (REFUNDS, CENTS, ("save", "Fees are netted monthly", "-e", "shop.orders.cost"))]
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "fetch", "-q", "origin")
    time.sleep(1)  # the cherry-picks a second after main's saves: the later side took the memory in
    picks = git(agent, "log", "--format=%H", "--reverse", "--grep=^memory: save", "origin/main").split()
    git(agent, "cherry-pick", *picks)
    invoke_cli("--kb", agent, "save", "Orders ship in boxes", "-e", "shop.orders.status", check=True)
    invoke_cli("--kb", agent, "forget", saved[2], check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    invoke_cli("--kb", reviewer, "forget", "--soft", saved[0], check=True)
    invoke_cli("--kb", reviewer, "forget", saved[1], check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    _on_agent_a(reviewer)

    took = ("this branch took memory {} in from origin/main (a cherry-pick, a squash or a copy, under commits of its "
            "own), and origin/main has forgotten it since")
    soft = took.format(saved[0]) + (
        " (a soft forget), and this branch holds it as taken in: a plain git merge of this branch stops on it, since "
        "git's merge base is older than the memory. Run 'git fetch origin && slayer-kb merge origin/main': it keeps "
        "it forgotten on this branch too, and the plain merge then goes through (to keep the memory instead, after "
        f"that merge, on a checkout of main: 'git switch main && slayer-kb sync && slayer-kb restore {saved[0]} && "
        "slayer-kb sync')")
    hard = took.format(saved[1]) + (
        ", and this branch holds it as taken in: a merge of this branch (a plain git merge, or slayer-kb merge) "
        "brings it back, since git's merge base is older than the memory. Run 'slayer-kb forget "
        f"{saved[1]}': it forgets it on this branch too, in one commit")
    kept = (f"this branch forgot memory {saved[2]} after taking it in from origin/main (a cherry-pick, a squash or a "
            "copy, under commits of its own): a plain git merge of this branch keeps it, since git's merge base is "
            "older than the memory. Run 'git fetch origin && slayer-kb merge origin/main': it keeps the memory "
            "forgotten")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "validate", "--against", "origin/main"))
    assert sorted((p["path"], p["message"]) for p in data["problems"] if p["path"].startswith("memories/")) == [
        (f"memories/{saved[0]}.yaml", soft), (f"memories/{saved[1]}.yaml", hard), (f"memories/{saved[2]}.yaml", kept)]

    # review said "origin/main took it in by a squash or rebase merge" of both, against validate.
    review = invoke_cli("--kb", reviewer, "review", "origin/main", check=True).stdout
    from_main = "taken in from origin/main (a cherry-pick, a squash or a copy, under commits of its own)"
    assert [line for line in review.splitlines() if line.startswith(("- **1**", "- **2**"))] == [
        "- **2**: Amounts are in cents (entities: `shop.orders.amount`; this branch took it in from origin/main (a "
        "cherry-pick, a squash or a copy, under commits of its own), and origin/main has forgotten it since: merging "
        "brings it back)",
        f"- **1**: Refund reasons are free text (entities: `shop.refunds.amount`; {from_main}; unchanged since, but "
        "origin/main has forgotten it since (a soft forget): a plain git merge stops on it, where 'git fetch origin "
        "&& slayer-kb merge origin/main' keeps it forgotten)"]
    # --json did not say which side took it in: here this branch, from origin/main.
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert [(c["id"], c["taken_in_by"], c["how"]) for c in data["taken_in"]] == [
        ("1", "head", "a cherry-pick, a squash or a copy, under commits of its own")]


def test_validate_against_and_review_say_the_merge_stops_where_both_edited_and_soft_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # main squash-merged the agent's 1, edited it and soft-forgot it; the agent edited it another
    # way and soft-forgot it too. Both said the merge keeps it forgotten and goes through, where
    # 'slayer-kb merge' stops on the two edits.
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS)
    invoke_cli("--kb", reviewer, "update", "1", "--content", "Refunds count on the settlement day the bank reports",
               check=True)
    invoke_cli("--kb", reviewer, "forget", "--soft", "1", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    time.sleep(1)  # the agent's forget in another second, as another clone's
    invoke_cli("--kb", agent, "update", "1", "--content", "Refunds count on the day the support ticket closes",
               check=True)
    invoke_cli("--kb", agent, "forget", "--soft", "1", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)

    merge = "git fetch origin && slayer-kb merge origin/main"
    said = ("origin/main took memory 1 in from this branch (a squash or rebase merge, under commits of its own) and "
            "has forgotten it since (a soft forget), and this branch has forgotten it too, the two having edited it in "
            "two ways: a plain git merge of this branch stops on it, since git's merge base is older than the memory. "
            f"Run '{merge}': it stops on the two edits too, with the steps to keep what both sides meant")
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout) == (1, f"memories/1.yaml:1: {said}\n1 problem in 1 file (1 file checked)\n")
    data = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert [(c["id"], c.get("note")) for c in data["removed"]] == [("1", (
        "origin/main has forgotten it since (a soft forget), and so has this branch, the two having edited it in two "
        f"ways: a plain git merge stops on it, and so does '{merge}', for a person to keep what both sides meant"))]

    # The merge stops as said, with the steps to keep what both sides meant.
    git(agent, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", agent, "merge", "origin/main")
    assert (stopped.returncode, git(agent, "status", "--short").splitlines()) == (1, ["AA memories/1.yaml"])
    assert "To merge by hand: edit memories/1.yaml to keep what both sides meant; git add memories/1.yaml" in (
        stopped.stderr)


def _main_soft_forgot_1_the_agent_restored_it(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path]:
    """main squash-merged the agent's 1 and soft-forgot it, tagged v1; the agent soft-forgot it and
    restored it, which changed its updated_at alone: (agent, reviewer at the agent's branch)."""
    agent, reviewer = squash_merged_branch(tmp_path, invoke_cli, REFUNDS)
    invoke_cli("--kb", reviewer, "forget", "--soft", "1", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(reviewer, "tag", "v1")
    for step in ("forget", "restore"):
        invoke_cli("--kb", agent, *(("forget", "--soft") if step == "forget" else ("restore",)), "1", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)
    return agent, reviewer


def test_validate_against_names_what_the_branch_changed_of_a_memory_main_soft_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The branch's copy differed from the one taken in by updated_at alone (a forget and a restore):
    # 'validate --against' said "this branch has changed only its links".
    agent, reviewer = _main_soft_forgot_1_the_agent_restored_it(tmp_path, invoke_cli)
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (checked.returncode, checked.stdout.split(": a plain git merge")[0]) == (1, (
        "memories/1.yaml:1: origin/main took memory 1 in from this branch (a squash or rebase merge, under commits of "
        "its own) and has forgotten it since (a soft forget), and this branch has changed none of what it says, only "
        "updated_at"))
    assert "it keeps it forgotten on this branch too, and the plain merge then goes through" in checked.stdout

    # So it does.
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    _on_agent_a(reviewer)
    again = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main")
    assert (again.returncode, again.stdout) == (0, "Checked 1 file: no problems.\n")


def test_validate_against_a_tag_says_where_to_restore_a_memory_it_soft_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Against a tag, the fix read "on a checkout of the branch v1 is: 'slayer-kb restore 1 &&
    # slayer-kb sync'": no branch is a tag, and the first sync, which brings the merge, was missing.
    agent, reviewer = _main_soft_forgot_1_the_agent_restored_it(tmp_path, invoke_cli)
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "v1")
    restore = "slayer-kb sync && slayer-kb restore 1 && slayer-kb sync"
    assert (checked.returncode, checked.stdout.split("Run '")[1]) == (1, (
        "slayer-kb merge v1': it keeps it forgotten on this branch too, and the plain merge then goes through (to "
        f"keep the memory instead, after that merge, on a checkout of the branch you merge into: '{restore}')\n"
        "1 problem in 1 file (1 file checked)\n"))

    # Typed as printed on main after the agent's merge and the reviewer's, it brings the memory back.
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge agent-a")
    git(reviewer, "push", "-q", "origin", "main")
    git(agent, "switch", "-q", "main")
    typed = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", restore], cwd=agent, env=typed, capture_output=True, check=True)
    assert "\ndeleted_at: " not in git(agent, "show", "origin/main:memories/1.yaml")

