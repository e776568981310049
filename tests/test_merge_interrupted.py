"""A ``slayer-kb merge REF`` killed (kill -9) part-way: the next command that writes, and
``validate``, name what git left and the commands that undo it, and those commands, run as
printed, lead to a merge that finishes and a clean ``validate``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb.daemon.settle import settle
from testing import CliRunner, eventually, git, make_team, make_team_after, unlike
from testing.folds import TOPIC, agent_saves, reviewer_folded, saved_id

# The merge's git, stopped as it writes the third of REF's files (a smudge filter kills the
# whole process group: slayer-kb and git), leaving the two written before untracked.
KILL_THE_GROUP = "kill -9 0"
# A reference-transaction hook that kills slayer-kb (git's parent) once git's merge moved
# ORIG_HEAD: git's merge goes on alone, and stops with MERGE_HEAD, uncommitted.
KILL_AT_ORIG_HEAD = """#!/bin/sh
[ "$1" = committed ] || exit 0
grep -q ' ORIG_HEAD$' || exit 0
rm -f "$0"
kill -9 $(ps -o ppid= -p $PPID)
"""


def _main_ahead(kbs: list[Path]) -> None:
    """Clone b saves three memories on main and syncs; clone a, on its branch agent, saves one."""
    from testing import in_process_runner

    invoke_cli = in_process_runner()
    a, b = kbs
    for tag in ("ant", "bee", "cat"):
        invoke_cli("--kb", b, "save", unlike(tag), "-e", "shop.orders", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    git(a, "switch", "-q", "-c", "agent")
    invoke_cli("--kb", a, "save", unlike("dog"), "-e", "shop.orders", check=True)
    git(a, "fetch", "-q")


def _merge_killed(a: Path, *, env: dict[str, str] | None = None) -> None:
    """``slayer-kb merge origin/main`` in ``a`` as a process group of its own, killed as set up."""
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(a), "merge", "origin/main"], cwd=a,
                          capture_output=True, env=dict(os.environ, **(env or {})), start_new_session=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _refused_alike(invoke_cli: CliRunner, a: Path) -> str:
    """What sync and merge refuse with (the same words), checked against validate's problem."""
    said = invoke_cli("--kb", a, "merge", "origin/main", cwd=a)
    assert said.returncode != 0 and said.stdout == ""
    message = said.stderr.removeprefix("Error: ").strip()
    synced = invoke_cli("--kb", a, "sync", cwd=a)
    assert synced.returncode != 0 and synced.stderr.removeprefix("Error: ").strip() == message
    checked = invoke_cli("--kb", a, "validate", cwd=a)
    assert checked.returncode == 1 and f"memories/:1: {message}\n" in checked.stdout
    return message


def _undo_as_printed(a: Path, message: str) -> None:
    """Run the undo steps of ``message`` in ``a`` as a person pastes them."""
    steps = message.split("To undo the merge: ", 1)[1].split("; then ", 1)[0]
    for step in steps.split("; "):
        subprocess.run(step, shell=True, cwd=a, check=True, capture_output=True)


def _merged_after(invoke_cli: CliRunner, a: Path) -> None:
    """The merge run again finishes: a merge commit of both, nothing left over, a clean validate."""
    assert invoke_cli("--kb", a, "merge", "origin/main", cwd=a, check=True).stdout == (
        "Merged origin/main; run slayer-kb sync to push.\n")
    assert git(a, "rev-parse", "HEAD^2").strip() == git(a, "rev-parse", "origin/main").strip()
    assert git(a, "status", "--porcelain", "-uall") == ""
    assert not (a / ".git" / "slayer-kb-merging.json").exists()
    assert invoke_cli("--kb", a, "validate", cwd=a, check=True).stdout == "Checked 4 files: no problems.\n"


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    _bare, (a, _b) = make_team_after(tmp_path, "main-ahead-of-agent", _main_ahead)
    return a


