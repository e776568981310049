"""Hostile surroundings rather than hostile arguments: git's own variables left in the
environment (a git hook runs slayer-kb with GIT_INDEX_FILE set to the other repository's
index.lock), which must never send a KB's commit, index or objects to another repository."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner, account_home_at, commit_all, git, json_of, make_empty_kb, make_team


@pytest.fixture
def other_repo(tmp_path: Path) -> Path:
    """A repository beside the KB, with one commit and its own index."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "code.txt").write_text("code\n")
    git(other, "add", "code.txt")
    git(other, "commit", "-q", "-m", "code")
    return other


def _state(repo: Path) -> dict[str, object]:
    """What a git command run for ``repo`` could change: HEAD, the index, the files, the objects."""
    return {"head": git(repo, "rev-parse", "HEAD"), "index": (repo / ".git" / "index").read_bytes(),
            "files": sorted(p.name for p in repo.iterdir()), "objects": git(repo, "count-objects")}


@pytest.mark.parametrize("variables", [
    {"GIT_DIR": "{other}/.git"},
    {"GIT_WORK_TREE": "{other}"},
    # What git gives a pre-commit hook of `git commit -a` in the other repository.
    {"GIT_INDEX_FILE": "{other}/.git/index.lock"},
    {"GIT_OBJECT_DIRECTORY": "{other}/.git/objects"},
])  # fmt: skip
def test_gits_repository_variables_never_redirect_a_kbs_commit(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, other_repo: Path, variables: dict[str, str]) -> None:
    root = indexed_example_kb.root
    env = {name: value.format(other=other_repo) for name, value in variables.items()}
    before = _state(other_repo)
    kb_head = git(root, "rev-parse", "HEAD").strip()
    proc = invoke_cli("--kb", root, "--json", "save", "a note", "-e", "shop.orders.amount", env=env)
    assert (proc.returncode, json_of(proc)["memory_id"], proc.stderr) == (0, "27", "")
    # The KB's own repository has the commit, its index agrees with it, and nothing else moved.
    assert git(root, "log", "-1", "--format=%s%n%P", "--name-only").split("\n") == [
        "memory: save 27", kb_head, "", "memories/27.yaml", ""]
    assert git(root, "status", "--porcelain") == ""
    assert json_of(invoke_cli("--kb", root, "--json", "get", "27", env=env, check=True))["learning"] == "a note"
    assert _state(other_repo) == before
    assert not (other_repo / ".git" / "index.lock").exists()


@pytest.mark.parametrize("variables", [
    {"GIT_DIR": "{other}/.git"},
    {"GIT_INDEX_FILE": "{other}/.git/index"},
    {"GIT_OBJECT_DIRECTORY": "{other}/.git/objects"},
    {"GIT_ALTERNATE_OBJECT_DIRECTORIES": "{other}/.git/objects"},
])  # fmt: skip
def test_gits_repository_variables_never_redirect_a_kbs_history(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner, other_repo: Path, variables: dict[str, str]) -> None:
    # The history is read by the store's own git (describe_commits), with the scrubbed
    # environment of every other git call.
    root = example_kb_read_only.root
    env = {name: value.format(other=other_repo) for name, value in variables.items()}
    proc = invoke_cli("--kb", root, "--json", "log", "2", env=env)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert [entry["commit"] for entry in json.loads(proc.stdout)] == git(
        root, "log", "--format=%H", "--", "memories/2.yaml").split()


