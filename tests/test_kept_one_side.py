"""What a reviewer's plain-git resolution of a conflict leaves, and what slayer-kb says of it: a
merge that kept one side's memory file whole (``git checkout --theirs``, a forge's "accept
incoming"), which ``log`` lists with the side it dropped though git's default history
simplification hides both (ops/memorylog.py); a memory file left unreadable, which the sync that
pulls it names (syncreport.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from testing import CliRunner, git, make_team, make_team_after

pytestmark = pytest.mark.typed_in_the_kb


def _saved_on_two_branches(kbs: list[Path]) -> None:
    """Agents a and b each save a memory as ``kb.conventions`` on a branch of their own and
    push it, in two seconds (``created_at`` tells two memories apart); the reviewer merges a's."""
    from testing import in_process_runner, in_the_kb, next_second

    invoke_cli = in_the_kb(in_process_runner())
    a, b, reviewer = kbs
    for kb, who in ((a, "a"), (b, "b")):
        git(kb, "switch", "-q", "-c", f"agent-{who}")
        invoke_cli("--kb", kb, "save", f"{who} conventions", "-e", "shop.orders.qty", "--id", "kb.conventions",
                   check=True)
        invoke_cli("--kb", kb, "sync", check=True)
        next_second()
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge a")


def _two_saves_one_id(kbs: list[Path]) -> None:
    """``_saved_on_two_branches``, then the reviewer merges b's keeping b's file (``git checkout
    --theirs``)."""
    _saved_on_two_branches(kbs)
    reviewer = kbs[2]
    stopped = subprocess.run(["git", "merge", "--no-ff", "origin/agent-b", "-m", "Merge b"], cwd=reviewer,
                             capture_output=True, text=True)
    assert stopped.returncode == 1 and "kb.conventions.yaml" in stopped.stdout, stopped
    git(reviewer, "checkout", "-q", "--theirs", "memories/kb.conventions.yaml")
    git(reviewer, "add", "-A")
    git(reviewer, "commit", "-q", "--no-edit")
    git(reviewer, "push", "-q", "origin", "main")


def test_log_lists_the_save_a_merge_dropped_and_the_merge(tmp_path: Path, invoke_cli: CliRunner) -> None:
    _bare, (a, _b, reviewer) = make_team_after(tmp_path, "two saves one id, theirs kept", _two_saves_one_id,
                                              clones=3)
    merge, mine, theirs = (git(reviewer, "rev-parse", rev).strip() for rev in ("HEAD", "HEAD^1^2", "HEAD^2"))
    git(a, "switch", "-q", "main")
    invoke_cli("--kb", a, "sync", check=True)

    def head(sha: str) -> str:
        full, date, who = git(a, "log", "-1", "--format=%H%n%aI%n%an <%ae>", sha).splitlines()
        return f"{full[:12]} {date} {who}"

    printed = invoke_cli("--kb", a, "log", "kb.conventions", check=True).stdout
    assert printed == (
        f"{head(merge)}\n    Merge b\n"
        f"    kept {theirs[:12]}'s version whole, dropping {mine[:12]}'s "
        f"(see 'slayer-kb show kb.conventions --rev {mine[:12]}')\n"
        f"{head(theirs)}\n    memory: save kb.conventions\n"
        f"{head(mine)}\n    memory: save kb.conventions\n")
    # The dropped save is the one a made, and show names it.
    assert "a conventions" in invoke_cli("--kb", a, "show", "kb.conventions", "--rev", mine[:12], check=True).stdout