def _ref_files(a: Path) -> list[str]:
    """The memory files origin/main added that the agent's branch does not hold, in git's order."""
    return git(a, "diff", "--name-only", "--diff-filter=A", "HEAD", "origin/main", "--", "memories/").split()


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_merge_killed_while_git_wrote_refs_files_names_them_and_the_undo(agent, invoke_cli) -> None:
    """git's merge killed as it wrote REF's files left two of them untracked in memories/ (and its
    index.lock): sync, merge and validate said nothing of them (validate checked them as the
    KB's), and git names no merge. Now each names them and the steps, which undo it."""
    a = agent
    first, second, third = _ref_files(a)
    (a / ".git" / "info" / "attributes").write_text(f"{third} filter=killer\n")
    git(a, "config", "filter.killer.smudge", KILL_THE_GROUP)
    _merge_killed(a)
    (a / ".git" / "info" / "attributes").unlink()
    git(a, "config", "--unset", "filter.killer.smudge")
    assert git(a, "status", "--porcelain", "-uall") == f"?? {first}\n?? {second}\n"
    message = _refused_alike(invoke_cli, a)
    assert message == (
        "'slayer-kb merge origin/main' was interrupted before it finished: git was stopped while it wrote "
        f"origin/main's files, and committed nothing: {first}, {second} untracked. This branch's commits are as "
        "they were, and origin/main holds its files as git wrote them. The steps throw away any edit made to these "
        "files since the merge stopped: keep a copy of one you changed. To undo the merge: "
        f"rm -f -- {a / '.git' / 'index.lock'}; rm -- {first} {second}; then 'slayer-kb merge origin/main' merges "
        "it again.")
    _undo_as_printed(a, message)
    _merged_after(invoke_cli, a)


@pytest.mark.slow  # fault injection (slow suite, .ci/run)
def test_a_merge_killed_after_git_merged_names_the_undo(agent, invoke_cli) -> None:
    """slayer-kb killed while git's merge ran: git finished alone and left MERGE_HEAD, REF's files
    staged, none of the KB's folds or checks made. sync and merge said "Conclude it with git
    commit", which commits the merge without them; validate said nothing."""
    a = agent
    hook = a / ".git" / "hooks" / "reference-transaction"
    hook.write_text(KILL_AT_ORIG_HEAD)
    hook.chmod(0o755)
    _merge_killed(a)
    # git's merge, orphaned, goes on: done once it wrote MERGE_HEAD (after its index) and exited.
    eventually(lambda: (a / ".git" / "MERGE_HEAD").exists() and not (a / ".git" / "index.lock").exists(),
               "git's merge finished alone")
    files = _ref_files(a)
    assert git(a, "status", "--porcelain", "-uall") == "".join(f"A  {f}\n" for f in files)
    message = _refused_alike(invoke_cli, a)
    assert message == (
        "'slayer-kb merge origin/main' was interrupted before it finished: git's merge of origin/main is in "
        "progress, not committed, without the knowledge base's folds and checks "
        f"({', '.join(files)} staged). This branch's commits are as they were, and origin/main holds its files as "
        "git wrote them. The steps throw away any edit made to these files since the merge stopped: keep a copy of "
        "one you changed. To undo the merge: git merge --abort; then 'slayer-kb merge origin/main' merges it again.")
    _undo_as_printed(a, message)
    _merged_after(invoke_cli, a)


# -- the state a kill leaves, written by hand (no kill: the default run) -----------------------


def _code_repo_with_kb(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, str, str]:
    """A code repository ``proj`` with its KB in ``proj/kb``; branch feature adds code files (one
    under ``src/tmp/``) and a memory. Returns the repository, feature's and main's commits."""
    proj = tmp_path / "proj"
    proj.mkdir()
    git(proj, "init", "-q", "-b", "main")
    (proj / "README").write_text("hi\n")
    git(proj, "add", "README")
    git(proj, "commit", "-q", "-m", "init")
    invoke_cli("init", str(proj / "kb"), check=True)
    before = git(proj, "rev-parse", "HEAD").strip()
    git(proj, "switch", "-q", "-c", "feature")
    (proj / "src" / "tmp" / "victim").mkdir(parents=True)
    (proj / "src" / "tmp" / "victim" / "note").write_text("v\n")
    (proj / "src" / "a.py").write_text("a\n")
    (proj / "README").write_text("hello\n")
    git(proj, "add", "src", "README")
    git(proj, "commit", "-q", "-m", "code")
    sha = git(proj, "rev-parse", "HEAD").strip()
    git(proj, "switch", "-q", "main")
    return proj, sha, before