def test_a_checkout_with_crlf_line_endings_is_canonical_where_git_converts_them(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Git for Windows checks text out with CRLF (core.autocrlf=true, its default) and commits it
    as LF: validate called every memory and session file of such a checkout not canonical, and
    fmt --check listed them all. Where git keeps the CRLF, they still are not canonical."""
    root = indexed_example_kb.root
    files = ["memories/7.yaml", "sessions/ses-20261009-payments-recon.yaml"]
    for name in files:
        path = root / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    git(root, "config", "core.autocrlf", "true")
    clean = invoke_cli("--kb", root, "validate", *files, cwd=root)
    assert (clean.returncode, clean.stdout) == (0, "Checked 2 files: no problems.\n")
    assert invoke_cli("--kb", root, "fmt", "--check", *files, cwd=root).returncode == 0
    assert git(root, "diff", "--stat") == ""  # to git, as committed
    git(root, "config", "core.autocrlf", "false")
    flagged = invoke_cli("--kb", root, "validate", *files, cwd=root)
    assert (flagged.returncode, flagged.stdout) == (1, "".join(
        f"{name}:1: not in canonical form; run 'slayer-kb fmt {name}'\n" for name in files)
        + "2 problems in 2 files (2 files checked)\n")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the KB to another user")
def test_a_kb_another_user_owns_is_named_with_gits_safe_directory_fix(empty_kb: KnowledgeBase,
                                                                     invoke_cli: CliRunner) -> None:
    """git refuses a repository another user owns: every command said the KB "is not inside a git
    repository" and to run init there, which ran git init inside it and said the same."""
    root = empty_kb.root
    for folder, _dirs, names in os.walk(root):
        for name in [".", *names]:
            os.chown(os.path.join(folder, name), 65534, 65534, follow_symlinks=False)
    message = (f"git refuses the repository at {root}: another user owns it, and git works only in repositories you "
               f"own. If you trust it, run 'git config --global --add safe.directory {root}' and retry, or run "
               "slayer-kb as the user who owns it.")
    for args in (("--kb", root, "--json", "list"), ("--json", "init", root)):
        proc = invoke_cli(*args)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "store", "message": message}}, f"Error: {message}\n"), args
    git(root.parent, "config", "--global", "--add", "safe.directory", str(root))
    assert invoke_cli("--kb", root, "list", check=True).stdout == "No memories.\n"


