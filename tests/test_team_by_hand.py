"""The team workflow of docs/teams.md typed as a new user would: clones of one bare remote,
every ``slayer-kb`` command run in this process (``invoke_cli``: what a process prints, as
test_in_process.py checks), git as git, and the steps an error gives followed as written."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

from slayer_kb.ops import observations, plainmerge, rebase
from slayer_kb.store.leases import BLOCK
from testing import (
    CliRunner,
    default_first,
    git,
    in_process_runner,
    in_the_kb,
    json_of,
    lose_races,
    make_team,
    make_team_after,
    traced_git,
)

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli): the steps an
# error gives name the KB's files from there (test_steps_typed_elsewhere_name_the_kb checks them
# from elsewhere).
pytestmark = pytest.mark.typed_in_the_kb


def _held_by_both(kbs: list[Path]) -> None:
    """Clone a saves memory 1 and syncs; clone b syncs it in."""
    a, b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)


def conflicting_forget(tmp_path: Path, invoke_cli: CliRunner, forgets: str,
                       soft: bool = False, by_hand: bool = False) -> tuple[Path, Path, str]:
    """Clone a saves memory 1 and both clones hold it; then one clone edits it and syncs first
    while the clone named ``forgets`` forgets it (``soft``: ``forget --soft``). ``by_hand``: the
    edit is a person's, a description added with plain git (``updated_at`` left as it was).
    Returns (the clone that synced first, the clone whose sync stopped, its sync's error message).
    The save and both syncs are made once a process and copied (``make_team_after``)."""
    _bare, (a, b) = make_team_after(tmp_path / f"{forgets}{soft:d}{by_hand:d}", "refunds-held-by-both", _held_by_both)
    forgetter, editor = (a, b) if forgets == "a" else (b, a)
    first, second = (editor, forgetter) if forgets == "a" else (forgetter, editor)
    if by_hand:
        path = editor / "memories" / "1.yaml"
        path.write_text(path.read_text().replace("entities:", "description: Free text before 2024\nentities:"))
        git(editor, "commit", "-qam", "refunds: say since when")
    else:
        invoke_cli("--kb", editor, "update", "1", "--content", "Refund reasons: free text, grouped by hand", check=True)
    invoke_cli("--kb", forgetter, "forget", *(["--soft"] if soft else []), "1", check=True)
    invoke_cli("--kb", first, "sync", check=True)
    stopped = invoke_cli("--kb", second, "--json", "sync")
    assert stopped.returncode == 1
    return first, second, json_of(stopped)["error"]["message"]


def follow(here: Path, invoke_cli: CliRunner, message: str, resolve: dict[str, str],
           stops: list[str]) -> None:
    """Run the steps of ``message`` as written from the folder ``here`` (where the command that
    gave them ran), up to the sync: ``cd DIR``, ``git ...`` and ``slayer-kb ...`` (the words
    before ' to keep' or ' (' are the command; slayer-kb finds the KB from the folder), an 'edit
    FILE' step writing ``resolve[FILE]``. A slayer-kb step that stops gives a message of its own,
    whose steps are followed instead; ``stops`` gets each stop's message."""
    for step in message.split(" To merge by hand: ", 1)[1].removesuffix(".").split("; "):
        command = step.split(" (")[0].split(" to keep")[0]
        if command.startswith("cd "):
            here = here / command.split(" ", 1)[1]
        elif command.startswith("edit "):
            (here / command.split()[1]).write_text(resolve[command.split()[1]])
        elif command.startswith("git "):
            git(here, *command.split()[1:])
        elif command not in ("slayer-kb sync", "slayer-kb --kb . sync"):
            proc = invoke_cli("--json", *command.split()[1:], cwd=here)
            if proc.returncode:
                stops.append(json_of(proc)["error"]["message"])
                return follow(here, invoke_cli, stops[-1], resolve, stops)
    return None


def test_a_forget_against_an_edit_names_the_forget_and_its_two_ways_out(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _editor, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="a")
    assert message == (
        "Your commits forgot memories/1.yaml, which origin/main edited; the repository is back as it was. "
        "To merge by hand: git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); git rm "
        "memories/1.yaml to keep it forgotten (or git add memories/1.yaml to keep origin/main's edit); slayer-kb "
        "validate; slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync."
    )
    # The steps work as written, keeping the forget.
    stops: list[str] = []
    follow(here, invoke_cli, message, {}, stops)
    assert len(stops) == 1
    assert "pushed" in invoke_cli("--kb", here, "sync", check=True).stdout
    assert not (here / "memories" / "1.yaml").exists()
    assert git(here, "ls-tree", "--name-only", "origin/main", "memories/") == ""


def test_an_edit_against_a_forget_upstream_names_the_forget(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _forgetter, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="b")
    assert message == (
        "origin/main forgot memories/1.yaml, which your commits edited; the repository is back as it was. "
        "To merge by hand: git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); git add "
        "memories/1.yaml to keep your edit (or git rm memories/1.yaml to let it go); slayer-kb validate; "
        "slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync."
    )
    # The steps work as written, keeping the edit.
    stops: list[str] = []
    follow(here, invoke_cli, message, {}, stops)
    assert len(stops) == 1
    invoke_cli("--kb", here, "sync", check=True)
    shown = json_of(invoke_cli("--kb", here, "--json", "get", "1", check=True))
    assert shown["learning"] == "Refund reasons: free text, grouped by hand"
    assert "memories/1.yaml" in git(here, "ls-tree", "--name-only", "origin/main", "memories/")


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_soft_forget_against_an_edit_says_which_side_forgot_and_the_two_ways_out(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """``forget --soft`` (MCP's mem_delete) keeps the file, so git sees two edits: the message
    said "both edited", and its step (edit the file to keep what both meant) hid the choice."""
    tail = ("slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); "
            "slayer-kb sync.")
    start = ("the repository is back as it was. To merge by hand: git fetch origin; slayer-kb rebase origin/main "
             "(it stops on the conflict); ")
    _editor, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="a", soft=True)
    assert message == (
        "Your commits forgot memories/1.yaml (forget --soft), which origin/main edited; " + start
        + "git checkout --theirs memories/1.yaml to keep it forgotten (or git checkout --ours memories/1.yaml to "
        "keep origin/main's edit); git add memories/1.yaml; " + tail)
    stops: list[str] = []
    follow(here, invoke_cli, message, {}, stops)
    assert len(stops) == 1 and "(forget --soft)" in stops[0]
    invoke_cli("--kb", here, "sync", check=True)
    shown = json_of(invoke_cli("--kb", here, "--json", "get", "1", "--deleted", check=True))
    assert (shown["learning"], shown["deleted_at"] is not None) == ("Refund reasons are free text", True)

    _forgetter, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="b", soft=True)
    assert message == (
        "origin/main forgot memories/1.yaml (forget --soft), which your commits edited; " + start
        + "git checkout --theirs memories/1.yaml to keep your edit (or git checkout --ours memories/1.yaml to "
        "let it stay forgotten); git add memories/1.yaml; " + tail)
    follow(here, invoke_cli, message, {}, stops)
    invoke_cli("--kb", here, "sync", check=True)
    shown = json_of(invoke_cli("--kb", here, "--json", "get", "1", check=True))
    assert (shown["learning"], shown.get("deleted_at")) == ("Refund reasons: free text, grouped by hand", None)