def _left_by_a_kill(proj: Path, sha: str, before: str, pid: int, started: str | None) -> None:
    """What a ``slayer-kb merge feature`` killed as git wrote feature's files leaves: its record,
    feature's README written, its code files untracked, git's index.lock."""
    record = {"ref": "feature", "sha": sha, "before": before, "pid": pid, "started": started}
    (proj / ".git" / "slayer-kb-merging.json").write_text(json.dumps(record))
    for path in ("README", "src/a.py", "src/tmp/victim/note"):
        (proj / path).parent.mkdir(parents=True, exist_ok=True)
        (proj / path).write_bytes(git(proj, "show", f"{sha}:{path}").encode())
    (proj / ".git" / "index.lock").write_text("")


def _dead_pid() -> int:
    """A pid no process holds (the system gives it again only once it used up the others)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_killed_merge_in_a_code_repository_names_files_from_the_kbs_folder(tmp_path, invoke_cli) -> None:
    """With the KB in proj/kb, the files git left outside it were printed with len('kb/') cut off
    their paths (src/tmp/victim/note as /tmp/victim/note: the printed rm deleted a file outside
    the repository), index.lock was removed after git checkout (which fails on it), and the
    message did not say the steps throw away edits made since."""
    proj, sha, before = _code_repo_with_kb(tmp_path, invoke_cli)
    _left_by_a_kill(proj, sha, before, _dead_pid(), None)
    kb = proj / "kb"
    said = invoke_cli("save", "--title", "x", "another", cwd=kb)
    assert said.returncode != 0
    lock = proj / ".git" / "index.lock"
    assert said.stderr == (
        "Error: 'slayer-kb merge feature' was interrupted before it finished: git was stopped while it wrote "
        "feature's files, and committed nothing: ../README changed; ../src/a.py, ../src/tmp/victim/note untracked. "
        "This branch's "
        "commits are as they were, and feature holds its files as git wrote them. The steps throw away any edit "
        "made to these files since the merge stopped: keep a copy of one you changed. To undo the merge: "
        f"rm -f -- {lock}; git checkout HEAD -- ../README; rm -- ../src/a.py ../src/tmp/victim/note; then 'slayer-kb merge feature' merges it "
        "again.\n")
    _undo_as_printed(kb, said.stderr.removeprefix("Error: ").strip())
    assert git(proj, "status", "--porcelain", "-uall") == ""
    invoke_cli("merge", "feature", cwd=kb, check=True)
    assert (proj / "src" / "tmp" / "victim" / "note").read_text() == "v\n"


def test_a_killed_merge_is_still_named_after_a_commit_of_other_work(tmp_path, invoke_cli) -> None:
    """Any move of HEAD (a commit of code) was taken for the merge committed: the record went, and
    the files git left were from then on taken as the branch's own."""
    proj, sha, before = _code_repo_with_kb(tmp_path, invoke_cli)
    _left_by_a_kill(proj, sha, before, _dead_pid(), None)
    (proj / ".git" / "index.lock").unlink()
    (proj / "tool.py").write_text("print(1)\n")
    git(proj, "add", "tool.py")
    git(proj, "commit", "-q", "-m", "a script")
    checked = invoke_cli("validate", cwd=proj / "kb")
    assert checked.returncode == 1
    assert "committed nothing: ../README changed; ../src/a.py, ../src/tmp/victim/note untracked." in checked.stdout
    assert (proj / ".git" / "slayer-kb-merging.json").exists()


def test_a_killed_merge_whose_pid_another_process_holds_is_named(tmp_path, invoke_cli) -> None:
    """The merge's pid given since to another live process turned every check off."""
    proj, sha, before = _code_repo_with_kb(tmp_path, invoke_cli)
    other = subprocess.Popen(["sleep", "600"])
    try:
        # The killed merge's start time, which the live process's is not.
        _left_by_a_kill(proj, sha, before, other.pid, "1")
        (proj / ".git" / "index.lock").unlink()
        said = invoke_cli("save", "--title", "x", "another", cwd=proj / "kb")
        assert said.returncode != 0 and said.stdout == ""
        assert said.stderr.startswith("Error: 'slayer-kb merge feature' was interrupted before it finished: git was "
                                      "stopped while it wrote feature's files, and committed nothing: ../README ")
        checked = invoke_cli("validate", cwd=proj / "kb")
        assert checked.returncode == 1 and "'slayer-kb merge feature' was interrupted" in checked.stdout
    finally:
        other.kill()
        other.wait()