def test_a_sync_in_a_shallow_clone_says_to_unshallow_it(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A clone made with --depth lacks the history sync reads: it was told a git object is
    missing and to run git fsck, as for a broken repository."""
    bare, (a,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", a, "save", "one", "--title", "One", check=True)
    git(a, "push", "-q", "origin", "main")
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{bare}", str(shallow))
    invoke_cli("--kb", a, "save", "two", "--title", "Two", check=True)
    git(a, "push", "-q", "origin", "main")
    invoke_cli("--kb", shallow, "save", "three", "--title", "Three", check=True)
    proc = invoke_cli("--kb", shallow, "sync")
    assert proc.returncode == 1
    assert proc.stderr.endswith(": this clone is shallow, and the command needs history it left out; run "
                                "'git fetch --unshallow', then retry.\n"), proc.stderr
    git(shallow, "fetch", "-q", "--unshallow")
    assert invoke_cli("--kb", shallow, "sync").returncode == 0


def test_a_review_in_a_shallow_clone_says_to_unshallow_it(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """actions/checkout clones one commit deep unless told otherwise: review and validate
    --against then found no common ancestor and said to name a revision the branch left, which
    was the one named."""
    bare, (a,) = make_team(tmp_path, clones=1)
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{bare}", str(shallow))
    invoke_cli("--kb", shallow, "save", "mine", "--title", "Mine", check=True)
    invoke_cli("--kb", a, "save", "theirs", "--title", "Theirs", check=True)
    git(a, "push", "-q", "origin", "main")
    git(shallow, "fetch", "-q", "--depth", "1", "origin", "main")
    told = ("'origin/main' and HEAD have no common ancestor in this shallow clone, which left out the history "
            "where they parted: run 'git fetch --unshallow' (in CI, check out with fetch-depth: 0), then retry.\n")
    for args in (("review", "origin/main"), ("validate", "--against", "origin/main")):
        proc = invoke_cli("--kb", shallow, *args)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {told}"), args
    git(shallow, "fetch", "-q", "--unshallow")
    assert "Memories: 1 added" in invoke_cli("--kb", shallow, "review", "origin/main", check=True).stdout


def test_a_memory_moved_or_deleted_by_hand_is_named_with_where_it_went(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """get, update, forget, timeline and edit of a memory whose file was moved (by hand or with git mv)
    or deleted, not committed, said only "No memory with id ...": the memory seemed lost. The steps name the
    KB's files, so they start in its folder: run with --kb from elsewhere, they failed."""
    root = indexed_example_kb.root
    (root / "memories" / "1.yaml").rename(root / "memories" / "one.yaml")
    git(root, "mv", "memories/2.yaml", "memories/two.yaml")
    (root / "memories" / "3.yaml").unlink()
    head = git(root, "rev-parse", "HEAD")
    cd = f"cd {shlex.quote(str(root))}; "
    told = {
        "1": "memories/1.yaml was moved to memories/one.yaml (slayer-kb now reads it as memory 'one'), and HEAD still "
             f"has it at memories/1.yaml: a move that is not committed. Move it back ({cd}mv memories/one.yaml "
             f"memories/1.yaml), or commit the move ({cd}git add -A -- memories/1.yaml memories/one.yaml; git commit).",
        "2": "memories/2.yaml was moved to memories/two.yaml (slayer-kb now reads it as memory 'two'), and HEAD still "
             f"has it at memories/2.yaml: a move that is not committed. Move it back ({cd}git mv memories/two.yaml "
             f"memories/2.yaml), or commit the move ({cd}git add -A -- memories/2.yaml memories/two.yaml; git commit).",
        "3": "memories/3.yaml is missing from the work tree, and HEAD still has it: a deletion (or a move) that is not "
             f"committed. Bring the file back ({cd}git checkout HEAD -- memories/3.yaml), or commit the deletion "
             f"({cd}git rm memories/3.yaml; git commit).",
        "999": "No memory with id '999'.",
    }
    for memory_id, message in told.items():
        for args in (("get", memory_id), ("update", memory_id, "--learning", "x"), ("forget", memory_id),
                     ("timeline", memory_id), ("edit", memory_id)):
            if args == ("edit", "999"):  # edit says how to make it: below
                continue
            proc = invoke_cli("--kb", root, *args)
            assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n"), args
    assert json_of(invoke_cli("--kb", root, "--json", "get", "3"))["error"]["message"] == told["3"]
    assert invoke_cli("--kb", root, "edit", "999").stderr == (
        f"Error: No memory with id '999'; create it with 'slayer-kb --kb {root} save ... --id 999'.\n")
    # The steps run as printed, from another folder, and put the moved memory back.
    subprocess.run(["sh", "-c", told["1"].split("Move it back (")[1].split(")")[0]], cwd="/", check=True)
    assert indexed_example_kb.get("1").id == "1"
    monkeypatch.chdir(root)  # from the KB's folder, no cd
    assert invoke_cli("get", "3").stderr == f"Error: {told['3'].replace(cd, '')}\n"
    assert git(root, "rev-parse", "HEAD") == head
    # A deletion staged already: git rm would fail ("did not match any files"); git commit is left.
    git(root, "rm", "-q", "--cached", "memories/3.yaml")
    assert invoke_cli("get", "3").stderr == f"Error: {told['3'].replace(cd, '').replace('git rm memories/3.yaml; ', '')}\n"


DETACHED = ("HEAD is detached (no branch is checked out), so this commit is on no branch and is lost from sight once "
            "you check out another: keep it with `git switch -c <name>` (a new branch here), or `git switch <branch>` "
            "before the next command to commit there.")


def test_a_commit_on_a_detached_head_is_warned_of_once(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A detached HEAD (a CI checkout, a look at an old commit) took slayer-kb's commits without a
    word, and a `git switch` then left them on no branch. Each command warns once, and commits."""
    root = indexed_example_kb.root
    warning = f"warning: {DETACHED}\n"
    git(root, "checkout", "-q", "--detach")
    head = git(root, "rev-parse", "HEAD").strip()
    saved = invoke_cli("--kb", root, "save", "a learning saved while detached", "--title", "Detached")
    assert (saved.returncode, saved.stderr) == (0, warning)
    as_json = invoke_cli("--kb", root, "--json", "forget", "1")
    assert (as_json.returncode, json_of(as_json)["deleted_id"], as_json.stderr) == (0, "1", warning)
    assert git(root, "rev-list", "--count", f"{head}..HEAD") == "2\n"
    git(root, "switch", "-q", "-c", "kept")
    again = invoke_cli("--kb", root, "save", "a learning saved on a branch", "--title", "Attached")
    assert (again.returncode, again.stderr) == (0, "")


def test_a_json_run_carries_a_detached_head_in_its_warnings(indexed_example_kb: KnowledgeBase,
                                                            invoke_cli: CliRunner) -> None:
    """Under --json the warning went to stderr alone, and an agent that reads the JSON on stdout
    never saw it: it travels in the JSON's warnings now, where the command has them, and only
    there; a command whose JSON has none still tells it on stderr (the test above)."""
    root = indexed_example_kb.root
    git(root, "checkout", "-q", "--detach")
    saved = invoke_cli("--kb", root, "--json", "save", "a learning saved while detached, read back as JSON",
                       "-e", "shop.orders")
    assert (saved.returncode, json_of(saved)["warnings"], saved.stderr) == (0, [DETACHED], "")


def test_an_mcp_client_hears_of_a_detached_head_in_the_tool_s_reply(indexed_example_kb: KnowledgeBase,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The warning went to the MCP server's stderr, a log no agent reads: it travels in the reply
    now, in the text and the structured warnings, as the tool's other warnings do."""
    git(indexed_example_kb.root, "checkout", "-q", "--detach")
    saved = call_tool(indexed_example_kb, "mem_save", {"title": "Detached", "content": "saved while detached"})
    assert saved.text == f"Memory saved: \"Detached\" (manual)\nSuggested topic_key: topic/detached\nwarning: {DETACHED}"
    assert saved.data is not None and saved.data["warnings"] == [DETACHED]
    memory_id = saved.data["memory_id"]
    # SLayer's replies are JSON texts of SLayer's shapes: the warning goes in a `warnings` the shape
    # has (save_memory's), and only in the structured content where it has none (forget_memory's).
    slayer_saved = call_tool(indexed_example_kb, "save_memory", {"learning": "saved while detached too",
                                                                 "linked_entities": ["orders.amount"]})
    assert not slayer_saved.is_error, slayer_saved.text
    assert json.loads(slayer_saved.text)["warnings"] == [DETACHED]
    forgot = call_tool(indexed_example_kb, "forget_memory", {"id": memory_id})
    assert json.loads(forgot.text) == {"deleted_id": memory_id, "stripped_from": []}
    assert forgot.data is not None and forgot.data["warnings"] == [DETACHED]
    assert capsys.readouterr().err == ""


def test_another_home_neither_sets_the_state_aside_nor_is_made(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The state folder's key lived under $HOME: a command run with another HOME (a CI step, sudo,
    a test) made a second key and set .slayer-kb aside as untrusted, and again when HOME was back;
    as root, a HOME that did not exist was made, by the key, the sentence cache and onnxruntime's
    telemetry. The key now lives under the home the system gives the user."""
    from slayer_kb.store import state

    root = indexed_example_kb.root
    account, other, missing = tmp_path / "account", tmp_path / "other-home", tmp_path / "no-home"
    other.mkdir()
    account_home_at(monkeypatch, account)
    monkeypatch.setenv("HOME", str(other))  # the real one's key is never read (carried over)
    monkeypatch.delenv("XDG_STATE_HOME")
    state.make(root / state.STATE_DIR)  # stamped under the account's key, as its first command does
    for home in (other, missing, other):
        for args in (("list",), ("save", f"a learning saved with HOME={home.name}", "--title", home.name)):
            proc = invoke_cli("--kb", root, *args, env={"HOME": str(home), "XDG_CACHE_HOME": ""})
            assert (proc.returncode, proc.stderr) == (0, ""), (home, args)
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".slayer-kb")) == [".slayer-kb"]
    assert not missing.exists() and list(other.iterdir()) == []
    assert (account / ".local" / "state" / "slayer-kb" / "key").stat().st_size == 32
    imported = subprocess.run([sys.executable, "-I", "-c", "from slayer_kb.search import runtime; runtime.onnxruntime()"],
                              env={**os.environ, "HOME": str(missing)}, capture_output=True, text=True, cwd="/")
    assert (imported.returncode, imported.stderr, missing.exists()) == (0, "", False)


def test_a_non_ascii_path_without_utf8_mode_is_an_error_not_a_traceback(tmp_path: Path, run_cli: CliRunner) -> None:
    """LANG=C and LC_ALL=POSIX hold up (Python then reads file names as UTF-8); with PYTHONUTF8=0
    too it reads them as ASCII, and a KB in a folder named 'café' was a UnicodeEncodeError."""
    kb = make_empty_kb(tmp_path / "caf\u00e9")
    proc = run_cli("--kb", kb, "--json", "list", env={"LC_ALL": "C", "PYTHONUTF8": "0", "SLAYER_KB_SERVER": "off"})
    message = ("Cannot name a path holding '\u00e9': Python reads file names as ascii here, the locale's, with its UTF-8 "
               "mode off. Set LC_ALL=C.UTF-8 (or another UTF-8 locale) and unset PYTHONUTF8, then retry.")
    assert (proc.returncode, json.loads(proc.stdout)) == (1, {"error": {"type": "store", "message": message}})
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("account_key", [False, True], ids=["account-without-a-key", "account-with-its-own-key"])
def test_an_upgrade_trusts_the_state_folders_stamped_under_the_key_in_home(
        account_key: bool, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A slayer-kb before the account's home kept the key under $HOME: where the account's home
    is another folder, the first command after the upgrade made a second key there and set every
    KB's .slayer-kb aside, "a copy from git or elsewhere". The key under $HOME is read too: its
    stamps hold (stamped again under the key in use), and it is the key made where none was."""
    from slayer_kb.store import state

    home, account = tmp_path / "home", tmp_path / "account"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME")
    account_home_at(monkeypatch, account)
    keys = [home / ".local" / "state" / "slayer-kb" / "key", account / ".local" / "state" / "slayer-kb" / "key"]
    if account_key:
        keys[1].parent.mkdir(parents=True)
        keys[1].write_bytes(os.urandom(32))
        keys[1].chmod(0o600)
    with monkeypatch.context() as before:  # as the former slayer-kb made it: stamped under $HOME's key
        before.setattr(state, "account_home", lambda: None)
        root = make_empty_kb(tmp_path / "kb")
    former = keys[0].read_bytes()
    for _ in range(2):
        assert invoke_cli("--kb", root, "list", check=True).stderr == ""
    keys[0].unlink()  # stamped again under the account's key: the former one is no longer needed
    assert invoke_cli("--kb", root, "list", check=True).stderr == ""
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".slayer-kb")) == [".slayer-kb"]
    assert (keys[1].read_bytes() == former) is not account_key  # carried over where the account had none