def test_a_soft_forget_against_an_edit_stops_wherever_the_two_changes_lie(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """An edit that leaves ``updated_at`` as it was (a person's, with plain git; an ``update`` in
    the same clock second as the memory's last write) lies lines apart from a soft forget's
    ``deleted_at``: git's line merge took both without a stop, and sync said only "merged both
    sides of", the edited memory forgotten, where an edit a line nearer stopped for a person."""
    for forgets, forgot, edited in (("a", "Your commits", "origin/main"), ("b", "origin/main", "your commits")):
        first, here, message = conflicting_forget(tmp_path, invoke_cli, forgets, soft=True, by_hand=True)
        assert message.startswith(f"{forgot} forgot memories/1.yaml (forget --soft), which {edited} edited; "
                                  "the repository is back as it was. To merge by hand: ")
        assert git(here, "status", "--porcelain") == ""
        assert git(here, "rev-parse", "origin/main") == git(first, "rev-parse", "HEAD")  # nothing pushed
    # Its step stops the rebase with each side's version between the markers (git's would have none).
    assert invoke_cli("rebase", "origin/main", cwd=here).returncode == 1
    forgotten, edited = (here / "memories" / "1.yaml").read_text().split("=======\n")
    assert forgotten.startswith("learning: Refund reasons are free text\n<<<<<<< origin/main\nentities:\n")
    assert "\ndeleted_at: " in forgotten and "description" not in forgotten
    assert edited.startswith("description: Free text before 2024\nentities:\n") and "deleted_at" not in edited
    assert edited.endswith(">>>>>>> your commits\n")


def test_two_forgets_of_one_memory_or_of_two_it_links_need_no_person(tmp_path: Path,
                                                                         invoke_cli: CliRunner) -> None:
    """Memory 3 links 1 and 2; one clone forgets 1, another 2, each forget stripping its link from
    3: adjacent lines of its entity list, so git's line merge stopped the second sync on "both
    edited memories/3.yaml", a conflict no one made. Merged field by field, 3 links neither."""
    _bare, (a, b) = make_team(tmp_path)
    for text, entities in (("Tax is VAT-inclusive", ["-e", "shop.orders.amount"]),
                           ("Shipping fees are in EUR", ["-e", "shop.orders.amount"]),
                           ("Order totals: see tax and shipping", ["-e", "shop.orders.status", "-e", "memory:1",
                                                                   "-e", "memory:2"])):
        invoke_cli("--kb", a, "save", text, *entities, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "2", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "forget", "1", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout == ("Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
                             "  merged both sides of: memories/3.yaml\n")
    assert json_of(invoke_cli("--kb", b, "--json", "get", "3", check=True))["entities"] == ["shop.orders.status"]
    assert git(b, "ls-tree", "--name-only", "origin/main", "memories/") == "memories/3.yaml\n"
    assert git(b, "status", "--porcelain") == ""
    # A soft forget (MCP's mem_delete) against a forget: both forgot it, so it goes ("Your commits
    # forgot memories/3.yaml, which origin/main edited" stopped the sync).
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", a, "forget", "--soft", "3", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "forget", "3", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 1 pushed.\n  merged both sides of: memories/3.yaml\n")
    assert git(b, "ls-tree", "--name-only", "origin/main", "memories/") == ""


def _two_held_by_both(kbs: list[Path]) -> None:
    """Clone a saves memories 1 (the tax rule) and 2 and syncs; clone b syncs them in (made once a
    process and copied: ``make_team_after``)."""
    a, b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    for text in ("Tax is VAT-inclusive", "Shipping fees are in EUR"):
        invoke_cli("--kb", a, "save", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)


def test_a_link_to_a_memory_the_other_clone_forgot_is_stripped_as_the_forget_strips(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A forget strips its links only from the memories its clone holds. A new link to it from the
    other clone stopped that clone's sync ("do not validate ... 'memory:1' refers to a memory that
    does not exist"), or, when the link was pushed first, the forgetting clone's sync pushed a main
    that did not validate. Both ways the sync strips the link, in one commit, and says so."""
    _bare, (a, b) = make_team_after(tmp_path, "two-held-by-both", _two_held_by_both)
    # Its forget is on the remote first.
    invoke_cli("--kb", a, "save", "Totals: see the tax rule", "-e", "shop.orders.status", "-e", "memory:1", check=True)
    invoke_cli("--kb", b, "forget", "1", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 2 pushed.\n"
        "  stripped links to forgotten memories: memory:1 from 3\n")
    assert git(a, "log", "-1", "--format=%s") == "memory: strip links to forgotten 1 from 3\n"
    # The link is on the remote first.
    invoke_cli("--kb", a, "save", "Fees: see the shipping rule", "-e", "shop.orders.status", "-e", "memory:2", check=True)
    invoke_cli("--kb", b, "forget", "2", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    synced = json_of(invoke_cli("--kb", b, "--json", "sync", check=True))
    assert (synced["action"], synced["unlinked"]) == ("rebased", {"4": ["2"]})
    for memory_id in ("3", "4"):
        assert json_of(invoke_cli("--kb", b, "--json", "get", memory_id, check=True))["entities"] == [
            "shop.orders.status"]
    assert invoke_cli("--kb", b, "validate", check=True).stdout == "Checked 2 files: no problems.\n"


def _holding_memory_1(kbs: list[Path]) -> None:
    """Clone a saves memory 1, the tax rule, and syncs; clone b syncs it in."""
    a, b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    invoke_cli("--kb", a, "save", "Tax is VAT-inclusive", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)


def _team_holding_memory_1(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A team (the bare remote, clones a and b) whose memory 1, the tax rule, a saved and both
    hold: made once a process and copied (``make_team_after``)."""
    bare, (a, b) = make_team_after(tmp_path, "tax-rule-held-by-both", _holding_memory_1)
    return bare, a, b


def test_the_links_sync_strips_keep_the_marks_of_git_s_index(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """sync checked for uncommitted work as git status does, marks left alone: a change a mark hid
    went into the commit stripping links to a forgotten memory, a skip-worktree memory it stripped
    was staged as deleted, and an
    assume-unchanged one kept the link in git's index, which the person's next ``git commit`` put
    back. git's index holds the commit, each file its marks."""
    _bare, a, b = _team_holding_memory_1(tmp_path)
    for text in ("Totals: see the tax rule", "Refunds: see the tax rule"):
        invoke_cli("--kb", b, "save", text, "-e", "shop.orders.status", "-e", "memory:1", check=True)
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    skipped, hidden = sorted(p.name for p in (b / "memories").glob("*.yaml") if p.name != "1.yaml")
    git(b, "update-index", "--skip-worktree", f"memories/{skipped}")
    git(b, "update-index", "--assume-unchanged", f"memories/{hidden}")
    # A change a mark hides went into the commit, and was pushed: refused, the clone as it was.
    committed = (b / "memories" / hidden).read_text()
    (b / "memories" / hidden).write_text(committed.replace("Refunds: see", "Refunds (WIP): see"))
    before = git(b, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", b, "sync")
    assert (refused.returncode, refused.stderr) == (1, (
        f"Error: memories/{hidden} is marked assume-unchanged in git's index, so git shows none of its changes, and "
        "this command would rewrite it: slayer-kb never commits work you have not committed, and git's index would "
        "not take the commit, so nothing was done. Clear the mark (git update-index --no-assume-unchanged -- "
        f"memories/{hidden}), see what git status shows, then retry.\n"))
    assert git(b, "rev-parse", "HEAD") == before and "WIP" in (b / "memories" / hidden).read_text()
    (b / "memories" / hidden).write_text(committed)
    synced = json_of(invoke_cli("--kb", b, "--json", "sync", check=True))
    assert synced["unlinked"] == {Path(skipped).stem: ["1"], Path(hidden).stem: ["1"]}
    assert "memory:1" not in git(b, "show", f"HEAD:memories/{skipped}") + git(b, "show", f"HEAD:memories/{hidden}")
    assert git(b, "ls-files", "-v", "memories/") == f"S memories/{skipped}\nh memories/{hidden}\n"
    assert git(b, "status", "--porcelain") == git(b, "diff", "--cached", "--name-status", "HEAD") == ""


def _marked_refusal(path: str, mark: str) -> str:
    return (f"Error: {path} is marked {mark} in git's index, so git shows none of its changes, and this command "
            "would rewrite it: slayer-kb never commits work you have not committed, and git's index would not take "
            f"the commit, so nothing was done. Clear the mark (git update-index --no-{mark} -- {path}), see what git "
            "status shows, then retry.")


def _as_git_has_it(root: Path) -> tuple[str, str, str, str]:
    """HEAD, git status, git's index marks and the branch's history: what a refusal that did
    nothing leaves as it found it."""
    return (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"), git(root, "ls-files", "-v"),
            git(root, "log", "--format=%H %s", "-5"))


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_merge_or_rebase_whose_fixes_a_mark_refuses_puts_the_branch_back(tmp_path: Path,
                                                                          invoke_cli: CliRunner) -> None:
    """Memory 2 links 1, which main deleted by hand, and git's index hides an edit of 2
    (assume-unchanged): the strip of that link after git's merge or rebase would rewrite 2 and is
    refused, and the branch is put back where it was, so that "nothing was done" holds (before,
    merge and rebase refused such a mark up front, on any memory, a sparse checkout's too)."""
    _bare, (a, b) = make_team(tmp_path)
    for text, entity in (("Tax is VAT-inclusive", "shop.orders.amount"), ("Refunds: see the tax rule", "memory:1"),
                         ("Shipping fees are in EUR", "shop.orders.amount")):
        invoke_cli("--kb", a, "save", text, "-e", "shop.orders.status", "-e", entity, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "rm", "-q", "memories/1.yaml")
    git(a, "commit", "-q", "-m", "tax rule dropped by hand")
    invoke_cli("--kb", a, "update", "3", "--content", "Shipping fees are in EUR (a)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "switch", "-q", "-c", "quiet")
    invoke_cli("--kb", b, "save", "Regions are ISO codes", "-e", "shop.regions.name", check=True)
    git(b, "switch", "-q", "main")
    invoke_cli("--kb", b, "update", "3", "--content", "Shipping fees are in EUR (b)", check=True)
    git(b, "fetch", "-q", "origin")
    hidden = b / "memories" / "2.yaml"
    git(b, "update-index", "--assume-unchanged", "memories/2.yaml")
    hidden.write_text(hidden.read_text().replace("Refunds: see", "Refunds (WIP): see"))
    refusal = _marked_refusal("memories/2.yaml", "assume-unchanged")
    git(b, "switch", "-q", "quiet")
    for command in ("merge", "rebase"):
        was = _as_git_has_it(b)
        refused = invoke_cli("--kb", b, command, "origin/main")
        assert (refused.returncode, refused.stderr) == (1, refusal + "\n"), command
        assert (_as_git_has_it(b), "WIP" in hidden.read_text()) == (was, True), command
    assert json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))["id"] == "1"  # the index is back too
    git(b, "switch", "-q", "main")
    was = _as_git_has_it(b)
    assert invoke_cli("--kb", b, "rebase", "origin/main").returncode == 1  # on the two edits of 3
    (b / "memories/3.yaml").write_text(git(b, "show", "origin/main:memories/3.yaml").replace("(a)", "(a and b)"))
    git(b, "add", "memories/3.yaml")
    refused = invoke_cli("--kb", b, "rebase", "--continue")
    rebased = refused.stderr.split("rebased commits are at ", 1)[-1][:40]
    assert (refused.returncode, refused.stderr) == (1, (
        f"{refusal} The rebase in progress, which git had finished, is put back with it: the branch is where it was "
        f"before the rebase began, and the rebased commits are at {rebased} (git reset --keep {rebased} takes them "
        "back).\n"))
    assert (_as_git_has_it(b), "WIP" in hidden.read_text()) == (was, True)
    assert git(b, "show", f"{rebased}:memories/3.yaml").startswith("learning: Shipping fees are in EUR (a and b)\n")
    git(b, "update-index", "--no-assume-unchanged", "--", "memories/2.yaml")
    git(b, "checkout", "--", "memories/2.yaml")
    git(b, "switch", "-q", "quiet")
    merged = json_of(invoke_cli("--kb", b, "--json", "merge", "origin/main", check=True))
    assert merged["unlinked"] == {"2": ["1"]}


def _links_to_one_main_deleted_by_hand(kbs: list[Path]) -> None:
    """Memory 2 links 1; A deletes 1 by hand (git rm) and syncs; B saves a memory of its own and
    fetches: merging origin/main into B strips 2's link."""
    a, b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    for text, entity in (("Tax is VAT-inclusive", "shop.orders.amount"), ("Refunds: see the tax rule", "memory:1")):
        invoke_cli("--kb", a, "save", text, "-e", "shop.orders.status", "-e", entity, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "rm", "-q", "memories/1.yaml")
    git(a, "commit", "-q", "-m", "tax rule dropped by hand")
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "Regions are ISO codes", "-e", "shop.regions.name", check=True)
    git(b, "fetch", "-q", "origin")


def _two_links_one_main_deleted_by_hand(tmp_path: Path) -> tuple[Path, Path]:
    """Clones a and b after ``_links_to_one_main_deleted_by_hand``, made once a process and
    copied (``make_team_after``)."""
    _bare, (a, b) = make_team_after(tmp_path, "links-to-one-deleted-by-hand", _links_to_one_main_deleted_by_hand)
    return a, b


def test_a_merge_whose_fix_an_attribute_refuses_puts_the_branch_back(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Memory 2 links 1, which main deleted by hand, and git's attributes give 2 a filter: the strip
    of that link is refused with StoreError, which the put-back did not catch (only ConflictError),
    so git's merge commit stayed while the message said "nothing was saved"."""
    a, b = _two_links_one_main_deleted_by_hand(tmp_path)
    git(b, "config", "filter.same.clean", "cat")
    (b / ".git" / "info").mkdir(exist_ok=True)
    (b / ".git" / "info" / "attributes").write_text("memories/2.yaml filter=same\n")
    was = _as_git_has_it(b)
    refused = invoke_cli("--kb", b, "merge", "origin/main")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: Refusing to write memories/2.yaml: git's attributes give it filter=same, so git would read the file "
        "slayer-kb writes as other bytes and show it changed. Take that attribute off the knowledge base's memories/ "
        "and sessions/ (in .gitattributes, then commit), then retry; nothing was saved.\n"))
    assert _as_git_has_it(b) == was


def test_a_rebase_whose_fixes_a_mark_refuses_keeps_a_save_made_after_its_git_rebase(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """rebase's git runs under one lock, its fixes under the next: a save in between committed on
    the rebased branch, and the refused strip's put-back (git reset --keep) dropped that save's
    commit. The branch stays, the save on it, and the refusal says why."""
    a, b = _two_links_one_main_deleted_by_hand(tmp_path)
    hidden = b / "memories" / "2.yaml"
    git(b, "update-index", "--assume-unchanged", "memories/2.yaml")
    hidden.write_text(hidden.read_text().replace("Refunds: see", "Refunds (WIP): see"))
    between = rebase.session_projects  # called once the rebase's lock is let go, before its fixes

    def save_between(*args: Any, **kwargs: Any) -> Any:
        invoke_cli("--kb", b, "save", "A save in between", "-e", "shop.orders.amount", check=True)
        return between(*args, **kwargs)

    monkeypatch.setattr(rebase, "session_projects", save_between)
    refused = invoke_cli("--kb", b, "rebase", "origin/main")
    made = git(b, "rev-parse", "HEAD~1").strip()
    assert (refused.returncode, refused.stderr) == (1, _marked_refusal("memories/2.yaml", "assume-unchanged") + (
        " The branch was not put back where it was before the merge or rebase: a commit was made on its result "
        f"({made}) before these fixes ran, and putting it back would drop that commit; once what stopped it is mended, "
        "the same merge or rebase again makes the fixes.\n"))
    assert "learning: A save in between" in git(b, "show", "HEAD")
    assert git(b, "log", "--format=%s", "-2", made).splitlines()[1] == "tax rule dropped by hand"  # rebased
    assert "WIP" in hidden.read_text()


def test_a_sparse_checkout_or_a_hidden_edit_a_merge_does_not_rewrite_stops_nothing(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A memory a sparse checkout leaves out, or one whose edit git's index hides, that neither git's
    merge nor its fixes rewrite: merge and rebase were refused before git merged ("memories/1.yaml is
    marked skip-worktree ... would rewrite it"). They go through, the file and its mark as they were."""
    _bare, a, b = _team_holding_memory_1(tmp_path)
    invoke_cli("--kb", a, "save", "Shipping fees are in EUR", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    git(b, "update-index", "-q", "--refresh")  # a copied clone's stat data, or git keeps the file
    git(b, "sparse-checkout", "set", "--no-cone", "/*", "!/memories/1.yaml")
    invoke_cli("--kb", b, "save", "Refunds are rows with negative amounts", "-e", "shop.orders.status", check=True)
    [mine] = [p.name for p in (b / "memories").glob("*.yaml")]
    git(b, "switch", "-q", "-c", "other")
    for command in ("merge", "rebase"):
        git(b, "reset", "-q", "--keep", "main")
        done = invoke_cli("--kb", b, command, "origin/main")
        assert (done.returncode, done.stderr) == (0, ""), command
        assert (git(b, "ls-files", "-v", "memories/1.yaml"), (b / "memories/1.yaml").exists()) == ("S memories/1.yaml\n", False)
    git(b, "sparse-checkout", "disable")
    git(b, "update-index", "--assume-unchanged", f"memories/{mine}")
    (b / "memories" / mine).write_text((b / "memories" / mine).read_text() + "# my local note\n")
    # (A rebase replays this branch's commits, the one that saved it among them: git's own check refuses.)
    git(b, "reset", "-q", "--keep", "main")
    done = invoke_cli("--kb", b, "merge", "origin/main")
    assert (done.returncode, done.stderr) == (0, "")
    assert git(b, "ls-files", "-v", f"memories/{mine}") == f"h memories/{mine}\n"
    assert (b / "memories" / mine).read_text().endswith("# my local note\n")


# An edit and a deletion by default; rebased, in -m slow.
@pytest.mark.parametrize(("command", "work"), default_first(
    [("merge", "edit"), ("merge", "delete"), ("rebase", "edit")], keep=2))
def test_a_merge_of_a_memory_whose_edit_a_mark_hides_and_the_upstream_changed_keeps_the_edit(
        tmp_path: Path, invoke_cli: CliRunner, command: str, work: str) -> None:
    """git's index hides an edit of memory 1 (assume-unchanged) that main changed too: git's merge
    wrote main's version over the edit, then refused, the edit gone. The merge or rebase is refused
    before git merges, the edit and the branch as they were; so is a deletion under the mark (not a
    file a sparse checkout leaves out, which is marked skip-worktree alone), which a merge brought
    back with its mark gone, and a rebase was refused with git's words alone."""
    _bare, a, b = _team_holding_memory_1(tmp_path)
    invoke_cli("--kb", a, "update", "1", "--content", "Tax is VAT-inclusive (a)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "Shipping in EUR", "-e", "shop.orders.amount", check=True)
    git(b, "fetch", "-q", "origin")
    hidden = b / "memories" / "1.yaml"
    git(b, "update-index", "--assume-unchanged", "memories/1.yaml")
    if work == "edit":
        hidden.write_text(hidden.read_text().replace("Tax is", "Tax (WIP) is"))
    else:
        hidden.unlink()
    was = _as_git_has_it(b)
    refused = invoke_cli("--kb", b, command, "origin/main")
    assert (refused.returncode, refused.stderr) == (1, _marked_refusal("memories/1.yaml", "assume-unchanged") + "\n")
    assert _as_git_has_it(b) == was
    assert ("Tax (WIP) is" in hidden.read_text()) if work == "edit" else not hidden.exists()


def test_validate_of_a_clone_without_a_memories_folder_checks_the_kb(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # git keeps no empty folder: a clone of a KB that has no memory yet (or whose last one was
    # forgotten) has no memories/, and the step 'slayer-kb validate' of a conflict must still pass.
    _bare, (a,) = make_team(tmp_path, clones=1)
    assert not (a / "memories").exists()
    proc = invoke_cli("--kb", a, "validate")
    assert (proc.returncode, proc.stdout) == (0, "Checked 0 files: no problems.\n")


def test_a_branchs_first_sync_counts_only_its_own_commits(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # docs/teams.md, branch per agent: an agent branches off main, saves, and syncs its branch.
    _bare, (a,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", a, "save", "On main", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(a, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", a, "save", "Shipping fees are in EUR including VAT", "-e", "shop.orders.amount", check=True)
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stdout == "Synced agent-a with origin: pushed, 0 pulled, 1 pushed.\n"
    assert git(a, "rev-parse", "origin/agent-a") == git(a, "rev-parse", "HEAD")


def test_an_offline_sync_keeps_the_saves_and_says_the_next_sync_sends_them(tmp_path: Path, invoke_cli: CliRunner) -> None:
    bare, (a,) = make_team(tmp_path, clones=1)
    git(a, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    saved = json_of(invoke_cli("--kb", a, "--json", "save", "Saved on a train", "-e", "shop.orders.amount", check=True))
    assert len(saved["memory_id"]) == 10  # an offline block's id
    head = git(a, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", a, "--json", "sync")
    assert stopped.returncode == 1
    message = json_of(stopped)["error"]["message"]
    assert message.startswith(f"git fetch from origin ({tmp_path / 'unreachable.git'}) failed: fatal: ")
    assert message.endswith(
        "Nothing was pulled or sent and this clone is as it was: its saves stay here and the next sync sends them. "
        "Check the remote's url (git remote get-url origin) and the network, then run slayer-kb sync again."
    )
    assert git(a, "rev-parse", "HEAD") == head
    git(a, "remote", "set-url", "origin", str(bare))
    assert invoke_cli("--kb", a, "sync", check=True).stdout == "Synced main with origin: pushed, 0 pulled, 1 pushed.\n"
    assert git(a, "ls-tree", "--name-only", "origin/main", "memories/").split() == [f"memories/{saved['memory_id']}.yaml"]


def test_commits_a_force_push_dropped_are_pushed_again_and_said(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A person force-pushes main back to a commit before this clone's pushed save: the next sync
    keeps the save (nothing a clone holds is lost) and says it pushed it again, with the way to
    take a memory out; a sync with no rewrite says nothing of it."""
    bare, (a, b) = make_team(tmp_path, clones=2)
    invoke_cli("--kb", a, "save", "Pushed, then dropped by a rewrite", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "push", "-q", "-f", "origin", "HEAD:main")  # the person's rewrite, from a clone that never pulled
    invoke_cli("--kb", a, "save", "Saved after", "-e", "shop.orders.amount", check=True)
    assert invoke_cli("--kb", a, "sync", check=True).stdout == (
        "Synced main with origin: pushed, 0 pulled, 2 pushed.\n"
        "  note: origin/main was rewritten (a force push) without 1 commit(s) this clone held; they were "
        "pushed again (to take a memory out, forget it)\n")
    assert git(bare, "ls-tree", "--name-only", "main", "memories/").split() == ["memories/1.yaml", "memories/2.yaml"]
    invoke_cli("--kb", b, "save", "From b", "-e", "shop.orders.amount", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: rebased, 2 pulled, 1 pushed.\n"


def test_a_sync_with_nothing_to_push_says_when_the_remote_cannot_be_read(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Never "up to date" from the last fetch's tracking ref when this fetch could not reach the remote.
    _bare, (a,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", a, "save", "On main", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(a, "remote", "set-url", "origin", str(tmp_path / "unreachable.git"))
    stopped = invoke_cli("--kb", a, "sync")
    assert (stopped.returncode, stopped.stdout) == (1, "")
    assert stopped.stderr.startswith(f"Error: git fetch from origin ({tmp_path / 'unreachable.git'}) failed: fatal: ")
    assert "up to date" not in stopped.stderr


def test_a_sync_stopped_by_an_untracked_file_in_the_way_says_what_to_do(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _bare, (a, b) = make_team(tmp_path, clones=2)
    invoke_cli("--kb", a, "save", "From a", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)  # b has main's history, and then a memory of its own
    invoke_cli("--kb", b, "save", "From b", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "save", "From a again", "-e", "shop.orders.amount", check=True)
    again = json_of(invoke_cli("--kb", a, "--json", "save", "And again", "-e", "shop.orders.amount", check=True))
    invoke_cli("--kb", a, "sync", check=True)
    in_the_way = b / "memories" / f"{again['memory_id']}.yaml"
    in_the_way.write_text("hand-written, never added\n")
    head = git(b, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", b, "sync")
    assert stopped.returncode == 1
    assert f"Untracked working tree file 'memories/{again['memory_id']}.yaml' would be overwritten" in stopped.stderr
    assert stopped.stderr.rstrip().endswith(
        "(a file git does not track is where the command must write one: move it aside, or commit it with git add "
        "and git commit, then run the command again)"
    )
    assert git(b, "rev-parse", "HEAD") == head
    assert in_the_way.read_text() == "hand-written, never added\n"


def test_a_push_that_cannot_reach_the_remote_names_the_url_it_went_to(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The fetch works, the push goes to a ``pushurl`` that does not: the error names that url."""
    bare, (a,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", a, "save", "Saved at the office", "-e", "shop.orders.amount", check=True)
    git(a, "config", "remote.origin.pushurl", str(tmp_path / "unreachable.git"))
    head = git(a, "rev-parse", "HEAD")
    stopped = invoke_cli("--kb", a, "sync")
    assert (stopped.returncode, stopped.stdout) == (1, "")
    assert stopped.stderr.startswith(f"Error: git push to origin ({tmp_path / 'unreachable.git'}) failed: fatal: ")
    assert stopped.stderr.endswith(
        "Nothing was sent and this clone is as it was: its saves stay here and the next sync sends them. "
        "Check the remote's url (git remote get-url --push origin) and the network, then run slayer-kb sync again.\n"
    )
    assert git(a, "rev-parse", "HEAD") == head
    git(a, "config", "--unset", "remote.origin.pushurl")
    assert invoke_cli("--kb", a, "sync", check=True).stdout == "Synced main with origin: pushed, 0 pulled, 1 pushed.\n"
    assert git(bare, "show", "main:memories/1.yaml").startswith("learning: Saved at the office\n")


def test_a_conflicts_steps_merge_what_sync_merges_and_every_stop_says_what_next(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Issue 28: a forget against an update, beside a topic key and a session both clones wrote.
    # A plain 'git rebase' stopped first on the topic-key memory (sync's merge driver is not
    # git's), and on the second conflicting commit with no steps at all. The KB is a folder of
    # its repository (repo/kb/), where slayer-kb runs and git reads paths from: the steps told
    # 'git rm kb/memories/1.yaml' (from the repository's top), which git, run there, refused.
    _bare, (a, b) = make_team(tmp_path, folder="kb")
    topic = ("--title", "Shipping", "--type", "decision", "--project", "shop", "--topic-key", "shipping/days")
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "save", "Orders ship in 2 days", "-e", "shop.orders.amount", *topic, check=True)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "update", "1", "--content", "Refund reasons: free text, grouped by hand", check=True)
    invoke_cli("--kb", a, "save", "Orders ship in 3 days", "-e", "shop.orders.amount", *topic, check=True)
    invoke_cli("--kb", a, "save-prompt", "A: which carriers?", "--project", "shop", check=True)
    invoke_cli("--kb", a, "update", "3", "--content", "Amounts are in cents (A)", check=True)
    invoke_cli("--kb", b, "save", "Orders ship in 4 days", "-e", "shop.orders.amount", *topic, check=True)
    invoke_cli("--kb", b, "save-prompt", "B: which fees?", "--project", "shop", check=True)
    invoke_cli("--kb", b, "forget", "1", check=True)
    invoke_cli("--kb", b, "update", "3", "--content", "Amounts are in cents (B)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    stopped = invoke_cli("--kb", b, "--json", "sync")
    assert stopped.returncode == 1
    message = json_of(stopped)["error"]["message"]
    assert message == (
        "Your commits forgot memories/1.yaml, which origin/main edited; the repository is back as it was. "
        "To merge by hand: git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); git rm "
        "memories/1.yaml to keep it forgotten (or git add memories/1.yaml to keep origin/main's edit); "
        "slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync."
    )
    three = (a / "memories" / "3.yaml").read_text().replace("(A)", "(A and B)")
    stops: list[str] = []
    follow(b, invoke_cli, message, {"memories/3.yaml": three}, stops)
    # Two stops, each naming the file of a true conflict (never the topic key's or the session's)
    # and its steps, the first as sync's message says.
    assert stops == [
        "Your commits forgot memories/1.yaml, which origin/main edited; the rebase stopped at commit 3 of 4 "
        "('memory: forget 1'), and slayer-kb rebase --abort would put the branch back as it was. To merge by hand: git rm "
        "memories/1.yaml to keep it forgotten (or git add memories/1.yaml to keep origin/main's edit); "
        "slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync.",
        "Your commits and origin/main both edited memories/3.yaml; the rebase stopped at commit 4 of 4 "
        "('memory: update 3 (learning)'), and slayer-kb rebase --abort would put the branch back as it was. To merge "
        "by hand: "
        "edit memories/3.yaml to keep what both sides meant; git add memories/3.yaml; slayer-kb validate; "
        "slayer-kb rebase --continue (a later commit that stops says so again); slayer-kb sync.",
    ]
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: pushed, 0 pulled, 4 pushed.\n"
    invoke_cli("--kb", a, "sync", check=True)
    shown = json_of(invoke_cli("--kb", a, "--json", "get", "2", check=True))
    assert (shown["learning"], shown["revision_count"]) == ("Orders ship in 4 days", 3)  # 1 + A's + B's
    assert json_of(invoke_cli("--kb", a, "--json", "get", "3", check=True))["learning"] == "Amounts are in cents (A and B)"
    assert git(a, "ls-tree", "-r", "--name-only", "--full-name", "origin/main", "memories").split() == [
        "kb/memories/2.yaml", "kb/memories/3.yaml"]
    prompts = git(a, "show", "origin/main:./sessions/manual-save-shop.yaml")
    assert "A: which carriers?" in prompts and "B: which fees?" in prompts


def test_a_rebase_by_hand_aborts_back_and_says_when_there_is_none(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _editor, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="a")
    head = git(here, "rev-parse", "HEAD")
    git(here, "fetch", "-q", "origin")
    # Run from elsewhere, what it prints runs from there too.
    unnamed = invoke_cli("--kb", here.name, "rebase", cwd=here.parent)
    assert unnamed.stderr.split("\n\n")[-1] == (f"Error: Give the branch to rebase onto (slayer-kb --kb {here.name} rebase origin/main), "
                              "or --continue or --abort for the rebase in progress.\n")
    stopped = invoke_cli("--kb", here.name, "rebase", "origin/main", cwd=here.parent)
    assert stopped.returncode == 1 and (f"the rebase stopped at commit 1 of 1 ('memory: forget 1'), and slayer-kb --kb "
                                        f"{here.name} rebase --abort would put the branch back") in stopped.stderr
    again = invoke_cli("--kb", here, "rebase", "origin/main")
    assert again.stderr == ("Error: A rebase is already in progress; go on with 'slayer-kb rebase --continue' or "
                            "put the branch back with 'slayer-kb rebase --abort'.\n")
    aborted = invoke_cli("--kb", here, "rebase", "--abort", check=True)
    assert aborted.stdout == "Rebase aborted; the branch is back as it was.\n"
    assert git(here, "rev-parse", "HEAD") == head
    none = invoke_cli("--kb", here, "rebase", "--continue")
    assert (none.returncode, none.stderr) == (1, "Error: No rebase is in progress, so there is nothing to continue; "
                                              "start one with 'slayer-kb rebase UPSTREAM'.\n")
    for given, said in (("origin/nosuch", "Unknown revision 'origin/nosuch': give a commit, branch or tag (see 'git log')."),
                        ("-x", "'-x' is not a revision; give a commit, branch or tag (e.g. HEAD~1).")):
        wrong = invoke_cli("--kb", here, "rebase", "--", given)
        assert (wrong.returncode, wrong.stderr) == (1, f"Error: {said}\n")
    assert git(here, "rev-parse", "HEAD") == head
    git(here, "checkout", "-q", "--detach")  # sync refuses a detached HEAD: the step names the branch first
    detached = invoke_cli("--kb", here, "rebase", "HEAD~1", check=True)
    assert detached.stdout == "Rebased onto HEAD~1; run git switch -c BRANCH, then slayer-kb sync to push.\n"


def _squash_merged(tmp_path: Path, invoke_cli: CliRunner, saves: list[tuple[str, str]], main_content: str) -> Path:
    """An agent's branch of ``saves`` (learning, entity) pushed and squash-merged into main by the
    reviewer, who then sets memory 1's content to ``main_content`` and syncs: the agent's clone."""
    _bare, (agent, reviewer) = make_team(tmp_path)
    git(agent, "switch", "-q", "-c", "agent-a")
    for learning, entity in saves:
        invoke_cli("--kb", agent, "save", learning, "-e", entity, check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--squash", "origin/agent-a")
    git(reviewer, "commit", "-q", "-m", "Squash agent-a")
    invoke_cli("--kb", reviewer, "update", "1", "--content", main_content, check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    return agent


def test_a_memory_squash_merged_then_edited_on_main_rebases_onto_the_edit(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A pull request merged by squash, then memory 1 edited on main: both histories added memory 1
    # as one blob, under two commits, so git's merge base lacks it and a rebase stopped on an add/add.
    agent = _squash_merged(tmp_path, invoke_cli, [("Refund reasons are free text", "shop.refunds.amount"),
                                                   ("Amounts are in cents", "shop.orders.amount")],
                           "Refund reasons: free text, grouped by hand")
    invoke_cli("--kb", agent, "save", "Shipping fees include VAT", "-e", "shop.orders.amount", check=True)
    git(agent, "fetch", "-q", "origin")
    # Its memories 1 and 2 are pushed to origin/agent-a: rewritten, the next sync would put
    # main's commits on top of them again as copies. Refused, with 'slayer-kb merge' as the fix.
    head = git(agent, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", "a", "rebase", "origin/main", cwd=tmp_path)
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: Branch 'agent-a' has 2 commits already pushed to origin/agent-a that a rebase onto origin/main would "
        "rewrite, and its next sync would put the rewritten commits, origin/main's among them, on top of the pushed "
        "ones as copies. Take origin/main in with 'slayer-kb --kb a merge origin/main' instead (it keeps what was "
        "pushed); to rewrite the branch anyway, run 'slayer-kb --kb a rebase --rewrite-pushed origin/main' and push it "
        "with 'git -C a push --force-with-lease origin agent-a' (not slayer-kb --kb a sync).\n"))
    assert (git(agent, "rev-parse", "HEAD"), git(agent, "status", "--porcelain")) == (head, "")
    rebased = invoke_cli("--kb", agent, "rebase", "--rewrite-pushed", "origin/main")
    assert (rebased.returncode, rebased.stdout) == (
        0, "Rebased onto origin/main; run git push --force-with-lease origin agent-a to push.\n")
    # The branch is main plus its one new memory: main's edit kept, nothing lost, duplicated or renumbered.
    assert git(agent, "log", "--format=%s", "origin/main..HEAD").splitlines() == ["memory: save 3"]
    assert json_of(invoke_cli("--kb", agent, "--json", "get", "1", check=True))["learning"] == (
        "Refund reasons: free text, grouped by hand")
    assert git(agent, "ls-files", "memories").split() == ["memories/1.yaml", "memories/2.yaml", "memories/3.yaml"]
    assert git(agent, "status", "--porcelain") == ""


def test_validates_renumber_step_then_sync_keeps_both_memories(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Ids counted per clone collide; 'validate --against' says to run 'renumber --onto', which adds
    # a commit moving 1 to 2. sync's replay then met 'save 1' on the upstream's other memory 1 and
    # stopped, telling the user to edit the two memories into one file.
    _bare, (a, b) = make_team(tmp_path)
    for root in (a, b):
        git(root, "config", "slayer-kb.ids", "sequential")
    invoke_cli("--kb", a, "save", "Main's one", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "B's one", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "B's one, revised", check=True)
    git(b, "fetch", "-q", "origin")
    assert "renumber --onto origin/main' to give this branch's memory a fresh id" in invoke_cli("--kb", b, "validate", "--against", "origin/main").stdout
    renumbered = invoke_cli("--kb", b, "renumber", "--onto", "origin/main", check=True)
    assert renumbered.stdout == "Renumbered 1 memory onto origin/main:\n  1 -> 2\n"
    synced = invoke_cli("--kb", b, "sync")
    assert (synced.returncode, synced.stdout) == (0, "Synced main with origin: rebased, 1 pulled, 2 pushed.\n"
                                                     "  renumbered: 1 -> 2 (origin had already used 1 for another memory)\n")
    # As if 2 had been allocated from the start; 'log 1' is main's memory only, 'log 2' B's.
    assert git(b, "log", "--format=%s", "origin/main").splitlines() == [
        "memory: update 2 (learning) (renumber 1 -> 2)", "memory: save 2 (renumber 1 -> 2)", "memory: save 1",
        "test setup"]
    logged = {i: [e["message"].split("\n")[0] for e in json_of(invoke_cli("--kb", b, "--json", "log", i, check=True))] for i in "12"}
    assert logged == {"1": ["memory: save 1"],
                      "2": ["memory: update 2 (learning) (renumber 1 -> 2)", "memory: save 2 (renumber 1 -> 2)"]}
    shown = {i: json_of(invoke_cli("--kb", b, "--json", "show", i, check=True))["learning"] for i in "12"}
    assert shown == {"1": "Main's one", "2": "B's one, revised"}


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_merging_main_after_a_squash_merge_keeps_mains_edit_and_stops_only_on_two_edits(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Branch per agent: main squash-merged the agent's memories 1-4 and edited 1, 2 and 4; the
    # agent edited 2 and forgot 3 and 4. A plain 'git merge origin/main' stops on an add/add of 1
    # and 2, and brings 3 and 4 back (its merge base predates their adds).
    _bare, (agent, reviewer) = make_team(tmp_path)
    git(agent, "switch", "-q", "-c", "agent-a")
    for text in ("Refund reasons are free text", "Amounts are in cents", "Stale note", "Disputed note"):
        invoke_cli("--kb", agent, "save", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--squash", "origin/agent-a")
    git(reviewer, "commit", "-q", "-m", "Squash agent-a")
    for memory_id, text in (("1", "Refund reasons: free text, grouped by hand"), ("2", "Amounts are in cents (main)"),
                            ("4", "Disputed note, kept on main")):
        invoke_cli("--kb", reviewer, "update", memory_id, "--content", text, check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "update", "2", "--content", "Amounts are in cents (agent)", check=True)
    invoke_cli("--kb", agent, "forget", "3", check=True)
    invoke_cli("--kb", agent, "forget", "4", check=True)
    git(agent, "fetch", "-q", "origin")
    # Run from the clone's parent folder: the steps, and the way back, run from there.
    stopped = invoke_cli("--kb", "a", "--json", "merge", "origin/main", cwd=tmp_path)
    assert stopped.returncode == 1
    message = json_of(stopped)["error"]["message"]
    assert message == (
        "This branch and origin/main both edited memories/2.yaml; this branch forgot memories/4.yaml, which "
        "origin/main edited; the merge stopped, and git -C a merge --abort would put the branch back as it was. To "
        "merge by hand: cd a; edit memories/2.yaml to keep what both sides meant; git add memories/2.yaml; git rm "
        "memories/4.yaml to keep it forgotten (or git add memories/4.yaml to keep origin/main's edit); slayer-kb "
        "validate; git commit --no-edit; slayer-kb sync.")
    two = git(agent, "show", "origin/main:memories/2.yaml").replace("(main)", "(main and agent)")
    stops: list[str] = []
    follow(tmp_path, invoke_cli, message, {"memories/2.yaml": two}, stops)
    assert stops == []
    assert invoke_cli("--kb", agent, "sync", check=True).stdout.startswith("Synced agent-a with origin: pushed")
    learned = {i: json_of(invoke_cli("--kb", agent, "--json", "get", i, check=True))["learning"] for i in "12"}
    assert learned == {"1": "Refund reasons: free text, grouped by hand", "2": "Amounts are in cents (main and agent)"}
    assert git(agent, "ls-files", "memories").split() == ["memories/1.yaml", "memories/2.yaml"]
    review = json_of(invoke_cli("--kb", agent, "--json", "review", "origin/main", check=True))
    assert ([m["id"] for m in review["added"]], [m["id"] for m in review["changed"]],
            [m["id"] for m in review["removed"]]) == ([], ["2"], ["3", "4"])
    # Nothing more to take in.
    again = invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    assert again.stdout == "Already up to date with origin/main.\n"


def test_a_squash_merged_memory_edited_in_two_fields_merges_field_by_field(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A memory added alike on both sides (a squash merge), then main changed its content and the
    agent its description: each field from the side that changed it, as for a memory both sides
    held all along; the add/add git stops on was left for a person."""
    agent = _squash_merged(tmp_path, invoke_cli, [("Amounts are in cents", "shop.orders.amount")],
                           "Amounts are in cents (main)")
    invoke_cli("--kb", agent, "update", "1", "--description", "the unit of amounts", check=True)
    git(agent, "fetch", "-q", "origin")
    invoke_cli("--kb", agent, "merge", "origin/main", check=True)
    got = json_of(invoke_cli("--kb", agent, "--json", "get", "1", check=True))
    assert (got["learning"], got["description"]) == ("Amounts are in cents (main)", "the unit of amounts")
    assert git(agent, "status", "--porcelain") == ""


def test_a_branch_made_from_origin_main_never_syncs_into_main(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # 'git switch -c agent-a origin/main' makes agent-a track main: its sync pushed the agent's
    # work to main, past the reviewer, and said "Synced agent-a".
    bare, (a,) = make_team(tmp_path, clones=1)
    main = git(bare, "rev-parse", "main")
    git(a, "switch", "-q", "-c", "agent-a", "origin/main")
    invoke_cli("--kb", a, "save", "For review first", "-e", "shop.orders.amount", check=True)
    refused = invoke_cli("--kb", a, "sync")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: Branch 'agent-a' tracks origin/main, a branch of another name, so a sync would push its commits to "
        "main. To sync it with a branch of its own on origin (origin/agent-a), run 'git branch --unset-upstream' and "
        "sync again; to take main in, run 'git fetch origin' and 'slayer-kb merge origin/main'; to work on main "
        "itself, 'git switch main'.\n"))
    assert git(bare, "rev-parse", "main") == main
    git(a, "branch", "--unset-upstream")
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stdout == "Synced agent-a with origin: pushed, 0 pulled, 1 pushed.\n"
    assert (git(bare, "rev-parse", "main"), git(bare, "rev-parse", "agent-a")) == (main, git(a, "rev-parse", "HEAD"))


def test_two_branches_saving_one_topic_key_end_as_one_memory_after_merging_main(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Branch per agent: both agents start project api (its default session file) and save one
    # new topic key. Once agent-a is merged, GitHub's merge of agent-b stopped on the session file
    # and main then held the key twice; 'slayer-kb merge origin/main' on agent-b folds it first.
    _bare, (a, b, reviewer) = make_team(tmp_path, clones=3)
    topic = ("--title", "Cache TTL", "--type", "decision", "--project", "api", "--topic-key", "decision/cache-ttl")
    for root, name in ((a, "agent-a"), (b, "agent-b")):
        git(root, "switch", "-q", "-c", name)
        invoke_cli("--kb", root, "save", f"Cache TTL from {name}", *topic, check=True)
        invoke_cli("--kb", root, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--no-ff", "--no-edit", "origin/agent-a")
    git(reviewer, "push", "-q", "origin", "main")
    git(b, "fetch", "-q", "origin")
    # The review of agent-b says so before the merge (it passed, and main then held the key twice).
    blocked = invoke_cli("--kb", b, "validate", "--against", "origin/main", cwd=tmp_path)
    # (The session files both made differ when the saves' seconds do: a plain merge stops on them
    # then, which the next line names; the merge below takes both in either way.)
    assert (blocked.returncode, blocked.stdout.split("\n")[0].split(": ", 1)[1]) == (1, (
        "topic_key 'decision/cache-ttl' in project 'api' is also held by memory 1 that origin/main added since "
        "this branch parted from it; merged, the key would be held twice. Run 'git -C b fetch origin && slayer-kb "
        "--kb b merge origin/main': it folds this memory into 1 (one memory, both sides' revisions)"))
    merged = invoke_cli("--kb", b, "merge", "origin/main", check=True)
    assert merged.stdout == ("Merged origin/main; run slayer-kb sync to push.\n"
                             "  merged (same topic key): 101 into 1\n")
    moved = invoke_cli("--kb", b, "get", "101")
    assert moved.stderr.startswith("Error: Memory id '101' moved: 'slayer-kb merge' merged this clone's memory 101 into "
                                   "1, which the branch it merged holds under the same topic key; ")
    assert invoke_cli("--kb", b, "validate", "--against", "origin/main").returncode == 0
    invoke_cli("--kb", b, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--no-ff", "--no-edit", "origin/agent-b")  # raises on a conflict
    assert git(reviewer, "ls-files", "memories").split() == ["memories/1.yaml"]
    shown = json_of(invoke_cli("--kb", reviewer, "--json", "get", "1", check=True))
    assert (shown["learning"], shown["revision_count"]) == ("Cache TTL from agent-b", 2)
    assert invoke_cli("--kb", reviewer, "validate").stdout == "Checked 2 files: no problems.\n"


@pytest.mark.parametrize("merge_tree", default_first([pytest.param(True, id="merge-tree"), pytest.param(False, id="merge-file")]))
def test_validate_against_main_names_the_files_a_plain_merge_of_the_branch_would_stop_on(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, merge_tree: bool) -> None:
    # Branch per agent: both agents make their first save into project api (its default session
    # file) and revise topic key decision/cache-ttl, which main holds. Once agent-a is merged,
    # 'validate --against origin/main' passed agent-b, and GitHub's merge of it stopped on both files.
    # The same answers from git 2.38's merge-tree and, before it, a merge-file a file.
    if not merge_tree:
        monkeypatch.setattr(plainmerge, "merge_tree_stops", lambda *args: None)  # as git < 2.38 answers
    _bare, (a, b, reviewer) = make_team(tmp_path, clones=3)
    topic = ("--title", "Cache TTL", "--project", "api", "--topic-key", "decision/cache-ttl")
    invoke_cli("--kb", a, "save", "Cache TTL is 60 s", *topic, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for root, name in ((a, "agent-a"), (b, "agent-b")):
        git(root, "pull", "-q")
        git(root, "switch", "-q", "-c", name)
        invoke_cli("--kb", root, "save", f"Cache TTL from {name}", *topic, check=True)
        invoke_cli("--kb", root, "save", f"Orders are shipped by {name}", "--title", "Shipping", "--project", "web",
                   check=True)
        invoke_cli("--kb", root, "save-prompt", f"Where is shipping decided? ({name})", "--project", "web", check=True)
        invoke_cli("--kb", root, "sync", check=True)
    git(reviewer, "pull", "-q")
    git(reviewer, "merge", "-q", "--no-ff", "--no-edit", "origin/agent-a")
    git(reviewer, "push", "-q", "origin", "main")
    git(b, "fetch", "-q", "origin")
    blocked = invoke_cli("--kb", b, "validate", "--against", "origin/main", cwd=tmp_path)
    fix = "Run 'git -C b fetch origin && slayer-kb --kb b merge origin/main'"
    assert (blocked.returncode, blocked.stdout) == (1, (
        "b/memories/1.yaml:1: origin/main wrote this memory too since this branch parted from it, in lines "
        f"git's merge cannot join: a plain git merge of this branch stops on it. {fix}: it merges both sides' "
        "revisions of a topic key, and fields each side changed alone, and stops on two edits of one field (two "
        "memories under one id among them) with the steps to merge by hand\n"
        "b/sessions/manual-save-web.yaml:1: origin/main wrote this session file too since this branch parted "
        f"from it, in lines git's merge cannot join: a plain git merge of this branch stops on it. {fix}: it "
        "merges both sides' sessions (their prompts, the earliest start, the latest end)\n"
        "2 problems in 2 files (3 files checked)\n"))
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    assert invoke_cli("--kb", b, "validate", "--against", "origin/main").returncode == 0
    invoke_cli("--kb", b, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--no-ff", "--no-edit", "origin/agent-b")  # raises on a conflict
    # Both branches' revisions counted in one memory (the newer content holds; both were saved
    # within a second here).
    assert json_of(invoke_cli("--kb", reviewer, "--json", "get", "1", check=True))["revision_count"] == 3
    assert invoke_cli("--kb", reviewer, "validate").returncode == 0


def test_a_sync_keeps_a_local_merge_and_the_merged_branch_stays_merged(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # An agent merges a branch of its own into main and syncs while another clone pushed first:
    # sync's rebase replayed the merge as the branch's commits, one after the other, so git no
    # longer counted the branch as merged (nothing lost, but 'git branch --merged' lied).
    bare, (a, b) = make_team(tmp_path)
    git(a, "switch", "-q", "-c", "topic")
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    git(a, "switch", "-q", "main")
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    with traced_git(tmp_path) as runs:
        merged = invoke_cli("--kb", a, "merge", "topic", check=True)
    assert merged.stdout == "Merged topic; run slayer-kb sync to push.\n"
    # Where the sides parted is asked once, every base at once (it was asked three times), and a
    # merge git finished leaves no unmerged path to ask git for (it was asked twice).
    assert [run.split()[:2] for run in runs("merge-base")] == [["merge-base", "--all"]]
    assert runs("diff --name-only -z --diff-filter=U") == []
    invoke_cli("--kb", b, "save", "Shipping fees include VAT", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    lose_races(bare, 1)  # the retry merges the new upstream into the branch as it was, once
    synced = json_of(invoke_cli("--kb", a, "--json", "sync", check=True))
    assert (synced["action"], synced["pulled"], synced["pushed"], synced["attempts"]) == ("merged", 2, 4, 2)
    # The merge and the branch's commits kept as they were, the upstream merged in once on top.
    assert git(a, "branch", "--merged", "origin/main", "--format=%(refname:short)").split() == ["main", "topic"]
    assert git(a, "log", "--format=%s", "--first-parent", "origin/main").splitlines() == [
        "Merge remote-tracking branch 'origin/main'", "Merge branch 'topic'", "memory: save 2", "test setup"]
    assert git(a, "log", "--format=%s", "origin/main^2").splitlines()[:2] == ["another clone's push", "memory: save 101"]
    assert git(a, "ls-files", "memories").split() == ["memories/1.yaml", "memories/101.yaml", "memories/2.yaml"]
    assert git(a, "status", "--porcelain") == ""
    invoke_cli("--kb", b, "sync", check=True)
    learned = {m["id"] for m in json_of(invoke_cli("--kb", b, "--json", "list", check=True))["memories"]}
    assert learned == {"1", "2", "101"}


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_sync_that_merges_stops_on_two_edits_with_steps_that_work(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A clone that merged a branch of its own keeps that merge: sync merges the upstream in, and
    # two edits of one memory stop it with slayer-kb merge's steps (paths from the KB's folder).
    _bare, (a, b) = make_team(tmp_path, folder="kb")
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(b, "switch", "-q", "-c", "topic")
    invoke_cli("--kb", b, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    git(b, "switch", "-q", "main")
    git(b, "merge", "-q", "--no-ff", "--no-edit", "topic")
    invoke_cli("--kb", b, "update", "1", "--content", "Amounts are in cents (B)", check=True)
    invoke_cli("--kb", a, "update", "1", "--content", "Amounts are in cents (A)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    head = git(b, "rev-parse", "HEAD")
    message = json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"]
    assert message == (
        "This branch and origin/main both edited memories/1.yaml; the repository is back as it was. To merge by "
        "hand: git fetch origin; slayer-kb merge origin/main (it stops on the conflict); edit memories/1.yaml to keep "
        "what both sides meant; git add memories/1.yaml; slayer-kb validate; git commit --no-edit; slayer-kb sync.")
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")
    stops: list[str] = []
    one = (a / "memories" / "1.yaml").read_text().replace("(A)", "(A and B)")
    follow(b, invoke_cli, message, {"memories/1.yaml": one}, stops)
    assert [stop.split(";")[0] for stop in stops] == ["This branch and origin/main both edited memories/1.yaml"]
    synced = json_of(invoke_cli("--kb", b, "--json", "sync", check=True))
    # B's update and its merges of topic and of origin/main; topic's save came in by the merge.
    assert (synced["action"], synced["pulled"], synced["pushed"], synced["pushed_by_merge"]) == ("pushed", 0, 4, 1)
    assert "topic" in git(b, "branch", "--merged", "origin/main", "--format=%(refname:short)").split()
    assert json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))["learning"] == "Amounts are in cents (A and B)"


def test_a_topic_key_squash_merged_then_revised_on_both_sides_counts_each_revision_once(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The reviewer squash-merged the agent's topic key; main and the agent each revised it. git's
    # merge base predates both adds, so the driver merged the two revisions from an empty base and
    # counted the save twice: revision_count 4 for a save and two revisions.
    _bare, (agent, reviewer) = make_team(tmp_path)
    topic = ("--title", "Cache TTL", "--type", "decision", "--project", "api", "--topic-key", "decision/cache-ttl")
    git(agent, "switch", "-q", "-c", "agent-a")
    invoke_cli("--kb", agent, "save", "Cache TTL is 60 s", *topic, check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--squash", "origin/agent-a")
    git(reviewer, "commit", "-q", "-m", "Squash agent-a")
    invoke_cli("--kb", reviewer, "save", "Cache TTL is 90 s", *topic, check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "save", "Cache TTL is 120 s", *topic, check=True)
    git(agent, "fetch", "-q", "origin")
    assert invoke_cli("--kb", agent, "merge", "origin/main", check=True).stdout == (
        "Merged origin/main; run slayer-kb sync to push.\n")
    # The newest content (saves in one second tie, and main's wins), every revision counted once.
    shown = json_of(invoke_cli("--kb", agent, "--json", "get", "1", check=True))
    assert (shown["learning"] in ("Cache TTL is 120 s", "Cache TTL is 90 s"), shown["revision_count"]) == (True, 3)
    assert git(agent, "status", "--porcelain") == ""


def _held_then_edited_on_a(kbs: list[Path]) -> None:
    """Memory 1 saved on clone a and synced to b, then edited on a and pushed."""
    a, b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "update", "1", "--content", "Refund reasons (A)", check=True)
    invoke_cli("--kb", a, "sync", check=True)


def _both_hold_1_and_a_edited_it(tmp_path: Path) -> tuple[Path, Path]:
    """Clones a and b after ``_held_then_edited_on_a`` (b's edit of memory 1 will meet a's), made
    once a process and copied (``make_team_after``)."""
    _bare, (a, b) = make_team_after(tmp_path, "held-then-edited-on-a", _held_then_edited_on_a)
    return a, b


def test_a_rebase_continue_refuses_a_file_added_with_its_conflict_markers(tmp_path: Path, invoke_cli: CliRunner) -> None:
    a, b = _both_hold_1_and_a_edited_it(tmp_path)
    git(b, "switch", "-q", "-c", "agent-b")
    invoke_cli("--kb", b, "update", "1", "--content", "Refund reasons (B)", check=True)
    # The same commit adds a note whose own text shows conflict markers: no file to refuse.
    note = "A conflict reads:\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> theirs\n"
    (b / "CONFLICTS.md").write_text(note)
    git(b, "add", "CONFLICTS.md")
    git(b, "commit", "-q", "--amend", "--no-edit")
    invoke_cli("--kb", b, "sync", check=True)  # pushed to origin/agent-b: every step ends with a force push
    git(b, "fetch", "-q", "origin")
    stopped = invoke_cli("--kb", b, "rebase", "--rewrite-pushed", "origin/main")
    assert (stopped.returncode, stopped.stderr.rsplit("; ", 1)[1]) == (1, "git push --force-with-lease origin agent-b.\n")
    marked = (b / "memories" / "1.yaml").read_text()
    assert "<<<<<<< " in marked
    git(b, "add", "memories/1.yaml")  # the step before it, the edit, skipped
    refused = invoke_cli("--kb", b, "rebase", "--continue")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: memories/1.yaml still holds git's conflict markers (<<<<<<<, =======, >>>>>>>), so continuing "
        "would commit them as they are; edit memories/1.yaml to keep what both sides meant, then git add "
        "memories/1.yaml; slayer-kb validate; slayer-kb rebase --continue.\n"))
    assert (b / "memories" / "1.yaml").read_text() == marked
    # Resolved from A's file: git joins nearby hunks, so a conflict may span updated_at and created_at too.
    (b / "memories" / "1.yaml").write_text((a / "memories" / "1.yaml").read_text().replace("(A)", "(A and B)"))
    git(b, "add", "memories/1.yaml")
    assert invoke_cli("--kb", b, "rebase", "--continue", check=True).stdout == (
        "Rebased onto origin/main; run git push --force-with-lease origin agent-b to push.\n")
    assert json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))["learning"] == "Refund reasons (A and B)"
    assert git(b, "show", "HEAD:CONFLICTS.md") == note


def test_a_conflicts_markers_name_the_sides_as_its_steps_do(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The markers said 'current' and 'other', and in a rebase the current side is the upstream:
    an agent told to keep what both sides meant could not tell its own edit from the other's."""
    a, b = _both_hold_1_and_a_edited_it(tmp_path)
    invoke_cli("--kb", b, "update", "1", "--content", "Refund reasons (B)", check=True)
    git(b, "fetch", "-q", "origin")

    def markers() -> list[str]:
        text = (b / "memories" / "1.yaml").read_text()
        return [line for line in text.splitlines() if line.startswith(("<<<<<<<", "=======", ">>>>>>>"))][:3]

    stopped = invoke_cli("--kb", b, "rebase", "origin/main")
    assert stopped.stderr.startswith("Error: Your commits and origin/main both edited memories/1.yaml;")
    assert markers() == ["<<<<<<< origin/main", "=======", ">>>>>>> your commits"]
    invoke_cli("--kb", b, "rebase", "--abort", check=True)
    stopped = invoke_cli("--kb", b, "merge", "origin/main")
    assert stopped.stderr.startswith("Error: This branch and origin/main both edited memories/1.yaml;")
    assert markers() == ["<<<<<<< this branch", "=======", ">>>>>>> origin/main"]


def test_validate_against_main_flags_a_link_to_a_memory_main_forgot_since(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """An agent's branch links memory 1, which main forgot since: every file checks on the branch,
    but a reviewer's plain 'git merge' made a main that failed validate. validate --against and
    review, run by the reviewer, name the link and the fix, which works as written in the agent's
    clone, whose origin/main predates the forget (without the fetch: 'Already up to date')."""
    _bare, (reviewer, agent) = make_team(tmp_path)
    invoke_cli("--kb", reviewer, "save", "Tax is VAT-inclusive", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(agent, "switch", "-q", "-c", "agent-b")
    invoke_cli("--kb", agent, "save", "Totals: see the tax rule", "-e", "shop.orders.status", "-e", "memory:1",
               check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    invoke_cli("--kb", reviewer, "forget", "1", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "--detach", "origin/agent-b")
    problem = ("memory 101 links 'memory:1', which origin/main forgot since this branch parted from it; merged as "
               "it is, the link would point at nothing. Run 'git{} fetch origin && slayer-kb{} merge origin/main': it "
               "strips links to forgotten memories, in one commit")
    # Typed elsewhere (the KB given by --kb), the fix names the KB: review's did not.
    checked = invoke_cli("--kb", reviewer, "validate", "--against", "origin/main", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (1, f"{reviewer.name}/memories/101.yaml:1: "
                                                       f"{problem.format(f' -C {reviewer.name}', f' --kb {reviewer.name}')}\n"
                                                       "1 problem in 1 file (1 file checked)\n")
    review = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True, cwd=tmp_path))
    assert review["problems"] == [
        f"memories/101.yaml:1: {problem.format(f' -C {reviewer.name}', f' --kb {reviewer.name}')}"]
    # Typed in the KB, it needs none.
    review = json_of(invoke_cli("--kb", reviewer, "--json", "review", "origin/main", check=True))
    assert review["problems"] == [f"memories/101.yaml:1: {problem.format('', '')}"]
    # What it warns of: merged as it is, main fails validate.
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "merge", "-q", "--no-edit", "origin/agent-b")
    assert "'memory:1' refers to a memory that does not exist" in invoke_cli("--kb", reviewer, "validate").stdout
    # The fix works as written, in the agent's clone.
    fetch, fix = review["problems"][0].split("Run '")[1].split("':")[0].split(" && ")
    git(agent, *fetch.split()[1:])
    merged = invoke_cli("--kb", agent, *fix.split()[1:], check=True)
    assert "stripped links to forgotten memories: memory:1 from 101" in merged.stdout
    assert invoke_cli("--kb", agent, "validate", "--against", "origin/main", check=True).stdout == (
        "Checked 1 file: no problems.\n")


def test_a_rebase_continued_by_hand_strips_links_to_what_the_other_side_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Clone b forgot memory 1 while clone a linked it from a new memory 3 and edited 2 as b did:
    sync stopped on the two edits, and the rebase finished by hand left 3 linking nothing (only
    sync's automatic paths stripped such links). rebase --continue strips it, and says so."""
    _bare, (a, b) = make_team_after(tmp_path, "two-held-by-both", _two_held_by_both)
    invoke_cli("--kb", b, "forget", "1", check=True)
    invoke_cli("--kb", b, "update", "2", "--content", "Shipping fees are in EUR (b)", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "update", "2", "--content", "Shipping fees are in EUR (a)", check=True)
    invoke_cli("--kb", a, "save", "Totals: see the tax rule", "-e", "shop.orders.status", "-e", "memory:1", check=True)
    assert invoke_cli("--kb", a, "sync").returncode == 1
    git(a, "fetch", "-q", "origin")
    assert invoke_cli("--kb", a, "rebase", "origin/main").returncode == 1
    (a / "memories" / "2.yaml").write_text(git(a, "show", "origin/main:memories/2.yaml").replace("(b)", "(a and b)"))
    git(a, "add", "memories/2.yaml")
    continued = invoke_cli("--kb", a, "rebase", "--continue", check=True)
    assert continued.stdout == ("Rebased onto origin/main; run slayer-kb sync to push.\n"
                                "  stripped links to forgotten memories: memory:1 from 3\n")
    assert git(a, "log", "-1", "--format=%s") == "memory: strip links to forgotten 1 from 3\n"
    assert json_of(invoke_cli("--kb", a, "--json", "get", "3", check=True))["entities"] == ["shop.orders.status"]
    assert invoke_cli("--kb", a, "validate", check=True).stdout == "Checked 2 files: no problems.\n"
    assert git(a, "status", "--porcelain") == ""


def merged_by_hand_over_a_forget(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, Path]:
    """main forgot memory 1 and edited 2 while an agent's branch linked 1 from its new memory 101
    (pushed to origin/agent-b) and edited 2: 'slayer-kb merge origin/main' stopped on 2, and the
    merge was committed by hand ('git commit --no-edit', as its steps say), 101 still linking 1.
    The remote and the agent's clone."""
    bare, (reviewer, agent) = make_team(tmp_path)
    for text in ("Tax is VAT-inclusive", "Shipping fees are in EUR"):
        invoke_cli("--kb", reviewer, "save", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(agent, "switch", "-q", "-c", "agent-b")
    invoke_cli("--kb", agent, "save", "Totals: see the tax rule", "-e", "shop.orders.status", "-e", "memory:1",
               check=True)
    invoke_cli("--kb", agent, "update", "2", "--content", "Shipping fees are in EUR (agent)", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    invoke_cli("--kb", reviewer, "forget", "1", check=True)
    invoke_cli("--kb", reviewer, "update", "2", "--content", "Shipping fees are in EUR (main)", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "fetch", "-q", "origin")
    assert invoke_cli("--kb", agent, "merge", "origin/main").returncode == 1
    (agent / "memories" / "2.yaml").write_text(
        git(agent, "show", "origin/main:memories/2.yaml").replace("(main)", "(main and agent)"))
    git(agent, "add", "memories/2.yaml")
    git(agent, "commit", "-q", "--no-edit")
    return bare, agent


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_merge_committed_by_hand_has_its_links_to_forgotten_memories_stripped_by_sync(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The merge committed by hand kept 101's link to nothing, which the sync pushed (101 was
    already on the remote branch, so its revalidation did not look at it). The sync strips it, as
    the finished merge would have, and says so."""
    _bare, agent = merged_by_hand_over_a_forget(tmp_path, invoke_cli)
    assert invoke_cli("--kb", agent, "sync", check=True).stdout == (
        "Synced agent-b with origin: pushed, 0 pulled, 4 pushed (2 of them from another branch, taken in by a merge).\n"
        "  stripped links to forgotten memories: memory:1 from 101\n")
    assert git(agent, "log", "-1", "--format=%s", "origin/agent-b") == "memory: strip links to forgotten 1 from 101\n"
    assert invoke_cli("--kb", agent, "validate", "--against", "origin/main", check=True).stdout.endswith(
        "no problems.\n")


def test_a_retried_sync_strips_a_link_pushed_before_the_merge_committed_by_hand(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """As above, but the first push is refused: the retry merges the upstream in and stripped only
    memories changed since the old upstream, which 101 (pushed before) was not, so origin/agent-b
    ended linking a memory main forgot ('validate' failing there)."""
    bare, agent = merged_by_hand_over_a_forget(tmp_path, invoke_cli)
    lose_races(bare, 1)
    synced = json_of(invoke_cli("--kb", agent, "--json", "sync", check=True))
    assert (synced["action"], synced["attempts"], synced["unlinked"]) == ("merged", 2, {"101": ["1"]})
    assert "memory:1" not in git(agent, "show", "origin/agent-b:memories/101.yaml")
    assert invoke_cli("--kb", agent, "validate", check=True).stdout == "Checked 2 files: no problems.\n"


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_retried_sync_of_a_local_merge_names_only_the_last_attempts_moves(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """B's unpushed commits include a merge, so each attempt merges the upstream into the branch
    as it was, the last attempt's renumbering and strips undone. Its first attempt met an upstream
    that used B's id 2, forgot memory 1, deleted shop.refunds, which B's memory links, and saved a
    topic key and an observation B saved too: all were moved, stripped, folded or merged. Another clone then pushed first, a main without those commits (put
    back by force): the retry moves nothing, and the reply, and the moves the clone records (a
    command on a moved id refuses), must not name the first attempt's."""
    bare, a, b = _team_holding_memory_1(tmp_path)
    git(b, "config", "slayer-kb.ids", "sequential")  # as before leases: B's next id is 2, as A's
    git(b, "switch", "-q", "-c", "topic")
    invoke_cli("--kb", b, "save", "Costs are in cents", "-e", "shop.orders.cost", "--id", "costs", check=True)
    git(b, "switch", "-q", "main")
    invoke_cli("--kb", b, "save", "Refunds net of tax", "-e", "shop.orders.status", "-e", "shop.refunds.amount",
               "-e", "memory:1", check=True)
    git(b, "merge", "-q", "--no-ff", "--no-edit", "topic")
    # A topic key and an observation A saves too: the first attempt folds both into A's memories.
    git(b, "config", "--unset", "slayer-kb.ids")
    engram = {"key": ("Retries: 3", "--title", "Retry budget", "--project", "api", "--topic-key", "decision/retry"),
              "same": ("test_login is flaky", "--title", "Flaky test", "--project", "api")}
    mine = {name: json_of(invoke_cli("--kb", b, "--json", "save", *args, check=True))["memory_id"]
            for name, args in engram.items()}
    parted = git(a, "rev-parse", "HEAD").strip()
    invoke_cli("--kb", a, "save", "Shipping is in EUR", "-e", "shop.orders.amount", check=True)
    for args in engram.values():
        invoke_cli("--kb", a, "save", *args, check=True)
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "delete-model", "shop.refunds", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    # What another clone pushes first, once B has fetched the above: main put back before them.
    git(a, "switch", "-q", "-c", "put-back", parted)
    git(a, "commit", "-q", "--allow-empty", "-m", "main put back")
    git(a, "push", "-q", "origin", "HEAD:refs/prepared/next")
    lose_races(bare, 1, to="refs/prepared/next")
    synced = json_of(invoke_cli("--kb", b, "--json", "sync", check=True))
    assert (synced["action"], synced["attempts"]) == ("merged", 2)
    assert (synced["renumbered"], synced["unlinked"], synced["cascaded"]) == ({}, {}, {})
    assert (synced["merged"], synced["deduplicated"], synced["resolved"]) == ({}, {}, [])
    for name, args in engram.items():  # not folded, so not moved: the ids B's agent holds answer
        assert json_of(invoke_cli("--kb", b, "--json", "get", mine[name], check=True))["learning"] == args[0]
    assert json_of(invoke_cli("--kb", b, "--json", "get", "2", check=True))["entities"] == [
        "shop.orders.status", "shop.refunds.amount", "memory:1"]
    assert git(b, "ls-tree", "--name-only", "origin/main", "memories/").split() == sorted([
        "memories/1.yaml", "memories/2.yaml", "memories/costs.yaml", *(f"memories/{i}.yaml" for i in mine.values())])
    assert git(b, "log", "-1", "--format=%s", "origin/main^1~2") == "Merge branch 'topic'\n"


def _refunds_deleted_on_a(kbs: list[Path]) -> None:
    """Clone a deletes the model shop.refunds and syncs; clone b has not synced since (made once a
    process and copied: ``make_team_after``)."""
    a, _b = kbs
    invoke_cli = in_the_kb(in_process_runner())
    invoke_cli("--kb", a, "delete-model", "shop.refunds", check=True)
    invoke_cli("--kb", a, "sync", check=True)


def test_a_catalog_delete_on_one_clone_strips_what_the_other_clone_linked_meanwhile(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """delete-model strips the model and its leaves from the memories its clone holds; a memory
    the other clone saved meanwhile with one of them stopped that clone's sync ("do not validate
    ... Fix them on your branch"), or, saved first, made the deleting clone push a main that failed
    validate. Both ways sync applies the delete's cascade, in one commit, and says so."""
    _bare, (a, b) = make_team_after(tmp_path, "refunds-deleted-on-a", _refunds_deleted_on_a)
    invoke_cli("--kb", b, "save", "Refund amounts are negative", "-e", "shop.refunds.amount", "-e",
               "shop.orders.refunds", check=True)
    assert invoke_cli("--kb", b, "sync", check=True).stdout == (
        "Synced main with origin: rebased, 1 pulled, 2 pushed.\n"
        "  stripped entities deleted from the catalog: shop.refunds.amount from 101\n")
    assert git(b, "log", "-1", "--format=%s") == "memory: strip deleted shop.refunds from 101\n"
    assert json_of(invoke_cli("--kb", b, "--json", "get", "101", check=True))["entities"] == ["shop.orders.refunds"]
    # The link is on the remote first: the deleting clone's sync strips it before pushing.
    invoke_cli("--kb", b, "save", "Customers' names are free text", "-e", "shop.customers.name", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "delete-model", "shop.customers", check=True)
    synced = json_of(invoke_cli("--kb", a, "--json", "sync", check=True))
    assert (synced["action"], synced["cascaded"], synced["unlinked"]) == (
        "rebased", {"102": ["shop.customers.name"]}, {})
    assert invoke_cli("--kb", a, "validate", check=True).stdout == "Checked 2 files: no problems.\n"
    assert git(a, "status", "--porcelain") == ""


def test_a_sync_that_fails_after_stripping_deleted_entities_leaves_the_clone_as_it_was(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    _bare, (a, b) = make_team_after(tmp_path, "refunds-deleted-on-a", _refunds_deleted_on_a)
    invoke_cli("--kb", b, "save", "Refund amounts are negative", "-e", "shop.refunds.amount", check=True)
    # A second memory committed by hand that no sync can fix: revalidation refuses after the strip.
    (b / "memories" / "7.yaml").write_text((b / "memories" / "101.yaml").read_text().replace(
        "id: '101'", "id: '7'").replace("shop.refunds.amount", "shop.nowhere"))
    git(b, "add", "memories/7.yaml")
    git(b, "commit", "-q", "-m", "by hand")
    head, status, file = git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain"), (b / "memories" / "101.yaml").read_text()
    refused = invoke_cli("--kb", b, "sync")
    assert refused.returncode == 1
    # The strip was made (only 7 is named), then undone with the rest.
    assert "shop.nowhere" in refused.stderr and "shop.refunds" not in refused.stderr
    assert "the repository is back as it was" in refused.stderr
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, status)
    assert (b / "memories" / "101.yaml").read_text() == file


def _both_edit_memory_1(invoke_cli: CliRunner, a: Path, b: Path) -> None:
    """Memory 1 saved by A and pulled by B, then edited by both; A's edit pushed first."""
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "Amounts are in cents (B)", check=True)
    invoke_cli("--kb", a, "update", "1", "--content", "Amounts are in cents (A)", check=True)
    invoke_cli("--kb", a, "sync", check=True)


def test_steps_typed_elsewhere_name_the_kb(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A sync run from another folder (the KB given by --kb, or found from a subfolder) gave steps
    that only worked in the KB's folder ('git fetch origin' outside any repository, 'git add
    memories/1.yaml' from memories/). They start in it now, and work as written from there."""
    _bare, (a, b) = make_team(tmp_path, folder="kb")
    _both_edit_memory_1(invoke_cli, a, b)
    steps = ("git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); edit memories/1.yaml to keep "
             "what both sides meant; git add memories/1.yaml; slayer-kb validate; slayer-kb rebase --continue (a "
             "later commit that stops says so again); slayer-kb sync.")
    found = json_of(invoke_cli("--json", "sync", cwd=b / "memories"))["error"]["message"]
    assert found.endswith(f"To merge by hand: cd {b}; {steps}")
    message = json_of(invoke_cli("--kb", "b/kb", "--json", "sync", cwd=tmp_path))["error"]["message"]
    assert message.endswith(f"To merge by hand: cd b/kb; {steps}")
    stops: list[str] = []
    one = (a / "memories" / "1.yaml").read_text().replace("(A)", "(A and B)")
    follow(tmp_path, invoke_cli, message, {"memories/1.yaml": one}, stops)
    assert [stop.split(";")[0] for stop in stops] == ["Your commits and origin/main both edited memories/1.yaml"]
    invoke_cli("--kb", "b/kb", "sync", check=True, cwd=tmp_path)
    assert json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))["learning"] == "Amounts are in cents (A and B)"


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_steps_after_a_cd_name_the_kb_where_slayer_kb_names_another(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """With $SLAYER_KB naming clone a, a conflict of clone b (--kb b) gave 'cd b; ... slayer-kb
    validate; slayer-kb rebase --continue; slayer-kb sync': each ran on clone a. The slayer-kb
    steps after the cd name the KB there (--kb .), and work as written."""
    _bare, (a, b) = make_team(tmp_path)
    _both_edit_memory_1(invoke_cli, a, b)
    git(b, "fetch", "-q", "origin")

    def with_a_named(*args: str | Path, **kwargs: object) -> CompletedProcess[str]:
        return invoke_cli(*args, env={"SLAYER_KB": "a"}, **kwargs)  # relative: from b it names b/a

    merge = json_of(with_a_named("--kb", "b", "--json", "merge", "origin/main", cwd=tmp_path))["error"]["message"]
    assert merge.endswith("To merge by hand: cd b; edit memories/1.yaml to keep what both sides meant; git add "
                          "memories/1.yaml; slayer-kb --kb . validate; git commit --no-edit; slayer-kb --kb . sync.")
    git(b, "merge", "--abort")
    message = json_of(with_a_named("--kb", "b", "--json", "sync", cwd=tmp_path))["error"]["message"]
    assert message.endswith(
        "To merge by hand: cd b; git fetch origin; slayer-kb --kb . rebase origin/main (it stops on the conflict); edit "
        "memories/1.yaml to keep what both sides meant; git add memories/1.yaml; slayer-kb --kb . validate; "
        "slayer-kb --kb . rebase --continue (a later commit that stops says so again); slayer-kb --kb . sync.")
    stops: list[str] = []
    one = (a / "memories" / "1.yaml").read_text().replace("(A)", "(A and B)")
    follow(tmp_path, with_a_named, message, {"memories/1.yaml": one}, stops)
    # The rebase's own stop, typed in b: its slayer-kb steps name b too.
    assert [stop.split(". To merge by hand: ")[1] for stop in stops] == [
        "edit memories/1.yaml to keep what both sides meant; git add memories/1.yaml; slayer-kb --kb . validate; "
        "slayer-kb --kb . rebase --continue (a later commit that stops says so again); slayer-kb --kb . sync."]
    assert git(b, "log", "-1", "--format=%s") == "memory: update 1 (learning)\n"
    assert json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))["learning"] == "Amounts are in cents (A and B)"
    assert git(a, "status", "--porcelain") == "" and git(a, "rev-parse", "HEAD") == git(a, "rev-parse", "origin/main")


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_validate_against_main_flags_a_link_to_an_entity_main_deleted_since(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """An agent's branch links shop.refunds.amount, whose model main deleted since: the file checks
    on the branch, where the model is still there, but a plain 'git merge' made a main that failed
    validate, and neither validate --against nor review said so. Both name the link and the fix,
    'slayer-kb merge origin/main', which strips it as the delete would have."""
    _bare, (reviewer, agent) = make_team(tmp_path)
    invoke_cli("--kb", agent, "sync", check=True)
    git(agent, "switch", "-q", "-c", "agent-b")
    invoke_cli("--kb", agent, "save", "Refund amounts are negative", "-e", "shop.refunds.amount", "-e",
               "shop.orders.refunds", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    invoke_cli("--kb", reviewer, "delete-model", "shop.refunds", check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(agent, "fetch", "-q", "origin")
    problem = ("memory 1 links 'shop.refunds.amount', which origin/main deleted from the catalog since this branch "
               "parted from it; merged as it is, the link would point at nothing. Run 'git -C b fetch origin && "
               "slayer-kb --kb b merge origin/main': it strips links to deleted entities, as the delete would have, in one commit")
    checked = invoke_cli("--kb", agent, "validate", "--against", "origin/main", cwd=tmp_path)
    assert (checked.returncode, checked.stdout) == (1, f"b/memories/1.yaml:1: {problem}\n"
                                                       "1 problem in 1 file (1 file checked)\n")
    checked = invoke_cli("--kb", agent, "--json", "validate", "--against", "origin/main", cwd=tmp_path)
    assert json_of(checked)["problems"] == [{"path": "b/memories/1.yaml", "line": 1, "message": problem, "kind": None}]
    review = invoke_cli("--kb", agent, "review", "origin/main", check=True, cwd=tmp_path).stdout
    assert review.endswith(f"### Problems\n\n- memories/1.yaml:1: {problem}\n")
    review = json_of(invoke_cli("--kb", agent, "--json", "review", "origin/main", check=True, cwd=tmp_path))
    assert review["problems"] == [f"memories/1.yaml:1: {problem}"]
    # What it warns of: merged as it is, main fails validate.
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--no-edit", "origin/agent-b")
    assert "shop.refunds" in invoke_cli("--kb", reviewer, "validate").stdout
    # The fix works as written, from where it was printed.
    fetch, fix = problem.split("'")[3].split(" && ")
    git(tmp_path / fetch.split()[2], *fetch.split()[3:])  # git -C b fetch origin
    merged = invoke_cli(*fix.split()[1:], check=True, cwd=tmp_path)
    assert merged.stdout == ("Merged origin/main; run slayer-kb --kb b sync to push.\n"
                             "  stripped entities deleted from the catalog: shop.refunds.amount from 1\n")
    step = merged.stdout.split("; run ")[1].split(" to push")[0]
    assert "Synced agent-b with origin" in invoke_cli(*step.split()[1:], check=True, cwd=tmp_path).stdout
    assert invoke_cli("--kb", agent, "validate", "--against", "origin/main", check=True).stdout == (
        "Checked 1 file: no problems.\n")


def test_a_model_delete_names_the_stale_example_query_and_the_clone_still_syncs(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # SLayer keeps an example query's text when the catalog drops what it names (search calls it
    # stale): one delete-model stopped every sync of the clone ("do not validate ... stale references").
    _bare, (a,) = make_team(tmp_path, clones=1)
    query = '{"source_model": "refunds", "measures": ["sum(amount)"]}'
    stale = json_of(invoke_cli("--kb", a, "--json", "save", "Refund totals", "--query", query, check=True))["memory_id"]
    tagged = json_of(invoke_cli("--kb", a, "--json", "save", "Refunds are net of fees", "-e", "shop.refunds.amount",
                                check=True))["memory_id"]
    deleted = invoke_cli("--kb", a, "delete-model", "shop.refunds", check=True)
    assert deleted.stdout == (
        f"Deleted model shop.refunds (commit {git(a, 'rev-parse', 'HEAD')[:12]}); stripped it from 2 memories: "
        f"{stale}, {tagged}\nstale example queries (they still name what was deleted; search warns on them): "
        f"{stale}; rewrite each query with 'slayer-kb edit ID', or drop the memory with 'slayer-kb forget ID'\n")
    synced = invoke_cli("--kb", a, "sync", cwd=tmp_path)  # typed elsewhere: the fix names the KB
    assert (synced.returncode, synced.stderr) == (0, "")
    assert synced.stdout == (
        "Synced main with origin: pushed, 0 pulled, 3 pushed.\n  note: stale example queries (they name what the "
        f"catalog no longer has; search warns on them): {stale}; rewrite each with 'slayer-kb --kb "
        f"{a.relative_to(tmp_path)} edit ID' or forget it\n")
    assert git(a, "rev-parse", "origin/main") == git(a, "rev-parse", "HEAD")
    # validate, a reviewer's lint, still reports it, with the fix.
    checked = invoke_cli("--kb", a, "validate")
    assert checked.returncode == 1
    assert checked.stdout.splitlines()[0].startswith(f"memories/{stale}.yaml:")
    assert f"attached query has stale references (Source model not found: 'refunds'.); fix or remove the query " \
           f"with 'slayer-kb edit {stale}'" in checked.stdout
    # Told apart by its kind, not its words (sync's revalidation reads the same field).
    problems = json_of(invoke_cli("--kb", a, "--json", "validate"))["problems"]
    assert [(p["path"], p["kind"]) for p in problems] == [(f"memories/{stale}.yaml", "stale_query")]


def _older_release_query(a: Path) -> str:
    """Memory 101 with an example query an older release took ('amount : sum'), committed and
    pushed by hand to a's origin; the problem validate names in it."""
    (a / "memories").mkdir()
    (a / "memories" / "101.yaml").write_text(
        "learning: Refund totals\nquery:\n  source_model: orders\n  measures:\n  - 'amount : sum'\n"
        "created_at: '2026-01-01T00:00:00Z'\n")
    git(a, "add", "memories/101.yaml")
    git(a, "commit", "-q", "-m", "memory: save 101 (an older release)")
    git(a, "push", "-q", "origin", "main")
    return ("memories/101.yaml:3: attached query is not a valid SlayerQuery (measures[0].formula: Invalid Mode-B "
            "expression 'amount : sum': invalid syntax (<unknown>, line 1); write 'amount:sum', with no spaces "
            "around an aggregation's colon); fix or remove the query with 'slayer-kb edit 101'")


def test_a_change_that_leaves_an_older_invalid_query_alone_still_syncs(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A teammate on an older release pushed 'amount : sum' (it took it); here only the title
    # changed, and sync refused the push: the query it names is the upstream's, untouched.
    _bare, (a,) = make_team(tmp_path, clones=1)
    problem = _older_release_query(a)
    assert invoke_cli("--kb", a, "update", "101", "--title", "clearer", check=True).stdout == "Updated memory 101\n"
    synced = invoke_cli("--kb", a, "sync")
    assert (synced.returncode, synced.stderr) == (0, "")
    assert synced.stdout == (
        "Synced main with origin: pushed, 0 pulled, 1 pushed.\n  warning: pushed an example query the upstream "
        f"already had, which this branch did not change: {problem}\n")
    assert git(a, "rev-parse", "origin/main") == git(a, "rev-parse", "HEAD")
    # A change of the query itself is checked as ever: refused, nothing pushed.
    invoke_cli("--kb", a, "update", "101", "--title", "clearer still", check=True)
    path = a / "memories" / "101.yaml"
    path.write_text(path.read_text().replace("'amount : sum'", "'amount : avg'"))
    git(a, "commit", "-q", "-am", "by hand")
    refused = invoke_cli("--kb", a, "sync")
    assert refused.returncode == 1
    assert "amount : avg" in refused.stderr and "nothing was pushed" in refused.stderr


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_merge_or_rebase_names_an_older_invalid_query_it_left_alone_as_sync_does(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Revalidation let the query through and named it, but merge and rebase dropped the name:
    their reply said nothing of what the sync after them warns of."""
    _bare, (a, b) = make_team(tmp_path)
    problem = _older_release_query(a)
    invoke_cli("--kb", b, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "update", "101", "--title", "clearer", check=True)
    git(a, "fetch", "-q", "origin")
    before = git(a, "rev-parse", "HEAD").strip()
    warning = (f"\n  warning: sync will push an example query origin/main already has, which this branch did not "
               f"change: {problem}\n")
    for command, said in (("merge", "Merged origin/main; run slayer-kb sync to push."),
                          ("rebase", "Rebased onto origin/main; run slayer-kb sync to push.")):
        assert invoke_cli("--kb", a, command, "origin/main", check=True).stdout == said + warning
        git(a, "reset", "-q", "--hard", before)
        shown = json_of(invoke_cli("--kb", a, "--json", command, "origin/main", check=True))
        assert (shown["untouched_queries"], shown["problems"]) == ([problem], []), command
        git(a, "reset", "-q", "--hard", before)


def test_a_model_moved_to_a_file_that_does_not_parse_is_not_taken_for_deleted(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Main moved shop.refunds to a new file with a YAML error in it: the model is unreadable, not
    deleted. A merge stripped its links for good (the old file gone, the new one's problem not
    among the files the diff changed); they stay, and validate names the file."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", b, "save", "Refund amounts are negative", "-e", "shop.refunds.amount", check=True)
    git(a, "mv", "models/shop/refunds.yaml", "models/shop/refund_facts.yaml")
    with (a / "models" / "shop" / "refund_facts.yaml").open("a") as moved:
        moved.write("  bad: [\n")
    git(a, "commit", "-q", "-am", "move the refunds model")
    git(a, "push", "-q", "origin", "main")
    git(b, "fetch", "-q", "origin")
    merged = json_of(invoke_cli("--kb", b, "--json", "merge", "origin/main", check=True))
    assert (merged["action"], merged["cascaded"]) == ("merged", {})
    assert json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))["entities"] == ["shop.refunds.amount"]
    assert "models/shop/refund_facts.yaml:7: catalog: invalid YAML" in invoke_cli("--kb", b, "validate").stdout
    # The merge names what the sync after it refuses to push, as that sync does (it said nothing).
    refused = invoke_cli("--kb", b, "sync")
    assert refused.returncode == 1
    assert merged["problems"] == refused.stderr.splitlines()[1:-1]
    assert [p.split(": ")[0] for p in merged["problems"]] == ["memories/1.yaml:3", "models/shop/refund_facts.yaml:7"]


# A KB folder whose name holds what paths in git's input and output, gitattributes patterns and
# shell words each spell their own way; one name, so its tests share one team's template.
ODD_FOLDER = '#our "team kb"\t[*?] \\ é!\nnotes'


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_one_memory_forgotten_on_both_clones_syncs_in_a_folder_named_with_a_space(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Sync reads the memories both sides changed from one 'git cat-file --batch', whose answer
    for a file gone at a side is 'REV:team kb/memories/1.yaml missing': three words, taken for a
    blob's header, and the second sync ended in a traceback (int('missing'))."""
    _bare, (a, b) = make_team(tmp_path, folder=ODD_FOLDER)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    # B saves first: the two forgets are not one commit.
    invoke_cli("--kb", b, "save", "Costs are in cents", "-e", "shop.orders.cost", check=True)
    for clone in (a, b):
        invoke_cli("--kb", clone, "forget", "1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    # Both forgot it: no change of memories/1.yaml to join, none named as merged.
    assert invoke_cli("--kb", b, "sync", check=True).stdout == "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
    assert git(b, "ls-tree", "-r", "--name-only", "origin/main", "memories/") == "memories/101.yaml\n"


def test_sync_merges_with_its_driver_in_a_folder_whose_name_gitattributes_must_quote(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The attributes line giving sync's merge driver the KB's files spelled a space in the
    folder's name 'team\\ kb', which git reads as the pattern 'team\\' and an attribute (a tab or
    a newline ended it too): the driver applied to nothing, and a sync that fell back to git's
    rebase refused, naming a '!merge' line no file has. Wildcards, quotes, backslashes and bytes
    outside ASCII must match only themselves. The rebase passes a topic key both clones revised
    (the driver merges it; git's line merge stops on it) and stops on two edits of a title."""
    _bare, (a, b) = make_team(tmp_path, folder=ODD_FOLDER)
    topic = ("--title", "Cache TTL", "--type", "decision", "--project", "api", "--topic-key", "decision/cache-ttl")
    invoke_cli("--kb", a, "save", "Cache TTL is 60 s", *topic, check=True)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for clone, side in ((b, "B"), (a, "A")):
        invoke_cli("--kb", clone, "save", f"Cache TTL is {side}", *topic, check=True)
        invoke_cli("--kb", clone, "update", "2", "--title", f"Cents ({side})", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    assert json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"] == (
        "Your commits and origin/main both edited memories/2.yaml; the repository is back as it was. To merge by "
        "hand: git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); edit memories/2.yaml to keep "
        "what both sides meant; git add memories/2.yaml; slayer-kb validate; slayer-kb rebase --continue (a later "
        "commit that stops says so again); slayer-kb sync.")


def test_a_rebase_folds_a_topic_key_both_clones_saved_as_sync_does(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Sync folds this clone's memory of a topic key the upstream saved first into the upstream's;
    a rebase by hand (a conflict's steps) left both memories holding the key, and the sync after
    it pushed them (its revalidation looks for a key's twins only among the files it pushes)."""
    _bare, (a, b) = make_team(tmp_path)
    topic = ("--title", "Retry budget", "--type", "decision", "--project", "api", "--topic-key", "decision/retry")
    invoke_cli("--kb", a, "save", "Retries: 3 with backoff", *topic, check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "Retries: 5 with jittered backoff", *topic, check=True)
    git(b, "fetch", "-q", "origin")
    rebased = invoke_cli("--kb", b, "rebase", "origin/main", check=True)
    assert rebased.stdout == ("Rebased onto origin/main; run slayer-kb sync to push.\n"
                              "  merged (same topic key): 101 into 1\n")
    assert git(b, "log", "-1", "--format=%s") == "memory: merge 101 into 1 (topic decision/retry)\n"
    kept = json_of(invoke_cli("--kb", b, "--json", "get", "1", check=True))
    assert (kept["learning"], kept["revision_count"]) == ("Retries: 5 with jittered backoff", 2)
    # The id is refused, naming both memories, as after a sync's fold.
    assert invoke_cli("--kb", b, "get", "101").stderr.startswith(
        "Error: Memory id '101' moved: 'slayer-kb rebase' merged this clone's memory 101 into 1, which the branch it "
        "was rebased onto holds under the same topic key; no memory has id '101' now.")
    invoke_cli("--kb", b, "sync", check=True)
    assert git(b, "ls-tree", "--name-only", "origin/main", "memories/") == "memories/1.yaml\n"


def test_a_merge_or_rebase_lets_go_a_memory_one_side_forgot_and_the_other_soft_forgot(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A ``forget`` on one side and a ``forget --soft`` on the other: both forgot it, and sync's
    replay lets it go. ``merge`` and ``rebase`` (git's, which read only a path git holds three
    versions of for a soft forget) stopped on "This branch forgot memories/1.yaml, which
    origin/main edited". Both ways round: A soft-forgets 1 and forgets 2; B and C the reverse."""
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    for text in ("Amounts are in cents", "Costs are in cents"):
        invoke_cli("--kb", a, "save", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (b, c):
        invoke_cli("--kb", clone, "sync", check=True)
    invoke_cli("--kb", a, "forget", "--soft", "1", check=True)
    invoke_cli("--kb", a, "forget", "2", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for clone in (b, c):
        invoke_cli("--kb", clone, "forget", "1", check=True)
        invoke_cli("--kb", clone, "forget", "--soft", "2", check=True)
        git(clone, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", b, "merge", "origin/main")
    assert (merged.returncode, merged.stdout, merged.stderr) == (
        0, "Merged origin/main; run slayer-kb sync to push.\n", "")
    rebased = invoke_cli("--kb", c, "rebase", "origin/main")
    assert (rebased.returncode, rebased.stdout, rebased.stderr) == (
        0, "Rebased onto origin/main; run slayer-kb sync to push.\n", "")
    for clone in (b, c):
        assert git(clone, "ls-files", "memories") == "" and git(clone, "status", "--porcelain") == ""
        invoke_cli("--kb", clone, "sync", check=True)
    assert git(c, "ls-tree", "-r", "--name-only", "origin/main", "memories/") == ""


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_merge_attribute_of_the_repositorys_own_is_named_before_anything_is_merged(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """git ranks a tracked .gitattributes and .git/info/attributes above the attributes file sync
    gives it: a 'merge=union' there would write a memory's keys twice. sync (from the upstream's
    tree, which its rebase checks out) and merge (from the work tree's) refuse before merging,
    naming the line; once it is gone, sync stops on the real conflict as ever. A line for some
    files only (memories/1.yaml) went unseen, and sync stopped on a duplicate key."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    (a / ".gitattributes").write_text("memories/*.yaml merge=union\n")
    git(a, "add", ".gitattributes")
    git(a, "commit", "-q", "-m", "union merges")
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", b, "update", "1", "--content", "Amounts are in cents (B)", check=True)
    invoke_cli("--kb", a, "update", "1", "--content", "Amounts are in cents (A)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    head = git(b, "rev-parse", "HEAD")
    refusal = ("The repository's gitattributes give {} {}, which git ranks above slayer-kb's merge driver, so git "
               "would not merge memories and sessions as records (union writes a memory's keys twice); nothing was "
               "merged. Remove that line from .gitattributes and commit the change (or from .git/info/attributes), "
               "then run the command again.")
    union = refusal.format("memories/*.yaml", "'merge=union'")
    assert json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"] == union
    assert json_of(invoke_cli("--kb", b, "--json", "merge", "origin/main"))["error"]["message"] == union
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")
    git(a, "rm", "-q", ".gitattributes")
    git(a, "commit", "-q", "-m", "slayer-kb merges memories")
    invoke_cli("--kb", a, "sync", check=True)
    # 'binary' unsets merge as '-merge' does; check-attr says only "unset", which the error
    # quoted as '-merge', a line the user then looked for in vain.
    for line in ("sessions/*.yaml -merge\n", "sessions/*.yaml binary\n"):
        (b / ".git" / "info" / "attributes").write_text(line)
        assert json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"] == refusal.format(
            "sessions/*.yaml", "merge unset (by a line such as '-merge' or 'binary')"), line
    # Lines that match no made-up name, only the files merged: each named all the same (merge reads
    # the work tree's .gitattributes, so b removes it as a did).
    git(b, "rm", "-q", ".gitattributes")
    git(b, "commit", "-q", "-m", "slayer-kb merges memories here too")
    for line in ("memories/[0-9]*.yaml merge=union\n", "memories/1.yaml merge=union\n"):
        (b / ".git" / "info" / "attributes").write_text(line)
        for command in (["sync"], ["merge", "origin/main"]):
            assert json_of(invoke_cli("--kb", b, "--json", *command))["error"]["message"] == refusal.format(
                "memories/1.yaml", "'merge=union'"), (line, command)
    (b / ".git" / "info" / "attributes").unlink()
    assert json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"].startswith(
        "Your commits and origin/main both edited memories/1.yaml;")


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_merge_attribute_on_a_file_neither_side_wrote_stops_no_merge(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """git hands the KB's merge driver only files a commit of either side wrote since they parted:
    merge and rebase asked git's attributes of every memory and session file the upstream holds (a
    ``check-attr`` of them all, after an ``ls-files`` of them all), and refused a line for a file
    git never merges. They ask of the files those commits wrote (and a made-up one in each folder,
    for a line of the whole folder: the test above), in one ``check-attr`` and no ``ls-files``."""
    _bare, (a, b) = make_team(tmp_path)
    for learning in ("Amounts are in cents", "Refunds are negative rows", "Taxes are included"):
        invoke_cli("--kb", a, "save", learning, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", b, "update", "2", "--content", "Refunds are rows with negative amounts", check=True)
    (b / ".git" / "info" / "attributes").write_text("memories/3.yaml merge=union\n")
    invoke_cli("--kb", a, "update", "1", "--content", "Amounts are in cents (A)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    before = git(b, "rev-parse", "HEAD").strip()
    for command, said in (("merge", "Merged"), ("rebase", "Rebased onto")):
        git(b, "reset", "-q", "--hard", before)  # the branch as it was before the merge
        with traced_git(tmp_path) as runs:
            done = invoke_cli("--kb", b, command, "origin/main")
        assert (done.returncode, done.stdout, done.stderr) == (
            0, f"{said} origin/main; run slayer-kb sync to push.\n", ""), command
        assert (len(runs("check-attr")), runs("ls-files -z")) == (1, []), command
        assert git(b, "show", "HEAD:memories/1.yaml").startswith("learning: Amounts are in cents (A)\n")
        assert git(b, "show", "HEAD:memories/2.yaml").startswith("learning: Refunds are rows with negative amounts\n")


def test_a_sync_reads_its_branch_and_its_upstreams_tip_from_git_s_files(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A sync asked git for its branch (symbolic-ref) and for the upstream as the last fetch saw
    # it (rev-parse): one process each, which reading .git/HEAD and the ref's file answers.
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", b, "save", "Shipping fees include VAT", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    with traced_git(tmp_path) as runs:
        synced = json_of(invoke_cli("--kb", a, "--json", "sync", check=True))
    assert (synced["branch"], synced["pulled"], synced["pushed"]) == ("main", 1, 1)
    assert git(a, "rev-parse", "HEAD") == git(a, "rev-parse", "origin/main")
    # The KB's open asks where the repository is; nothing else is asked of rev-parse.
    assert ([run.split()[1] for run in runs("rev-parse")], runs("symbolic-ref")) == (["--show-toplevel"], [])


UNION = ("The repository's gitattributes give {} 'merge=union', which git ranks above slayer-kb's merge driver, so "
         "git would not merge memories and sessions as records (union writes a memory's keys twice); nothing was "
         "merged. Remove that line from .gitattributes and commit the change (or from .git/info/attributes), then "
         "run the command again.")


def test_a_merge_attribute_on_a_file_a_replayed_commit_wrote_and_put_back_refuses_a_rebase(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A rebase replays each commit: an edit of a memory this branch later reverted (its net change
    nothing) is merged with the upstream's edit of it all the same. The check asked only of the
    files both sides' net changes held, passed a union line for it, and the rebase wrote the
    memory's learning three times; it refuses, naming the line."""
    _bare, (a, b) = make_team(tmp_path)
    for learning in ("Amounts are in cents", "Refunds are negative rows"):
        invoke_cli("--kb", a, "save", learning, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", b, "update", "2", "--content", "Refunds are rows with negative amounts", check=True)
    git(b, "revert", "--no-edit", "HEAD")
    (b / ".git" / "info" / "attributes").write_text("memories/2.yaml merge=union\n")
    invoke_cli("--kb", a, "update", "2", "--content", "Refunds are negative rows (A)", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    head = git(b, "rev-parse", "HEAD")
    done = invoke_cli("--kb", b, "rebase", "origin/main")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {UNION.format('memories/2.yaml')}\n")
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")


def test_a_merge_attribute_on_the_name_one_side_moved_a_memory_to_refuses_a_merge(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """git merges a file one side renamed (git mv memories/2.yaml memories/7.yaml) and the other
    edited under the new name, with that name's attributes: the check asked only of the names
    both sides wrote (2.yaml), and the merge wrote 7.yaml's description twice. It refuses."""
    _bare, (a, b) = make_team(tmp_path)
    learning = "Refunds are negative rows, recorded when refunded, in the order's currency, never converted"
    invoke_cli("--kb", a, "save", learning, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)

    def describe(clone: Path, name: str, what: str) -> None:
        path = clone / "memories" / name
        path.write_text(path.read_text().replace("entities:", f"description: {what}\nentities:"))
        git(clone, "commit", "-qam", what)

    git(b, "mv", "memories/1.yaml", "memories/7.yaml")
    describe(b, "7.yaml", "refunds (B)")
    (b / ".git" / "info" / "attributes").write_text("memories/7.yaml merge=union\n")
    describe(a, "1.yaml", "refunds (A)")
    git(a, "push", "-q", "origin", "HEAD")
    git(b, "fetch", "-q", "origin")
    head = git(b, "rev-parse", "HEAD")
    done = invoke_cli("--kb", b, "merge", "origin/main")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {UNION.format('memories/7.yaml')}\n")
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")


def test_a_merge_attribute_refuses_a_criss_cross_merge(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Two branches that each merged the other have two merge bases, which git first merges into
    one, memory 1 with them: the check asked of no file of theirs (neither side wrote memory 1 on
    the whole since the one base it took), and the merge wrote memory 1's description twice. With
    more than one merge base every memory and session file is asked, and it refuses."""
    _bare, (b,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", b, "save", "Refunds are negative rows", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)

    def describe(what: str, name: str = "1.yaml") -> str:
        path = b / "memories" / name
        path.write_text(path.read_text().replace("entities:", f"description: {what}\nentities:"))
        git(b, "commit", "-qam", what)
        return git(b, "rev-parse", "HEAD").strip()

    def merge_keeping_ours(other: str) -> None:
        git(b, "merge", "-q", "-s", "ours", "--no-edit", other)

    git(b, "switch", "-q", "-c", "x")
    x1 = describe("by X")
    git(b, "switch", "-q", "-c", "y", "HEAD~1")
    y1 = describe("by Y")
    merge_keeping_ours(x1)
    git(b, "switch", "-q", "x")
    merge_keeping_ours(y1)
    git(b, "switch", "-q", "y")
    describe("cents", "2.yaml")
    git(b, "switch", "-q", "x")
    assert len(git(b, "merge-base", "--all", "x", "y").split()) == 2
    (b / ".git" / "info" / "attributes").write_text("memories/1.yaml merge=union\n")
    head = git(b, "rev-parse", "HEAD")
    done = invoke_cli("--kb", b, "merge", "y")
    assert (done.returncode, done.stdout, done.stderr) == (1, "", f"Error: {UNION.format('memories/1.yaml')}\n")
    assert (git(b, "rev-parse", "HEAD"), git(b, "status", "--porcelain")) == (head, "")


def test_a_rebase_strips_links_from_a_memory_a_sparse_checkout_leaves_out(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """This branch's memory 101 links memory 1, which the other side forgot, and a sparse checkout
    leaves 101 out: the rebase said '101.yaml:1: no such file' (sync would refuse to push it) and
    kept the link. It strips it as in a full checkout, and leaves the file out."""
    _bare, a, b = _team_holding_memory_1(tmp_path)
    invoke_cli("--kb", b, "save", "See memory 1 for tax", "-e", "memory:1", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "forget", "1", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    git(b, "update-index", "-q", "--refresh")  # a copied clone's stat data, or git keeps the file
    git(b, "sparse-checkout", "set", "--no-cone", "/*", f"!/memories/{BLOCK + 1}.yaml")
    rebased = invoke_cli("--kb", b, "rebase", "origin/main")
    assert (rebased.returncode, rebased.stderr) == (0, ""), rebased.stderr
    assert rebased.stdout.splitlines()[1:] == [f"  stripped links to forgotten memories: memory:1 from {BLOCK + 1}"], (
        rebased.stdout)  # and no "sync will refuse to push these": "no such file"
    assert "memory:1" not in git(b, "show", f"HEAD:memories/{BLOCK + 1}.yaml")
    assert not (b / "memories" / f"{BLOCK + 1}.yaml").exists()
    assert (git(b, "ls-files", "-v", f"memories/{BLOCK + 1}.yaml"), git(b, "status", "--porcelain")) == (
        f"S memories/{BLOCK + 1}.yaml\n", "")


def test_a_sync_checks_a_memory_whose_deletion_a_mark_hides_as_head_holds_it(tmp_path: Path,
                                                                            invoke_cli: CliRunner) -> None:
    """A memory the work tree lacks is read as HEAD holds it, by the link strip and by the check
    after it alike: the check refused this branch's memory whose deletion git's index hides
    (assume-unchanged) as 'no such file', telling the user to edit it, though the push holds it
    whole. The hidden deletion stays the user's, uncommitted."""
    bare, a, b = _team_holding_memory_1(tmp_path)
    invoke_cli("--kb", b, "save", "Totals include shipping", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "save", "Refunds are negative rows", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    path = f"memories/{BLOCK + 1}.yaml"
    git(b, "update-index", "--assume-unchanged", path)
    (b / path).unlink()
    synced = invoke_cli("--kb", b, "sync")
    assert (synced.returncode, synced.stdout, synced.stderr) == (
        0, "Synced main with origin: rebased, 1 pulled, 1 pushed.\n", ""), synced.stderr
    assert "Totals include shipping" in git(bare, "show", f"main:{path}")
    assert (git(b, "ls-files", "-v", path), git(b, "status", "--porcelain"), (b / path).exists()) == (
        f"h {path}\n", "", False)


@pytest.mark.slow  # a sibling of its kind runs by default (docs/testing.md, "What is in -m slow")
def test_a_sparse_checkout_of_a_monorepo_syncs_and_rebases(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A sparse checkout marks every file it leaves out skip-worktree: sync, rebase, merge and
    renumber --rewrite refused ("../README.md is marked skip-worktree ... would rewrite it"), though they
    rewrite no such file. Only a file slayer-kb rewrites is refused for its mark."""
    _bare, (a, b) = make_team(tmp_path, folder="kb")
    top = a.parent
    git(top, "update-index", "-q", "--refresh")  # a copied clone's stat data, or git keeps the file
    git(top, "sparse-checkout", "set", "--no-cone", "/kb/")
    assert not (top / "README.md").exists() and git(top, "ls-files", "-v", "README.md") == "S README.md\n"
    invoke_cli("--kb", b, "save", "From b", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "save", "From a", "-e", "shop.orders.amount", check=True)
    synced = invoke_cli("--kb", a, "sync")
    assert (synced.returncode, synced.stderr) == (0, ""), synced.stderr
    assert synced.stdout == "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
    invoke_cli("--kb", b, "save", "Again from b", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "save", "Again from a", "-e", "shop.orders.amount", check=True)
    git(top, "fetch", "-q")
    rebased = invoke_cli("--kb", a, "rebase", "origin/main")
    assert (rebased.returncode, rebased.stderr) == (0, ""), rebased.stderr
    assert git(top, "rev-parse", "HEAD~1") == git(top, "rev-parse", "origin/main")
    assert git(top, "status", "--porcelain") == "" and not (top / "README.md").exists()


@pytest.mark.parametrize("merge_tree", default_first([pytest.param(True, id="merge-tree"), pytest.param(False, id="merge-file")]))
def test_a_rename_against_an_edit_is_a_stop_only_where_git_cannot_follow_it(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, merge_tree: bool) -> None:
    """A branch renames memories/1.yaml (git mv) while main edits it: git's merge follows the
    rename and merges cleanly, but validate --against called it a deletion against an edit. With
    merge-tree (git 2.38+) it is git's answer; before, a merge-file a file cannot follow a rename
    (docs/teams.md says so)."""
    if not merge_tree:
        monkeypatch.setattr(plainmerge, "merge_tree_stops", lambda *args: None)  # as git < 2.38 answers
    _bare, (a,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    git(a, "switch", "-q", "-c", "side")
    git(a, "mv", "memories/1.yaml", "memories/150.yaml")
    git(a, "commit", "-q", "-m", "a rename")
    git(a, "switch", "-q", "main")
    invoke_cli("--kb", a, "update", "1", "--description", "On main", check=True)
    git(a, "switch", "-q", "side")
    checked = invoke_cli("--kb", a, "validate", "--against", "main")
    stop = "memories/1.yaml:1: main wrote this memory too since this branch parted from it"
    assert (stop in checked.stdout) is not merge_tree, checked.stdout
    git(a, "merge", "-q", "--no-edit", "main")  # raises on a conflict
    assert "description: On main\n" in (a / "memories" / "150.yaml").read_text()


@pytest.mark.parametrize("saved", [
    ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00Z"),  # in one second: B's, applied last, is later
    ("2026-12-01T10:00:00Z", "2026-12-01T10:00:00.5Z"),  # '.5Z' sorts before 'Z' as text
])
def test_a_topic_key_two_clones_saved_keeps_the_later_saves_time_as_its_update(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, saved: tuple[str, str]) -> None:
    # A saves under a new key, B under the same key after it, then both sync: sync kept B's text
    # and counted two revisions, yet showed no updated_at (the memory looked unchanged since A's
    # save, as old as A's text, so a later merge could prefer an older revision to it).
    _bare, (a, b) = make_team(tmp_path)
    topic = ("--title", "Cache TTL", "--type", "decision", "--project", "api", "--topic-key", "decision/cache-ttl")
    for root, at in zip((a, b), saved, strict=True):
        monkeypatch.setattr(observations, "utc_now", lambda at=at: at)
        invoke_cli("--kb", root, "save", f"Cache TTL from {root.name}", *topic, check=True)
    for root in (a, b, a):
        invoke_cli("--kb", root, "sync", check=True)
    for root in (a, b):
        shown = json_of(invoke_cli("--kb", root, "--json", "get", "1", check=True))
        assert {key: shown[key] for key in ("learning", "revision_count", "created_at", "updated_at")} == {
            "learning": "Cache TTL from b", "revision_count": 2, "created_at": saved[0], "updated_at": saved[1]}


def test_one_named_id_created_on_two_clones_is_said_so_and_both_can_be_kept(
        tmp_path: Path, invoke_cli: CliRunner, one_second: None) -> None:
    """Two clones save ``--id kb.rule`` with different texts: the second sync said "both edited"
    and to edit the file to keep what both meant. It says "both created", and its steps keep both
    as two memories, this clone's under a new id, pasted into a shell as written (a rebase's
    ``--theirs`` is this clone's version; a merge's is the other's). The new id is free on both
    sides: sync named ``kb.rule-2``, which the upstream had (its work tree, put back, lacked it),
    and the steps moved this clone's text over it, which the sync then pushed; the steps refuse
    to move onto a file that is there. (Saved in one second, one created_at: in two, the sync
    refuses first, test_team_loose_ends.py.)"""
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    invoke_cli("--kb", a, "save", "--id", "kb.rule-2", "Rule two", "-e", "shop.orders.amount", check=True)
    for clone, text in ((a, "Refunds are net of fees"), (b, "Refunds include fees"), (c, "Refunds are gross")):
        invoke_cli("--kb", clone, "save", "--id", "kb.rule", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    start = "To merge by hand: git fetch origin; slayer-kb rebase origin/main (it stops on the conflict); "
    keep_both = ("(or keep both, yours under a new id: test ! -e memories/kb.rule-3.yaml && git checkout {theirs} "
                 "memories/kb.rule.yaml && mv memories/kb.rule.yaml memories/kb.rule-3.yaml && git checkout {ours} "
                 "memories/kb.rule.yaml && git add memories/kb.rule-3.yaml); git add memories/kb.rule.yaml; ")
    message = json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"]
    assert message == (
        "Your commits and origin/main both created memories/kb.rule.yaml; the repository is back as it was. "
        + start + "edit memories/kb.rule.yaml to keep what both sides meant "
        + keep_both.format(theirs="--theirs", ours="--ours") + "slayer-kb validate; slayer-kb rebase --continue "
        "(a later commit that stops says so again); slayer-kb sync.")
    git(b, "fetch", "-q", "origin")
    assert invoke_cli("rebase", "origin/main", cwd=b).returncode == 1
    steps = message.split("yours under a new id: ")[1].split(")")[0]
    there = b / "memories" / "kb.rule-3.yaml"
    there.write_text("a file of mine\n")
    assert subprocess.run(["sh", "-c", steps], cwd=b, capture_output=True).returncode == 1
    assert there.read_text() == "a file of mine\n" and "<<<<<<<" in (b / "memories" / "kb.rule.yaml").read_text()
    there.unlink()
    subprocess.run(["sh", "-c", steps], cwd=b, check=True)
    git(b, "add", "memories/kb.rule.yaml")
    invoke_cli("validate", cwd=b, check=True)
    invoke_cli("rebase", "--continue", cwd=b, check=True)
    invoke_cli("sync", cwd=b, check=True)
    assert git(b, "show", "origin/main:memories/kb.rule.yaml").startswith("learning: Refunds are net of fees\n")
    assert git(b, "show", "origin/main:memories/kb.rule-2.yaml").startswith("learning: Rule two\n")
    assert git(b, "show", "origin/main:memories/kb.rule-3.yaml").startswith("learning: Refunds include fees\n")
    # A merge names the sides the other way round; the new id is the next one free.
    git(c, "fetch", "-q", "origin")
    merged = json_of(invoke_cli("--json", "merge", "origin/main", cwd=c))["error"]["message"]
    steps = keep_both.format(theirs="--ours", ours="--theirs").replace("kb.rule-3", "kb.rule-4")
    assert merged.startswith("This branch and origin/main both created memories/kb.rule.yaml; ")
    assert f"edit memories/kb.rule.yaml to keep what both sides meant {steps}" in merged, merged


def test_ids_two_clones_gave_in_two_letter_cases_are_renamed_by_the_steps_given(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Clone a saves kb.case, clone b KB.Case (and a memory linking it): b's sync refuses (the two
    collide on macOS and Windows checkouts) and said "rename one", with 'edit ID' to do it, which
    cannot rename. The problem gives the rename, links and all, which runs as typed; then the sync
    goes through."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "--id", "kb.case", "Case one", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "save", "--id", "KB.Case", "Case two", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "save", "--id", "kb.about", "About case two", "-e", "memory:KB.Case", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    refused = invoke_cli("--kb", b, "sync")
    problem = refused.stderr.splitlines()[1]
    assert (refused.returncode, problem) == (1, (
        "memories/KB.Case.yaml:1: id 'KB.Case' differs only in letter case from kb.case: they collide on macOS and "
        "Windows checkouts; rename one: slayer-kb rename KB.Case KB.Case-2 (it rewrites the memory:KB.Case links; "
        "where the two share one file, as on macOS, run git checkout HEAD -- memories/KB.Case.yaml before it and git "
        "checkout HEAD -- memories/kb.case.yaml after it)"))
    step = problem.split("rename one: ")[1].split(" (it rewrites")[0]
    invoke_cli(*shlex.split(step)[1:], cwd=b, check=True)
    invoke_cli("--kb", b, "sync", check=True)
    assert git(b, "ls-tree", "--name-only", "origin/main", "memories/").split() == [
        "memories/KB.Case-2.yaml", "memories/kb.about.yaml", "memories/kb.case.yaml"]
    assert json_of(invoke_cli("--kb", b, "--json", "get", "kb.about", check=True))["entities"] == ["memory:KB.Case-2"]
    assert json_of(invoke_cli("--kb", b, "--json", "get", "KB.Case-2", check=True))["learning"] == "Case two"


@pytest.mark.parametrize("left_out", default_first(["KB.Case", "kb.case"]))
def test_ids_in_two_letter_cases_clash_where_a_sparse_checkout_leaves_one_out(
        tmp_path: Path, invoke_cli: CliRunner, left_out: str) -> None:
    """As above, but b's sparse checkout leaves one of the two files out: the check after the
    rebase knew only the work tree's ids, and the sync pushed the clash."""
    bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "--id", "kb.case", "Case one", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "save", "--id", "KB.Case", "Case two", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "update-index", "-q", "--refresh")  # a copied clone's stat data, or git keeps the file
    git(b, "sparse-checkout", "set", "--no-cone", "/*", f"!/memories/{left_out}.yaml")
    refused = invoke_cli("--kb", b, "sync")
    assert (refused.returncode, refused.stderr.splitlines()[1]) == (1, (
        "memories/KB.Case.yaml:1: id 'KB.Case' differs only in letter case from kb.case: they collide on macOS and "
        "Windows checkouts; rename one: slayer-kb rename KB.Case KB.Case-2 (it rewrites the memory:KB.Case links; "
        "where the two share one file, as on macOS, run git checkout HEAD -- memories/KB.Case.yaml before it and git "
        "checkout HEAD -- memories/kb.case.yaml after it)")), refused.stderr
    assert git(bare, "ls-tree", "--name-only", "main", "memories/").split() == ["memories/kb.case.yaml"]


@pytest.mark.parametrize("ours", default_first(["session", "memory"]))
def test_a_syncs_check_lists_heads_ids_only_where_a_file_may_be_left_out(
        tmp_path: Path, invoke_cli: CliRunner, ours: str) -> None:
    """The check after sync's rebase listed HEAD's memory ids (one git ls-tree, 0.4 s at 100,000
    memories) on every diverged sync: with no memory of the branch's to check (a session's
    commit alone), and in a checkout that leaves no file out, where the work tree's ids are all."""
    _bare, (a, b) = make_team(tmp_path)
    if ours == "session":
        invoke_cli("--kb", b, "session-start", "s1", "--project", "p", check=True)
    else:
        invoke_cli("--kb", b, "save", "B.", "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "save", "A.", "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    with traced_git(tmp_path) as runs:
        synced = invoke_cli("--kb", b, "sync")
    assert (synced.returncode, synced.stdout, synced.stderr) == (
        0, "Synced main with origin: rebased, 1 pulled, 1 pushed.\n", "")
    assert runs("ls-tree") == []


def test_keeping_both_in_a_syncs_merge_takes_an_id_free_upstream(tmp_path: Path, invoke_cli: CliRunner, one_second: None) -> None:
    """b's branch holds a merge, so its sync merges the upstream, which has kb.rule and
    kb.rule-2: the keep-both steps named kb.rule-2, free only in the work tree sync had put back."""
    _bare, (a, b) = make_team(tmp_path)
    for memory_id in ("kb.rule-2", "kb.rule"):
        invoke_cli("--kb", a, "save", "--id", memory_id, f"From a: {memory_id}", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "save", "--id", "kb.rule", "From b", "-e", "shop.orders.amount", check=True)
    git(b, "switch", "-q", "-c", "side")
    git(b, "commit", "-q", "--allow-empty", "-m", "side")
    git(b, "switch", "-q", "main")
    git(b, "merge", "-q", "--no-ff", "--no-edit", "side")
    message = json_of(invoke_cli("--kb", b, "--json", "sync"))["error"]["message"]
    assert message.startswith("This branch and origin/main both created memories/kb.rule.yaml; "), message
    assert ("(or keep both, yours under a new id: test ! -e memories/kb.rule-3.yaml && git checkout --ours "
            "memories/kb.rule.yaml && mv memories/kb.rule.yaml memories/kb.rule-3.yaml && git checkout --theirs "
            "memories/kb.rule.yaml && git add memories/kb.rule-3.yaml)") in message, message


def test_a_later_change_of_a_memory_kept_under_a_new_id_is_moved_there(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Clone b saves kb.rule twice and forgets it, and a saved kb.rule too: b's rebase stops on the
    first save (both created), whose steps keep b's under kb.rule-2; then on the second, said as
    "both edited", to be merged into a's memory, which the first steps kept apart; then on the
    forget, whose steps forgot a's. Each says the change is to the memory kept as kb.rule-2, and
    its steps move it there."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "--id", "kb.rule", "Refunds are net of fees", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    for text in ("Refunds include fees", "Refunds include fees and tax"):
        invoke_cli("--kb", b, "save", "--id", "kb.rule", text, "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "forget", "kb.rule", check=True)
    git(b, "fetch", "-q", "origin")
    first = json_of(invoke_cli("--json", "rebase", "origin/main", cwd=b))["error"]["message"]
    subprocess.run(["sh", "-c", first.split("yours under a new id: ")[1].split(")")[0]], cwd=b, check=True)
    git(b, "add", "memories/kb.rule.yaml")
    second = json_of(invoke_cli("--json", "rebase", "--continue", cwd=b))["error"]["message"]
    steps = ("git checkout --theirs memories/kb.rule.yaml && mv memories/kb.rule.yaml memories/kb.rule-2.yaml && git "
             "checkout --ours memories/kb.rule.yaml && git add memories/kb.rule.yaml memories/kb.rule-2.yaml")
    then = ("slayer-kb validate; slayer-kb rebase --continue (a later commit that stops says so again); "
            "slayer-kb sync.")
    assert second == (
        "Your commits changed memories/kb.rule.yaml again after both sides created it, and an earlier commit's steps "
        "kept your version as memories/kb.rule-2.yaml; the rebase stopped at commit 2 of 3 ('memory: save kb.rule'), "
        "and slayer-kb rebase --abort would put the branch back as it was. To merge by hand: move this change there: "
        f"{steps} (or edit memories/kb.rule.yaml to keep what both sides meant, then git add memories/kb.rule.yaml); "
        + then)
    subprocess.run(["sh", "-c", steps], cwd=b, check=True)
    assert "Refunds include fees and tax" in (b / "memories" / "kb.rule-2.yaml").read_text()
    third = json_of(invoke_cli("--json", "rebase", "--continue", cwd=b))["error"]["message"]
    steps = "git add memories/kb.rule.yaml && git rm -q memories/kb.rule-2.yaml"
    assert third == (
        "Your commits forgot memories/kb.rule.yaml after both sides created it, and an earlier commit's steps kept "
        "your version as memories/kb.rule-2.yaml; the rebase stopped at commit 3 of 3 ('memory: forget kb.rule'), "
        "and slayer-kb rebase --abort would put the branch back as it was. To merge by hand: forget that one "
        f"instead: {steps} (or git rm memories/kb.rule.yaml to forget origin/main's); " + then)
    subprocess.run(["sh", "-c", steps], cwd=b, check=True)
    invoke_cli("rebase", "--continue", cwd=b, check=True)
    invoke_cli("sync", cwd=b, check=True)
    assert git(b, "ls-tree", "--name-only", "origin/main", "memories/").split() == ["memories/kb.rule.yaml"]
    assert git(b, "show", "origin/main:memories/kb.rule.yaml").startswith("learning: Refunds are net of fees\n")