def test_reads_after_a_killed_merge_answer_with_a_warning_naming_the_undo(agent, invoke_cli) -> None:
    """list, get, search and show read the files a killed merge left (another branch's memories staged,
    git's merge not committed) and said nothing of them, where every write refuses with the undo
    steps: each now answers, with those words as a warning (stderr; --json's warnings)."""
    a = agent
    before, sha = (git(a, "rev-parse", rev).strip() for rev in ("HEAD", "origin/main"))
    record = {"ref": "origin/main", "sha": sha, "before": before, "pid": _dead_pid(), "started": None}
    (a / ".git" / "slayer-kb-merging.json").write_text(json.dumps(record))
    git(a, "merge", "-q", "--no-commit", "--no-ff", "origin/main")  # where git's merge, orphaned, stops
    files = _ref_files(a)
    warning = (
        "warning: this answer is read from a half-merged work tree (files git left may hold conflict markers, or "
        "another branch's memories, none of them committed): 'slayer-kb merge origin/main' was interrupted before "
        "it finished: git's merge of origin/main is in progress, not committed, without the knowledge base's folds "
        f"and checks ({', '.join(files)} staged). This branch's commits are as they were, and origin/main holds its "
        "files as git wrote them. The steps throw away any edit made to these files since the merge stopped: keep "
        "a copy of one you changed. To undo the merge: git merge --abort; then 'slayer-kb merge origin/main' merges "
        "it again.\n")
    theirs = files[0].removeprefix("memories/").removesuffix(".yaml")
    listed = invoke_cli("--kb", a, "list", cwd=a, check=True)
    assert f"[{theirs}]" in listed.stdout and listed.stderr == warning
    got = invoke_cli("--kb", a, "--json", "get", theirs, cwd=a, check=True)
    assert json.loads(got.stdout)["warnings"] == [warning.removeprefix("warning: ").rstrip("\n")]
    assert got.stderr == ""
    found = invoke_cli("--kb", a, "search", json.loads(got.stdout)["learning"].split()[0], cwd=a, check=True)
    assert f"[{theirs}]" in found.stdout and found.stderr == warning
    shown = invoke_cli("--kb", a, "show", theirs, cwd=a, check=True)
    assert shown.stdout.startswith(f"id: {theirs}\n") and shown.stderr == warning
    assert (a / ".git" / "slayer-kb-merging.json").exists()


def _merge_committed(kbs: list[Path]) -> None:
    """The agent saves main's topic key on agent-y and pushes it; clone a saves it on main, syncs,
    and commits git's own merge of origin/agent-y (what a merge killed once git committed it wrote)."""
    from testing import in_process_runner

    invoke_cli = in_process_runner()
    agent, a = kbs
    agent_saves(invoke_cli, agent, unlike("agent"), *TOPIC)
    saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(a, "fetch", "-q")
    # git's merge, committed (a session file both started, which the KB's driver merges, taken as this branch's).
    subprocess.run(["git", "merge", "-q", "--no-edit", "origin/agent-y"], cwd=a, capture_output=True, check=False)
    if (a / ".git" / "MERGE_HEAD").exists():
        git(a, "checkout", "--ours", "--", "sessions")
        git(a, "add", "sessions")
        git(a, "commit", "-q", "--no-edit")


def _killed_once_committed(tmp_path: Path, invoke_cli: CliRunner) -> tuple[Path, str, str, str]:
    """What a ``slayer-kb merge origin/agent-y`` in clone ``a`` killed once git's merge was committed
    leaves (its record, the merge commit, no folds): the agent's memory of main's topic key beside
    main's. Returns ``a``, the agent's id, main's, the merge's commit."""
    _bare, (_agent, a) = make_team_after(tmp_path, "merge-committed", _merge_committed)
    merge, before, sha = (git(a, "rev-parse", rev).strip() for rev in ("HEAD", "HEAD^1", "HEAD^2"))
    record = {"ref": "origin/agent-y", "sha": sha, "before": before, "branch": "main", "pid": _dead_pid(),
              "started": None}
    (a / ".git" / "slayer-kb-merging.json").write_text(json.dumps(record))
    folded, kept = (git(a, "log", "-1", "--format=%s", rev).split()[2] for rev in (sha, before))
    return a, folded, kept, merge