def test_the_key_is_kept_under_home_where_the_accounts_home_takes_no_file(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A container's read-only home (here a file where the folder should be) takes no key: it
    is kept under $HOME then, and the state folder stays trusted from one command to the next."""
    from slayer_kb.store import state

    blocked, home = tmp_path / "blocked", tmp_path / "home"
    blocked.write_text("a file where the home folder should be\n")
    home.mkdir()
    monkeypatch.setattr(state, "account_home", lambda: blocked)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    root = make_empty_kb(tmp_path / "kb")
    invoke_cli("--kb", root, "list", check=True)  # the copied KB's folder was stamped under another key
    again = invoke_cli("--kb", root, "list", check=True)
    assert (again.stderr, (home / ".local" / "state" / "slayer-kb" / "key").stat().st_size) == ("", 32)


def test_a_relative_folder_on_path_never_runs_a_kbs_tracked_git(indexed_example_kb: KnowledgeBase,
                                                                invoke_cli: CliRunner, tmp_path: Path) -> None:
    """git runs in the KB's folder, and a PATH with an empty or relative entry (``PATH=$EXTRA:$PATH``
    with EXTRA unset) made every command run an executable ``git`` a cloned KB tracks there, from
    any folder the user ran slayer-kb in. Programs are looked up in PATH's absolute folders only."""
    root = indexed_example_kb.root
    marker = tmp_path / "PWNED"
    touch, real_git = shutil.which("touch"), shutil.which("git")  # absolute: the planted git may find no PATH
    for where in (root, root / "bin"):
        where.mkdir(exist_ok=True)
        (where / "git").write_text(f"#!/bin/sh\n{touch} {shlex.quote(str(marker))}\nexec {real_git} \"$@\"\n")
        (where / "git").chmod(0o755)
    commit_all(root, "a KB that tracks a git of its own")
    path = os.pathsep.join(("", ".", "bin", os.environ["PATH"]))
    for args in (("save", "a learning saved beside a planted git", "-e", "shop.orders.amount"), ("forget", "1"),
                 ("search", "refunds"), ("log", "2")):
        proc = invoke_cli("--kb", root, *args, cwd=tmp_path, env={"PATH": path})
        assert (proc.returncode, proc.stderr) == (0, ""), args
    # With no absolute folder left, the system's default path, not the current folder.
    assert invoke_cli("--kb", root, "log", "2", cwd=tmp_path, env={"PATH": "bin"}).returncode == 0
    assert not marker.exists()
    assert git(root, "log", "-2", "--format=%s") == "memory: forget 1\nmemory: save 27\n"


