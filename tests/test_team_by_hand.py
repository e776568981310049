"""The team workflow of docs/teams.md typed as a new user would: clones of one bare remote,
every ``slayer-kb`` command run in this process (``invoke_cli``: what a process prints, as
test_in_process.py checks), git as git, and the steps an error gives followed as written."""

from __future__ import annotations

import subprocess
from pathlib import Path

from testing import CliRunner, git, json_of, make_team


def conflicting_forget(tmp_path: Path, invoke_cli: CliRunner, forgets: str) -> tuple[Path, Path, str]:
    """Clone a saves memory 1 and both clones hold it; then one clone edits it and syncs first
    while the clone named ``forgets`` forgets it. Returns (the clone that edited, the clone whose
    sync stopped, its sync's error message)."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", a, "save", "Refund reasons are free text", "-e", "shop.refunds.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    forgetter, editor = (a, b) if forgets == "a" else (b, a)
    first, second = (editor, forgetter) if forgets == "a" else (forgetter, editor)
    invoke_cli("--kb", editor, "update", "1", "--content", "Refund reasons: free text, grouped by hand", check=True)
    invoke_cli("--kb", forgetter, "forget", "1", check=True)
    invoke_cli("--kb", first, "sync", check=True)
    stopped = invoke_cli("--kb", second, "--json", "sync")
    assert stopped.returncode == 1
    return first, second, json_of(stopped)["error"]["message"]


def follow_the_steps(here: Path, invoke_cli: CliRunner, keep: list[str]) -> None:
    """The message's steps up to the sync: fetch, a rebase that stops on the file, the git
    command that keeps one side, validate, and the rebase continued."""
    git(here, "fetch", "-q", "origin")
    assert subprocess.run(["git", "rebase", "origin/main"], cwd=here, capture_output=True).returncode == 1
    git(here, *keep)
    invoke_cli("--kb", here, "validate", check=True)
    git(here, "-c", "core.editor=true", "rebase", "--continue")


def test_a_forget_against_an_edit_names_the_forget_and_its_two_ways_out(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _editor, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="a")
    assert message == (
        "Your commits forgot memories/1.yaml, which origin/main edited; the repository is back as it was. "
        "To merge by hand: git fetch origin; git rebase origin/main; git rm memories/1.yaml to keep it "
        "forgotten (or git add memories/1.yaml to keep origin/main's edit); slayer-kb validate; git rebase "
        "--continue; slayer-kb sync."
    )
    # The steps work as written, keeping the forget.
    follow_the_steps(here, invoke_cli, ["rm", "-q", "memories/1.yaml"])
    assert "pushed" in invoke_cli("--kb", here, "sync", check=True).stdout
    assert not (here / "memories" / "1.yaml").exists()
    assert git(here, "ls-tree", "--name-only", "origin/main", "memories/") == ""


def test_an_edit_against_a_forget_upstream_names_the_forget(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _forgetter, here, message = conflicting_forget(tmp_path, invoke_cli, forgets="b")
    assert message == (
        "origin/main forgot memories/1.yaml, which your commits edited; the repository is back as it was. "
        "To merge by hand: git fetch origin; git rebase origin/main; git add memories/1.yaml to keep your "
        "edit (or git rm memories/1.yaml to let it go); slayer-kb validate; git rebase --continue; "
        "slayer-kb sync."
    )
    # The steps work as written, keeping the edit.
    follow_the_steps(here, invoke_cli, ["add", "memories/1.yaml"])
    invoke_cli("--kb", here, "sync", check=True)
    shown = json_of(invoke_cli("--kb", here, "--json", "get", "1", check=True))
    assert shown["learning"] == "Refund reasons: free text, grouped by hand"
    assert "memories/1.yaml" in git(here, "ls-tree", "--name-only", "origin/main", "memories/")


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