def _owed_warning(merge: str, kb: str = "slayer-kb") -> str:
    """A read's warning that the folds of ``merge`` (a commit) are owed, its steps as ``kb``."""
    return (f"'{kb} merge origin/agent-y' was interrupted once it had committed git's merge ({merge[:12]}), before "
            "the knowledge base's folds and checks: a topic key both sides saved may be held by two memories here, a "
            f"link may name a memory the other side forgot. Run '{kb} merge origin/agent-y' again, which makes them "
            f"(so does the next '{kb} sync', before it pushes).")


def test_a_merge_killed_once_committed_is_said_by_reads_and_finished_by_merge_again(tmp_path, invoke_cli,
                                                                                    capfd) -> None:
    """Killed after git's merge commit, before its folds: the record went as 'committed', list
    showed two memories of one topic key without a word, and 'slayer-kb merge REF' again said
    "Already up to date" and folded nothing (a server's client, rerunning it, said first that the
    merge stopped "before it committed anything"). Reads now say the folds are owed; the merge
    makes them."""
    a, folded, kept, merge = _killed_once_committed(tmp_path, invoke_cli)
    # A server's client whose write process was killed there runs the merge again itself.
    assert settle((str(a), "e" * 32), ["--kb", str(a), "merge", "origin/agent-y"]) is None
    assert capfd.readouterr().err == (
        "slayer-kb: the server stopped while running this command, before it finished (git's merge may be committed, "
        "without its folds); running it in this process, which makes them, or names what git left.\n")
    listed = invoke_cli("--kb", a, "list", cwd=a, check=True)
    assert f"[{folded}]" in listed.stdout and f"[{kept}]" in listed.stdout
    assert listed.stderr == f"warning: {_owed_warning(merge)}\n"
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", cwd=a, check=True)
    assert merged.stdout == (f"Merged origin/agent-y; run slayer-kb sync to push.\n"
                             f"  merged (same topic key): {folded} into {kept}\n")
    assert not (a / ".git" / "slayer-kb-merging.json").exists()
    assert git(a, "rev-parse", "HEAD^").strip() == merge
    assert invoke_cli("--kb", a, "list", cwd=a, check=True).stderr == ""
    assert invoke_cli("--kb", a, "validate", cwd=a, check=True).stdout.endswith(": no problems.\n")


def test_the_owed_folds_warning_names_merge_again_as_run_from_where_the_read_ran(tmp_path, invoke_cli) -> None:
    """Read with --kb from outside the KB (a code repository's top, its KB in kb/), the warning's
    step 'slayer-kb merge REF' again lacked the --kb the person's own command had: run there, it
    failed with "No knowledge base here"."""
    a, _folded, _kept, merge = _killed_once_committed(tmp_path, invoke_cli)
    listed = invoke_cli("--kb", a.name, "list", cwd=tmp_path, check=True)
    assert listed.stderr == f"warning: {_owed_warning(merge, f'slayer-kb --kb {a.name}')}\n"
    merged = invoke_cli("--kb", a.name, "merge", "origin/agent-y", cwd=tmp_path, check=True)
    assert merged.stdout.startswith(f"Merged origin/agent-y; run slayer-kb --kb {a.name} sync to push.\n")


def test_json_list_stats_and_context_carry_the_owed_folds_warning(tmp_path, invoke_cli) -> None:
    """docs/teams.md: a read says the folds are owed under --json in its reply's warnings; list,
    stats and context said it on stderr alone, which an agent reading stdout never sees."""
    a, _folded, _kept, merge = _killed_once_committed(tmp_path, invoke_cli)
    for args in (["list"], ["stats"], ["context"]):
        read = invoke_cli("--kb", a, "--json", *args, cwd=a, check=True)
        warnings = json.loads(read.stdout)["warnings"]
        assert (warnings, read.stderr) == ([_owed_warning(merge)], ""), args