def test_a_git_file_naming_a_missing_git_folder_is_said_with_its_fix(empty_kb: KnowledgeBase,
                                                                      invoke_cli: CliRunner) -> None:
    """A KB whose .git is a file naming a git folder that is gone (a moved worktree or submodule):
    every command said "not inside a git repository; run 'slayer-kb init'", and that init failed."""
    root = empty_kb.root
    shutil.rmtree(root / ".git")
    gone = root.parent / "gone" / "worktrees" / "kb"
    (root / ".git").write_text(f"gitdir: {gone}\n", encoding="utf-8")
    said = (f"Error: {root / '.git'} points git at {gone}, which is missing (a worktree or submodule whose "
            f"repository was moved or deleted), so git finds no repository there. Put the repository back at {gone} "
            f"(or, for a moved worktree, run 'git worktree repair' in its repository), or delete {root / '.git'} and "
            f"run 'slayer-kb init {root}' to make a new repository there.\n")
    for args in (["--kb", str(root), "list"], ["init", str(root)]):
        proc = invoke_cli(*args)
        assert (proc.returncode, proc.stderr) == (1, said), args
    (root / ".git").write_text("not a gitdir line\n", encoding="utf-8")
    assert invoke_cli("--kb", root, "list").stderr == (
        f"Error: {root / '.git'} is a file, but not the 'gitdir: PATH' line a worktree's or submodule's .git file "
        f"holds, so git finds no repository there. Put the line back, or delete {root / '.git'} and run "
        f"'slayer-kb init {root}' to make a new repository there.\n")