def test_sync_names_a_pulled_memory_file_that_does_not_read(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A reviewer's hand-fixed conflict left a duplicate key in a memory file and pushed it with
    plain git: the sync that pulls it says so, with get's fix, and still exits 0."""
    _bare, (a, reviewer) = make_team(tmp_path, clones=2)
    saved = invoke_cli("--kb", a, "--json", "save", "Refund reasons are free text", "-e", "shop.orders.qty",
                       check=True)
    memory_id = json.loads(saved.stdout)["memory_id"]
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q")
    path = reviewer / "memories" / f"{memory_id}.yaml"
    text = path.read_text()
    stamp = next(line for line in text.splitlines() if line.startswith("created_at:"))
    path.write_text(text + stamp.replace("created_at", "updated_at") + "\n" + stamp.replace("created_at", "updated_at") + "\n")
    git(reviewer, "commit", "-qam", "Merge b (both updated_at lines kept)")
    git(reviewer, "push", "-q", "origin", "main")

    synced = invoke_cli("--kb", a, "sync", check=True)
    got = invoke_cli("--kb", a, "get", memory_id)
    problem = got.stderr.strip().removeprefix("Error: ")
    assert got.returncode != 0 and problem.startswith(f"memories/{memory_id}.yaml:"), got
    assert synced.stdout == ("Synced main with origin: fast-forward, 1 pulled, 0 pushed.\n"
                             "warning: pulled a memory file that does not read (get names it, search skips it): "
                             f"{problem}\n")


def test_sync_says_a_pulled_merge_replaced_this_clones_memory(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Agent a's sync of main, which pulls the merge that kept b's memory under a's id, names
    the merge and the memory, and the steps that keep a's under another id; b's sync, whose
    memory the merge kept, says nothing of it."""
    _bare, (a, b, reviewer) = make_team_after(tmp_path, "two saves one id, theirs kept", _two_saves_one_id,
                                              clones=3)
    merge = git(reviewer, "rev-parse", "HEAD").strip()
    made = {kb.name: json.loads(invoke_cli("--kb", kb, "--json", "get", "kb.conventions", check=True).stdout)
            ["created_at"] for kb in (a, b)}
    for kb in (a, b):
        git(kb, "switch", "-q", "main")
    synced = invoke_cli("--kb", a, "sync", check=True)
    assert synced.stdout == (
        "Synced main with origin: fast-forward, 4 pulled, 0 pushed.\n"
        f"warning: merge {merge[:12]} pulled from origin/main replaced memory kb.conventions (saved {made['a']}), "
        f"which agent-a holds, with another memory under its id (saved {made['b']}): the one agent-a holds is no "
        "longer on origin/main. 'slayer-kb show kb.conventions --rev agent-a' shows it; to keep it, commit it again "
        "under another id: 'git show agent-a:memories/kb.conventions.yaml > memories/kb.conventions-2.yaml && "
        "git add memories/kb.conventions-2.yaml && git commit -m 'memory: save kb.conventions-2' && slayer-kb sync'.\n")
    # The steps, as printed, keep a's memory under the new id beside b's.
    subprocess.run(synced.stdout.split("to keep it, commit it again under another id: '")[1].rsplit(" && ", 1)[0],
                   shell=True, cwd=a, check=True, capture_output=True)
    invoke_cli("--kb", a, "sync", check=True)
    assert json.loads(invoke_cli("--kb", a, "--json", "get", "kb.conventions-2", check=True).stdout)["learning"] \
        == "a conventions"
    assert invoke_cli("--kb", b, "sync", check=True).stdout == \
        "Synced main with origin: fast-forward, 5 pulled, 0 pushed.\n"


def test_the_steps_keep_a_replaced_memory_under_an_id_no_memory_holds(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """The steps named ``ID-2`` whatever held it: typed as printed, they wrote a's memory over
    the one ``kb.conventions-2`` named and pushed it, that memory lost."""
    _bare, (a, _b, reviewer) = make_team_after(tmp_path, "two saves one id, theirs kept", _two_saves_one_id,
                                               clones=3)
    invoke_cli("--kb", reviewer, "save", "the second conventions", "-e", "shop.orders", "--id", "kb.conventions-2",
               check=True)
    invoke_cli("--kb", reviewer, "sync", check=True)
    git(a, "switch", "-q", "main")
    synced = invoke_cli("--kb", a, "sync", check=True)
    steps = synced.stdout.split("to keep it, commit it again under another id: '")[1].rsplit("'.\n", 1)[0]
    assert steps == ("git show agent-a:memories/kb.conventions.yaml > memories/kb.conventions-3.yaml && git add "
                     "memories/kb.conventions-3.yaml && git commit -m 'memory: save kb.conventions-3' && slayer-kb sync")
    subprocess.run(steps.rsplit(" && ", 1)[0], shell=True, cwd=a, check=True, capture_output=True)
    invoke_cli("--kb", a, "sync", check=True)
    learnings = [json.loads(invoke_cli("--kb", a, "--json", "get", f"kb.conventions{n}", check=True).stdout)["learning"]
                 for n in ("", "-2", "-3")]
    assert learnings == ["b conventions", "the second conventions", "a conventions"]


def test_merging_main_into_the_branch_that_holds_a_replaced_memory_says_so(tmp_path: Path,
                                                                             invoke_cli: CliRunner) -> None:
    """Agent a, on agent-a, took main in with the documented 'slayer-kb merge origin/main': a
    fast-forward to main's replacement of a's memory, then pushed, without a word; the sync of
    main later had no branch holding a's memory left to warn of it."""
    _bare, (a, _b, _reviewer) = make_team_after(tmp_path, "two saves one id, theirs kept", _two_saves_one_id,
                                                clones=3)
    before = git(a, "rev-parse", "HEAD").strip()
    git(a, "fetch", "-q", "origin")
    merged = invoke_cli("--kb", a, "merge", "origin/main", check=True)
    lines = merged.stdout.splitlines()
    assert lines[0] == "Fast-forwarded to origin/main; run slayer-kb sync to push."
    assert lines[1].startswith("warning: merge ") and lines[1].endswith(
        f"'git show {before[:12]}:memories/kb.conventions.yaml > memories/kb.conventions-2.yaml && git add "
        "memories/kb.conventions-2.yaml && git commit -m 'memory: save kb.conventions-2' && slayer-kb sync'."), lines
    assert json.loads(invoke_cli("--kb", a, "--json", "merge", "origin/main", check=True).stdout)["warnings"] == []


def _squashed_keeping_theirs(kbs: list[Path]) -> None:
    """``_saved_on_two_branches``, with b's pull request squash-merged as a forge does."""
    _saved_on_two_branches(kbs)
    reviewer = kbs[2]
    subprocess.run(["git", "merge", "--squash", "origin/agent-b"], cwd=reviewer, capture_output=True, check=False)
    git(reviewer, "checkout", "-q", "--theirs", "memories/kb.conventions.yaml")
    git(reviewer, "add", "-A")
    git(reviewer, "commit", "-q", "-m", "Agent b's work (#2)")
    git(reviewer, "push", "-q", "origin", "main")


def test_a_squash_that_replaced_this_clones_memory_is_said_as_a_merge_is(tmp_path: Path,
                                                                         invoke_cli: CliRunner) -> None:
    # Only merges were read: a squash (or a rebase) that landed "keep theirs" said nothing.
    _bare, (a, _b, reviewer) = make_team_after(tmp_path, "squashed, theirs kept", _squashed_keeping_theirs,
                                               clones=3)
    squash = git(reviewer, "rev-parse", "HEAD").strip()
    git(a, "switch", "-q", "main")
    synced = invoke_cli("--kb", a, "sync", check=True).stdout.splitlines()
    assert synced[1].startswith(f"warning: commit {squash[:12]} pulled from origin/main replaced memory "
                                "kb.conventions (saved "), synced


def test_log_says_a_merge_that_kept_a_forget_deleted_the_memory(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # It said the merge "kept <the forget>'s version whole": a forget has no version.
    _bare, (a, b, reviewer) = make_team(tmp_path, clones=3)
    invoke_cli("--kb", a, "save", "a memory both branches change", "-e", "shop.orders", "--id", "kb.changed",
               check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for kb, who, change in ((a, "a", ("update", "kb.changed", "--learning", "edited on a")), (b, "b", ("forget", "kb.changed"))):
        git(kb, "switch", "-q", "-c", f"agent-{who}")
        invoke_cli("--kb", kb, *change, check=True)
        invoke_cli("--kb", kb, "sync", check=True)
    git(reviewer, "pull", "-q")
    git(reviewer, "merge", "-q", "--no-ff", "origin/agent-a", "-m", "Merge a")
    subprocess.run(["git", "merge", "--no-ff", "origin/agent-b", "-m", "Merge b"], cwd=reviewer, capture_output=True,
                   check=False)
    git(reviewer, "rm", "-q", "memories/kb.changed.yaml")
    git(reviewer, "commit", "-q", "--no-edit")
    edit, forget = (git(reviewer, "rev-parse", rev).strip() for rev in ("HEAD^1^2", "HEAD^2"))
    printed = invoke_cli("--kb", reviewer, "log", "kb.changed", check=True).stdout.splitlines()
    assert printed[2] == (f"    deleted it, as {forget[:12]} did, dropping {edit[:12]}'s "
                          f"(see 'slayer-kb show kb.changed --rev {edit[:12]}')")


def test_a_pulled_commit_that_only_requoted_a_memorys_fields_replaced_nothing(tmp_path: Path,
                                                                             invoke_cli: CliRunner) -> None:
    # The fields were read by a pattern that knew single quotes only: a hand edit writing
    # created_at in double quotes read as another memory, and the sync warned "replaced".
    _bare, (a, reviewer) = make_team(tmp_path, clones=2)
    invoke_cli("--kb", a, "save", "a memory", "-e", "shop.orders", "--id", "kb.quoted", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q")
    path = reviewer / "memories" / "kb.quoted.yaml"
    text = path.read_text(encoding="utf-8")
    made = next(line for line in text.splitlines() if line.startswith("created_at:"))
    path.write_text(text.replace(made, made.replace("'", '"') + "  # as written by hand"), encoding="utf-8")
    git(reviewer, "commit", "-qam", "quoted by hand")
    git(reviewer, "push", "-q", "origin", "main")
    assert invoke_cli("--kb", a, "sync", check=True).stdout == "Synced main with origin: fast-forward, 1 pulled, 0 pushed.\n"