def test_a_merge_killed_before_it_folded_a_renamed_memory_folds_it_as_the_merge_would(tmp_path, invoke_cli) -> None:
    """main had merged the agent's 27 into 101; the agent renamed 27 to kb.retry. The merge killed
    once git's merge was committed, before it folded kb.retry into 101 (``fold_renamed``), merged
    again folded it by the topic-key rule instead: 'merged (same topic key): kb.retry into 101',
    101 one revision more than the merge not cut makes. The merge again now does what that one does."""
    _bare, (agent, a) = make_team(tmp_path, clones=2)
    folded, kept = reviewer_folded(invoke_cli, agent, a, a)
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(a, "fetch", "-q")
    before, sha = (git(a, "rev-parse", rev).strip() for rev in ("HEAD", "origin/agent-y"))
    uncut = invoke_cli("--kb", a, "merge", "origin/agent-y", cwd=a, check=True).stdout
    assert f"  kept {kept}: origin/agent-y renamed {folded} to kb.retry, which this branch had merged" in uncut
    def held() -> list[str]:  # 101's file but the time of its last change, which the second run's clock gives
        return [line for line in (a / "memories" / f"{kept}.yaml").read_text().splitlines()
                if not line.startswith("updated_at:")]

    made = held()
    # Where a kill after git's merge commit leaves it: that commit, its record, none of the folds after it.
    merge = git(a, "rev-list", "--merges", "-1", "HEAD").strip()
    git(a, "reset", "-q", "--hard", merge)
    record = {"ref": "origin/agent-y", "sha": sha, "before": before, "pid": _dead_pid(), "started": None}
    (a / ".git" / "slayer-kb-merging.json").write_text(json.dumps(record))
    assert (a / "memories" / "kb.retry.yaml").exists()
    assert invoke_cli("--kb", a, "merge", "origin/agent-y", cwd=a, check=True).stdout == uncut
    assert held() == made and "revision_count: 2" in made
    assert not (a / "memories" / "kb.retry.yaml").exists()


def test_the_owed_folds_outlast_a_read_on_refs_branch(tmp_path, invoke_cli) -> None:
    """The record of folds owed went with a read on REF's branch (HEAD there holds REF's commit,
    which was taken for the merge committed): back on main, two memories of one topic key without
    a word, and 'merge REF' again said "Already up to date". It is kept by git's merge commit now,
    which main holds."""
    a, folded, kept, merge = _killed_once_committed(tmp_path, invoke_cli)
    git(a, "switch", "-q", "agent-y")
    assert invoke_cli("--kb", a, "list", cwd=a, check=True).stderr == ""
    git(a, "switch", "-q", "main")
    assert invoke_cli("--kb", a, "list", cwd=a, check=True).stderr == f"warning: {_owed_warning(merge)}\n"
    merged = invoke_cli("--kb", a, "merge", "origin/agent-y", cwd=a, check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    assert invoke_cli("--kb", a, "list", cwd=a, check=True).stderr == ""
    assert not {"slayer-kb-owed.json", "slayer-kb-merging.json"} & set(os.listdir(a / ".git"))


def test_validate_names_the_owed_folds_and_merge_again_first(tmp_path, invoke_cli) -> None:
    """validate, in the state a merge killed once committed leaves, said nothing of the merge and
    steered to a forget by hand of the topic key's second holder (which strips links the fold
    would point at the memory kept). It names the merge and its 'merge REF' again first."""
    a, _folded, _kept, merge = _killed_once_committed(tmp_path, invoke_cli)
    checked = invoke_cli("--kb", a, "validate", cwd=a)
    assert checked.returncode == 1
    assert checked.stdout.startswith(f"memories/:1: {_owed_warning(merge)}\n") and checked.stderr == ""


def test_no_folds_are_said_owed_once_head_holds_them(tmp_path, invoke_cli) -> None:
    """Killed as its fold's commit moved the branch, the merge's record was left with HEAD holding
    the fold: reads said the folds were owed (a topic key "may be held by two memories here") and
    'merge REF' again said "Merged" with nothing to do. A fold's commit after the merge's says
    they are made."""
    a, _folded, _kept, _merge = _killed_once_committed(tmp_path, invoke_cli)
    record = (a / ".git" / "slayer-kb-merging.json").read_text()
    invoke_cli("--kb", a, "merge", "origin/agent-y", cwd=a, check=True)
    assert git(a, "log", "-1", "--format=%s").startswith("memory: merge ")
    (a / ".git" / "slayer-kb-merging.json").write_text(record)  # as the kill at that commit leaves it
    assert invoke_cli("--kb", a, "list", cwd=a, check=True).stderr == ""
    assert invoke_cli("--kb", a, "merge", "origin/agent-y", cwd=a, check=True).stdout == "Already up to date with origin/agent-y.\n"