@pytest.mark.parametrize("command", ["get", pytest.param("list", marks=pytest.mark.slow),
                                     pytest.param("search", marks=pytest.mark.slow)])
def test_a_stdout_that_cannot_write_a_character_gets_its_escape(catalog_kb: KnowledgeBase, run_cli: CliRunner,
                                                                 invoke_cli: CliRunner, command: str) -> None:
    """A latin-1 stdout (PYTHONIOENCODING, a non-UTF-8 locale) and a memory holding '€': get,
    search and list printed a UnicodeEncodeError traceback and, with --json, no document."""
    root = catalog_kb.root
    memory_id = catalog_kb.save_memory("Price is 3€ per unit", ["orders.amount"]).memory_id
    args = {"get": ["get", memory_id], "list": ["list"], "search": ["search", "price"]}[command]
    utf8 = invoke_cli("--kb", root, *args, check=True)
    latin = run_cli("--kb", root, *args, env={"PYTHONIOENCODING": "latin-1"})
    assert "€" in utf8.stdout
    assert (latin.returncode, latin.stdout, latin.stderr) == (0, utf8.stdout.replace("€", "\\u20ac"), "")
    as_json = run_cli("--kb", root, "--json", *args, env={"PYTHONIOENCODING": "latin-1"})
    assert (as_json.returncode, "€" in as_json.stdout, as_json.stderr) == (0, False, "")
    assert json_of(as_json) == json_of(invoke_cli("--kb", root, "--json", *args, check=True))
