"""save_memory / forget_memory / get / list on a real git repository."""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import (
    AmbiguousEntityError,
    InvalidIdError,
    InvalidInputError,
    NotFoundError,
    ResolutionError,
)
from slayer_kb.store import files, journal
from slayer_kb.store.files import holds, put_file
from slayer_kb.store.repo import GitStore
from testing import GIT_ENV, commit_all, fsck, git, make_catalog_kb, make_team, traced_git


def commits(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def test_save_writes_one_canonical_file_in_one_commit(catalog_kb: KnowledgeBase) -> None:
    before = len(commits(catalog_kb.root))
    result = catalog_kb.save_memory("NULL means not returned", ["orders.amount", "customers"])
    assert (result.memory_id, result.resolved_entities, result.warnings, result.action) == (
        "1",
        ["shop.orders.amount", "shop.customers"],
        [],
        "created",
    )
    text = (catalog_kb.root / "memories/1.yaml").read_text()
    created = catalog_kb.get("1").to_dict()["created_at"]
    assert text == (
        "learning: NULL means not returned\nentities:\n- shop.orders.amount\n- shop.customers\n"
        f"created_at: '{created}'\n"
    )
    assert commits(catalog_kb.root)[0] == "memory: save 1"
    assert len(commits(catalog_kb.root)) == before + 1
    assert git(catalog_kb.root, "status", "--porcelain") == ""


@pytest.mark.parametrize("where", ["top", "folder", "newline", "newline, not UTF-8"])
def test_a_kb_asks_git_where_its_repository_is_in_one_process(where: str, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """Where the repository is, and where it keeps its objects, git folders and index: one
    ``git rev-parse`` as the KB opens, for a KB at the top of its repository or in a folder of it.
    A path git prints on two lines (a folder named with a newline) is asked again as before, in two, and
    the save still lands; so it does when the name is not UTF-8 too (the second asking read it as
    UTF-8 alone: a traceback, UnicodeDecodeError)."""
    if where == "folder":
        root = make_team(tmp_path, 1, folder="kb")[1][0]
    else:
        names = {"newline": "k\nb", "newline, not UTF-8": os.fsdecode(b"k\n\xffb")}
        root = make_catalog_kb(tmp_path / names.get(where, "kb"))
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert KnowledgeBase(root).save_memory("NULL means not returned", ["orders.amount"]).memory_id == "1"
    monkeypatch.delenv("GIT_TRACE")
    asked = [line for line in trace.read_text(errors="replace").splitlines()
             if "built-in: git rev-parse" in line and ("--show-toplevel" in line or "--git-path" in line)]
    assert len(asked) == (3 if where.startswith("newline") else 1), asked
    assert git(root, "log", "-1", "--format=%s").startswith("memory: ")
    assert git(root, "status", "--porcelain") == ""


def test_who_commits_is_read_from_git_in_one_process(catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """git's user.name and user.email (the last value of each, as ``git config KEY`` answers), both
    asked of one git process, as every process that commits asks, the one that reads the settings
    of the ids a save takes and whether to sign (a save starts one ``git config``, not two); a key
    not set falls back to slayer-kb's neutral identity."""
    for variable in GIT_ENV:
        monkeypatch.delenv(variable)
    git(catalog_kb.root, "config", "user.name", "First")
    git(catalog_kb.root, "config", "--add", "user.name", "Ada Lovelace")
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    KnowledgeBase(catalog_kb.root).save_memory("NULL means not returned", ["orders.amount"])
    monkeypatch.delenv("GIT_TRACE")
    asked = [line.split("git config", 1)[1] for line in trace.read_text().splitlines()
             if "built-in: git config" in line]
    assert asked == [r" -z --get-regexp '^(slayer-kb\.(ids|remote)|remote\..*\.url|branch\..*\.(remote|merge)"
                     r"|user\.(name|email)|commit\.gpgsign)$'"]
    assert git(catalog_kb.root, "log", "-1", "--format=%an <%ae> | %cn <%ce>") == (
        "Ada Lovelace <slayer-kb@localhost> | Ada Lovelace <slayer-kb@localhost>\n"
    )


def test_who_commits_follows_a_git_installed_on_path_in_one_process(catalog_kb: KnowledgeBase,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    """The system config git reads sits beside the git PATH finds. One process (a warm server)
    saving before and after a git is installed in a PATH folder, PATH the same, commits as the
    new git's system config says: where git is was remembered for each PATH value, and the
    system file beside the old git kept being the one watched."""
    for variable in GIT_ENV:
        monkeypatch.delenv(variable)
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    (tmp_path / "system").write_text("")  # not this machine's /etc/gitconfig
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "system"))
    prefix, real_git = tmp_path / "prefix", shutil.which("git")
    (prefix / "bin").mkdir(parents=True)
    monkeypatch.setenv("PATH", f"{prefix / 'bin'}{os.pathsep}{os.environ['PATH']}")
    kb = KnowledgeBase(catalog_kb.root)
    kb.save_memory("before the install", ["orders.amount"])
    # A git whose system config is the one beside it (a relocatable build), naming a user.
    (prefix / "etc").mkdir()
    (prefix / "etc" / "gitconfig").write_text("[user]\n\tname = Installed\n\temail = installed@example.com\n")
    wrapper = prefix / "bin" / "git"
    wrapper.write_text(f"#!/bin/sh\nGIT_CONFIG_SYSTEM={prefix / 'etc' / 'gitconfig'} exec {real_git} \"$@\"\n")
    wrapper.chmod(0o755)
    kb.save_memory("after the install", ["orders.amount"])
    assert git(catalog_kb.root, "log", "-2", "--format=%an <%ae> | %cn <%ce>") == (
        "Installed <installed@example.com> | Installed <installed@example.com>\n"
        "slayer-kb <slayer-kb@localhost> | slayer-kb <slayer-kb@localhost>\n")


def test_a_sync_reads_each_packed_commit_from_git_once(invoke_cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    """A sync pulling one save and rebasing one onto it looks for colliding ids twice over the
    commits since the merge base, the clone's packed base among them: asked first for its parents,
    then for its tree, it is read in one ``git cat-file`` (the base's tree in another), not one a
    question."""
    _bare, (a, b) = make_team(tmp_path)
    invoke_cli("--kb", b, "save", "Refunds are negative rows", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    synced = invoke_cli("--kb", a, "sync", check=True)
    monkeypatch.delenv("GIT_TRACE")
    assert synced.stdout == "Synced main with origin: rebased, 1 pulled, 1 pushed.\n"
    read = [line for line in trace.read_text().splitlines() if "built-in: git cat-file --batch" in line]
    assert len(read) == 2, read
    assert git(a, "log", "--format=%s", "-2") == "memory: save 101\nmemory: save 1\n"


def test_validate_against_a_ref_asks_git_each_question_once(invoke_cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    """``validate --against`` of the KB the command opened compares it with the ref through that
    KB's repository: git is asked where the repository is as the KB opens, not twice again. The
    branch is ahead of the ref (the ref is where it parted): the ids it added are looked up at
    the merge base and at the ref, one tree, in one ``git ls-tree``."""
    _bare, (a,) = make_team(tmp_path, clones=1)
    invoke_cli("--kb", a, "save", "Amounts are in cents", "-e", "shop.orders.amount", check=True)
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    checked = invoke_cli("--kb", a, "validate", "--against", "origin/main", check=True)
    monkeypatch.delenv("GIT_TRACE")
    assert checked.stdout == "Checked 1 file: no problems.\n"
    lines = trace.read_text().splitlines()
    located = [line for line in lines if "built-in: git rev-parse --show-toplevel" in line]
    listed = [line for line in lines if "built-in: git ls-tree" in line]
    assert (len(located), len(listed)) == (1, 1), (located, listed)


def test_fmt_of_the_kb_asks_git_where_its_repository_is_once(catalog_kb: KnowledgeBase, invoke_cli: Any,
                                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``fmt`` with no path formats the KB the command opened, under its lock, through that KB's
    repository: git is asked where the repository is as the KB opens, not twice again."""
    path = catalog_kb.root / "memories" / "7.yaml"
    path.write_text("created_at: '2026-01-01T00:00:00Z'\nlearning: Amounts are in cents\n")
    trace = tmp_path / "git-trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    formatted = invoke_cli("fmt", cwd=catalog_kb.root, check=True)
    monkeypatch.delenv("GIT_TRACE")
    assert formatted.stdout == "reformatted memories/7.yaml\n1 of 1 files needed formatting\n"
    assert path.read_text() == "learning: Amounts are in cents\ncreated_at: '2026-01-01T00:00:00Z'\n"
    located = [line for line in trace.read_text().splitlines() if "built-in: git rev-parse --show-toplevel" in line]
    assert len(located) == 1, located


def test_a_first_save_on_a_packed_kb_reads_git_in_one_cat_file(invoke_cli: Any, tmp_path: Path) -> None:
    """A save's commit reads its parent, the root tree and each folder down to the file it
    writes; packed (as a clone or a repack leaves them), each was a ``git cat-file`` of its own,
    one after the other: read in one, here for a KB in a folder of its repository (the root,
    ``team/``, ``team/memories/``), and the commit keeps every other file."""
    repo = tmp_path / "repo"
    make_catalog_kb(repo / "team")
    shutil.rmtree(repo / "team" / ".git")
    git(repo, "init", "-q")
    commit_all(repo)
    git(repo, "repack", "-a", "-d", "-q")
    with traced_git(tmp_path) as runs:
        saved = invoke_cli("--kb", repo / "team", "save", "Amounts are in cents", "-e", "orders.amount")
    assert (saved.returncode, saved.stderr) == (0, "")
    assert runs("cat-file") == ["cat-file --batch"]
    files = set(git(repo, "ls-tree", "-r", "--name-only", "HEAD").split())
    assert files == {*git(repo, "ls-tree", "-r", "--name-only", "HEAD~").split(), "team/memories/1.yaml"}
    assert fsck(repo).returncode == 0


def test_the_first_save_in_a_packed_clone_of_a_kb_in_a_folder_with_a_space(invoke_cli: Any, tmp_path: Path) -> None:
    """git cat-file answers "<name> missing" for a folder the commit lacks; with the name
    REV:team notes/sessions that line has three words, as a found object's has, and was read as
    one (a ValueError's traceback on the first save of the clone)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README").write_text("the team's repository\n")
    git(repo, "init", "-q")
    commit_all(repo)
    KnowledgeBase.init(repo / "team notes")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-local", str(repo), str(clone))  # packed, as a clone leaves it
    saved = invoke_cli("--kb", clone / "team notes", "save", "amounts are in cents", "--title", "Cents")
    assert (saved.returncode, saved.stderr) == (0, "")
    assert "team notes/memories/1.yaml" in git(clone, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert fsck(clone).returncode == 0


def test_save_with_query_stores_cleaned_query(catalog_kb: KnowledgeBase) -> None:
    query = {
        "source_model": "orders",
        "measures": [{"formula": "amount:sum", "name": None}],
        "filters": ["status = 'paid'"],
        "limit": None,
    }
    result = catalog_kb.save_memory("Paid revenue by status", query, id="kb.paid-revenue")
    assert result.resolved_entities == ["shop.orders", "shop.orders.amount", "shop.orders.status"]
    memory = catalog_kb.read("kb.paid-revenue")
    assert memory.query == {
        "source_model": "orders",
        "measures": [{"formula": "amount:sum"}],
        "filters": ["status = 'paid'"],
    }


def test_existing_id_is_replaced_whole_keeping_created_at(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("first", ["orders"], id="kb.x", description="old")
    # An older created_at than any save's: kept, not the replacing save's time.
    path = catalog_kb.root / "memories" / "kb.x.yaml"
    created = "2020-01-02T03:04:05Z"
    path.write_text(path.read_text().replace(catalog_kb.get("kb.x").created_at, created))
    commit_all(catalog_kb.root, "an old memory")
    result = catalog_kb.save_memory("second", ["customers"], id="kb.x")
    assert result.action == "replaced"
    data = catalog_kb.get("kb.x").to_dict()
    assert (data["learning"], data["description"], data["entities"], data["created_at"]) == (
        "second",
        None,
        ["shop.customers"],
        created,
    )


@pytest.mark.parametrize(
    ("learning", "linked", "kwargs", "error", "message"),
    [
        ("  ", ["orders"], {}, InvalidInputError, "learning is empty: write what was learned (it is required and must not be blank)."),
        ("x", [], {}, InvalidInputError, "linked_entities is empty"),
        (
            "x",
            ["orders"],
            {"description": "d" * 501},
            InvalidInputError,
            "description is 501 characters long; the limit is 500.",
        ),
        ("x", ["orders"], {"id": "a/b"}, InvalidIdError, "Memory id 'a/b' contains '/'"),
        ("x", ["nope"], {}, ResolutionError, "Entity 'nope' not found in any datasource"),
        ("x", ["orders", "id"], {}, AmbiguousEntityError, "Ambiguous bare name 'id'"),
        ("x", ["memory:zzz"], {}, NotFoundError, "No memory with id 'zzz'."),
        (
            "x",
            42,
            {},
            InvalidInputError,
            "linked_entities must be a list of entity references or a SlayerQuery object, not a number.",
        ),
    ],
)
def test_bad_saves_write_nothing(catalog_kb: KnowledgeBase, learning, linked, kwargs, error, message) -> None:  # noqa: ANN001
    before = commits(catalog_kb.root)
    with pytest.raises(error) as info:
        catalog_kb.save_memory(learning, linked, **kwargs)
    assert message in str(info.value)
    assert commits(catalog_kb.root) == before
    assert list((catalog_kb.root / "memories").iterdir()) == []


def test_blank_description_means_none(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("x", ["orders"], description="   ")
    assert catalog_kb.get("1").to_dict()["description"] is None
    assert "description" not in (catalog_kb.root / "memories/1.yaml").read_text()


def test_case_variant_of_existing_id_is_rejected(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("x", ["orders"], id="kb.x")
    with pytest.raises(InvalidIdError, match="Memory id 'KB.x' conflicts with existing 'kb.x'"):
        catalog_kb.save_memory("y", ["orders"], id="KB.x")


def test_auto_ids_are_never_reused(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    for n in range(3):
        catalog_kb.save_memory(f"m{n}", ["orders"])
    catalog_kb.save_memory("named", ["orders"], id="001")
    catalog_kb.forget("3")
    assert catalog_kb.save_memory("after delete", ["orders"]).memory_id == "4"
    catalog_kb.forget("4")
    # A fresh clone has no local state, only the history.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(catalog_kb.root), str(clone)], check=True)
    assert KnowledgeBase(clone).save_memory("in the clone", ["orders"]).memory_id == "5"


def _hand_commit(root: Path, name: str, data: str | None) -> None:
    """A memory file added (or with None, deleted) by plain git, behind slayer-kb's back."""
    path = root / "memories" / name
    if data is None:
        git(root, "rm", "-q", "--", f"memories/{name}")
    else:
        path.write_text(data)
        git(root, "add", "--", f"memories/{name}")
    git(root, "commit", "-q", "-m", f"by hand: {name}")


@pytest.mark.parametrize("padding", [0, 1, 6], ids=["adjacent", "two-commits-later", "beyond-the-walk"])
def test_an_auto_id_added_and_removed_by_plain_git_is_not_reused(catalog_kb: KnowledgeBase, padding: int) -> None:
    root = catalog_kb.root
    assert catalog_kb.save_memory("first", ["orders"]).memory_id == "1"
    _hand_commit(root, "7.yaml", "learning: by hand\ncreated_at: '2026-11-01T00:00:00Z'\n")
    _hand_commit(root, "7.yaml", None)
    for n in range(padding):
        _hand_commit(root, f"pad{n}.yaml", "learning: pad\ncreated_at: '2026-11-01T00:00:00Z'\n")
    assert catalog_kb.save_memory("next", ["orders"]).memory_id == "8"


def test_an_auto_id_from_a_merged_branch_is_not_reused(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    main = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "side")
    _hand_commit(root, "12.yaml", "learning: side\ncreated_at: '2026-11-01T00:00:00Z'\n")
    _hand_commit(root, "12.yaml", None)
    git(root, "checkout", "-q", main)
    _hand_commit(root, "main.yaml", "learning: main\ncreated_at: '2026-11-01T00:00:00Z'\n")
    git(root, "merge", "-q", "--no-edit", "side")
    assert catalog_kb.save_memory("after the merge", ["orders"]).memory_id == "13"


def test_a_cached_head_that_no_longer_exists_falls_back_to_all_history(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    catalog_kb.save_memory("second", ["orders"])
    git(root, "reset", "-q", "--hard", "HEAD~1")
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    # ids.json names a commit that gc removed: history is read in full, and the id this clone
    # already handed out (2) stays retired.
    assert catalog_kb.save_memory("after the reset", ["orders"]).memory_id == "3"
    assert git(root, "status", "--porcelain") == ""


def test_forget_strips_exact_references_in_one_commit(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("target", ["orders"], id="X")
    catalog_kb.save_memory("near miss", ["orders"], id="X1")
    catalog_kb.save_memory("refers", ["memory:X", "memory:X1", "orders"], id="a")
    catalog_kb.save_memory("only ref", ["memory:X"], id="b")
    before = len(commits(catalog_kb.root))
    result = catalog_kb.forget("X")
    assert result.to_json() == {"deleted_id": "X", "action": "forgotten", "stripped_from": ["a", "b"], "soft": False}
    assert len(commits(catalog_kb.root)) == before + 1
    assert not (catalog_kb.root / "memories/X.yaml").exists()
    assert catalog_kb.get("a").to_dict()["entities"] == ["memory:X1", "shop.orders"]
    # A memory left with no entities stays.
    assert catalog_kb.get("b").to_dict()["entities"] == []
    assert git(catalog_kb.root, "status", "--porcelain") == ""


def test_forget_unknown_id(catalog_kb: KnowledgeBase) -> None:
    with pytest.raises(NotFoundError, match=r"^No memory with id 'nope'\.$"):
        catalog_kb.forget("nope")


def test_soft_forget_hides_and_restore_brings_back(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("hidden soon", ["orders"], id="s")
    catalog_kb.forget("s", soft=True)
    with pytest.raises(
        NotFoundError,
        match=f"Memory 's' was deleted at .*; bring it back with 'slayer-kb --kb {re.escape(str(catalog_kb.root))} restore s'\\.",
    ):
        catalog_kb.get("s").to_dict()
    assert catalog_kb.get("s", include_deleted=True).to_dict()["deleted_at"] is not None
    assert catalog_kb.search("hidden").memories == []
    catalog_kb.restore("s")
    assert [h["id"] for h in catalog_kb.search("hidden").memories] == ["s"]


def test_kb_inside_a_bigger_repository_commits_only_its_own_paths(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "app.py").write_text("print(1)\n")
    commit_all(repo)
    (repo / "app.py").write_text("print(2)\n")  # unstaged change
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")  # staged change
    kb = KnowledgeBase.init(repo / "docs" / "kb")
    result = kb.save_observation(title="A title", content="some content")
    assert result.memory_id == "1"
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert changed == ["docs/kb/memories/1.yaml", "docs/kb/sessions/manual-save.yaml"]  # its session too
    status = git(repo, "status", "--porcelain").splitlines()
    assert sorted(status) == [" M app.py", "A  staged.txt"]


def test_author_from_option_and_environment(
    catalog_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    KnowledgeBase(catalog_kb.root, author="Ada Agent <ada@example.com>").save_memory("x", ["orders"])
    assert git(catalog_kb.root, "log", "-1", "--format=%an <%ae>").strip() == "Ada Agent <ada@example.com>"
    monkeypatch.setenv("SLAYER_KB_AUTHOR", "Env Agent <env@example.com>")
    KnowledgeBase(catalog_kb.root).save_memory("y", ["orders"])
    assert git(catalog_kb.root, "log", "-1", "--format=%an <%ae>").strip() == "Env Agent <env@example.com>"


def test_broken_file_is_reported_and_skipped(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("good one", ["orders"], id="good")
    (catalog_kb.root / "memories/bad.yaml").write_text("learning: [oops\n")
    result = catalog_kb.search("good")
    assert [h["id"] for h in result.memories] == ["good"]
    assert any(w.startswith("memories/bad.yaml:") and "invalid YAML" in w for w in result.warnings)
    # Writes still work.
    assert catalog_kb.save_memory("another", ["orders"]).memory_id == "1"


def test_list_newest_first(catalog_kb: KnowledgeBase) -> None:
    for n, day in enumerate(("03", "01", "02")):
        (catalog_kb.root / f"memories/m{n}.yaml").write_text(
            f"learning: memory {n}\ncreated_at: '2026-11-{day}T10:00:00Z'\n"
        )
    assert [h["id"] for h in catalog_kb.newest()] == ["m0", "m2", "m1"]
    assert [h["id"] for h in catalog_kb.newest(limit=1)] == ["m0"]


NEW_B = b"learning: b\ncreated_at: '2026-11-29T20:42:40Z'\n"
NEW_C = b"learning: c, shorter\ncreated_at: '2026-11-29T20:42:40Z'\n"


def publish_by_hand(kb: KnowledgeBase) -> tuple[str, str, dict[str, bytes]]:
    """The commit steps of a save of b, c and d up to the update-ref, as a crash leaves them:
    (old HEAD, new commit, the old bytes of c and d)."""
    root = kb.root
    for mid in ("a", "c", "d"):
        kb.save_memory(f"memory {mid} " + "long text " * 20, ["orders"], id=mid)
    store = kb.store
    old = store.head()
    assert old is not None
    objects = store.objects
    after = {"memories/b.yaml": objects.write("blob", NEW_B), "memories/c.yaml": objects.write("blob", NEW_C),
             "memories/d.yaml": None}
    old_tree = objects.tree_of(old)
    before = objects.blobs_at(old_tree, list(after))
    new = store.commit_tree(objects.update_tree(old_tree, after), old, "memory: by hand", {})
    journal.write(store.state, {"old": old, "new": new, "changes": {p: [before[p], after[p]] for p in after}})
    store.git("update-ref", "HEAD", new, old)
    return old, new, {name: (root / f"memories/{name}.yaml").read_bytes() for name in ("c", "d")}


def test_crash_in_the_middle_of_writing_the_files_is_finished_by_the_next_command(
    catalog_kb: KnowledgeBase,
) -> None:
    root = catalog_kb.root
    _, _, old_bytes = publish_by_hand(catalog_kb)
    # What a SIGKILL part-way through the writes leaves: b not written yet, c half written over,
    # d not deleted yet.
    c_path = root / "memories/c.yaml"
    c_path.write_bytes(NEW_C[:10] + old_bytes["c"][10:])
    a_before = (root / "memories/a.yaml").read_bytes()

    fresh = KnowledgeBase(root)
    assert [h["id"] for h in fresh.search("shorter").memories] == ["c"]
    assert (root / "memories/b.yaml").read_bytes() == NEW_B
    assert c_path.read_bytes() == NEW_C
    assert not (root / "memories/d.yaml").exists()
    assert (root / "memories/a.yaml").read_bytes() == a_before
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".slayer-kb/journal.json").exists()


def test_a_reader_that_meets_a_half_written_file_waits_for_the_commit(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    _, _, old_bytes = publish_by_hand(catalog_kb)
    # Valid YAML, and neither the old memory nor the new one: what a lock-free read could see
    # while the file is being written over.
    torn = NEW_C[:10] + old_bytes["c"][10:]
    (root / "memories/c.yaml").write_bytes(torn)
    assert KnowledgeBase(root).read_with_text("c")[1].encode() == torn
    assert KnowledgeBase(root).get("c").to_dict()["learning"] == "c, shorter"
    assert (root / "memories/c.yaml").read_bytes() == NEW_C


def test_after_a_crash_a_plain_git_commit_wins_and_only_half_written_files_are_repaired(
    catalog_kb: KnowledgeBase,
) -> None:
    root = catalog_kb.root
    _, new, old_bytes = publish_by_hand(catalog_kb)
    c_path, d_path = root / "memories/c.yaml", root / "memories/d.yaml"
    c_path.write_bytes(NEW_C[:10] + old_bytes["c"][10:])  # half written when the process died
    (root / "memories/b.yaml").write_bytes(NEW_B[:12])  # a new file, cut short
    d_path.write_bytes(old_bytes["d"] + b"# the user's own edit\n")
    # Before any slayer-kb command, the user commits with git itself: their index still holds
    # the old c and d, so that commit puts them back.
    git(root, "commit", "-q", "-m", "the user's commit")
    assert git(root, "rev-parse", "HEAD~1").strip() == new

    KnowledgeBase(root).search("anything")
    assert c_path.read_bytes() == old_bytes["c"]  # HEAD's version, not the torn mix
    assert not (root / "memories/b.yaml").exists()  # HEAD has no b: the broken start goes
    assert d_path.read_bytes() == old_bytes["d"] + b"# the user's own edit\n"  # left alone
    assert git(root, "log", "-1", "--format=%s").strip() == "the user's commit"
    assert not (root / ".slayer-kb/journal.json").exists()


def test_a_journal_in_the_format_of_earlier_versions_is_finished(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    old, new, _ = publish_by_hand(catalog_kb)
    tmp = "/nowhere/0.tmp"
    journal.write(catalog_kb.store.state, {"old": old, "new": new, "changes": [["memories/b.yaml", tmp],
                                     ["memories/c.yaml", tmp], ["memories/d.yaml", None]]})
    KnowledgeBase(root).search("anything")
    assert (root / "memories/b.yaml").read_bytes() == NEW_B
    assert (root / "memories/c.yaml").read_bytes() == NEW_C
    assert not (root / "memories/d.yaml").exists()
    assert git(root, "status", "--porcelain") == ""


def test_a_journal_that_cannot_be_finished_names_the_path(catalog_kb: KnowledgeBase, invoke_cli: Any) -> None:
    root = catalog_kb.root
    publish_by_hand(catalog_kb)
    (root / "memories/b.yaml").mkdir()  # something in the way of a file the commit wrote
    proc = invoke_cli("--kb", root, "save", "x", "-e", "orders")
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: Cannot finish the commit ")
    assert "memories/b.yaml: Is a directory. Fix that path" in proc.stderr
    (root / "memories/b.yaml").rmdir()
    assert invoke_cli("--kb", root, "save", "x", "-e", "orders").returncode == 0
    assert (root / "memories/b.yaml").read_bytes() == NEW_B
    assert git(root, "status", "--porcelain") == ""


def test_a_journal_whose_update_ref_never_happened_is_dropped(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    catalog_kb.save_memory("memory a", ["orders"], id="a")
    store = catalog_kb.store
    old = store.head()
    assert old is not None
    blob = store.objects.write("blob", b"learning: never published\n")
    tree = store.objects.update_tree(store.objects.tree_of(old), {"memories/a.yaml": blob})
    new = store.commit_tree(tree, old, "x", {})
    journal.write(store.state, {"old": old, "new": new, "changes": {"memories/a.yaml": [None, blob]}})
    KnowledgeBase(root).save_memory("memory e", ["orders"], id="e")
    assert KnowledgeBase(root).get("a").to_dict()["learning"] == "memory a"
    assert git(root, "rev-parse", "HEAD~1").strip() == old
    assert not (root / ".slayer-kb/journal.json").exists()
    assert git(root, "status", "--porcelain") == ""
    (root / ".slayer-kb/journal.json").write_text('{"new": ')  # cut short by a crash
    KnowledgeBase(root).save_memory("memory f", ["orders"], id="f")
    assert not (root / ".slayer-kb/journal.json").exists()


def test_put_file_writes_over_a_file_in_place(tmp_path: Path) -> None:
    target = tmp_path / "m.yaml"
    target.write_bytes(b"a much longer old text\n")
    inode = target.stat().st_ino
    put_file(target, b"short\n")
    assert target.read_bytes() == b"short\n"
    assert target.stat().st_ino == inode
    put_file(target, b"longer than it was before, " * 100)
    assert target.read_bytes() == b"longer than it was before, " * 100
    put_file(tmp_path / "new.yaml", b"new\n")
    assert (tmp_path / "new.yaml").read_bytes() == b"new\n"
    put_file(target, None)
    put_file(target, None)  # deleting what is gone is done
    assert not target.exists()


def test_put_file_never_writes_through_a_link_or_a_special_file(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"not the KB's\n")
    link = tmp_path / "link.yaml"
    link.symlink_to(outside)
    hard = tmp_path / "hard.yaml"
    os.link(outside, hard)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    for target in (link, hard, fifo):
        put_file(target, b"learning: mine\n")
        assert not target.is_symlink() and target.is_file()
        assert target.read_bytes() == b"learning: mine\n"
    assert outside.read_bytes() == b"not the KB's\n"
    assert holds(link, b"learning: mine\n") and not holds(link, b"learning: other\n")
    assert holds(tmp_path / "absent.yaml", None) and not holds(link, None)
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    with pytest.raises(IsADirectoryError):
        put_file(folder, b"learning: mine\n")
    with pytest.raises(FileNotFoundError):
        put_file(tmp_path / "no-such-folder" / "x.yaml", b"learning: mine\n")


def test_a_sha256_repository_takes_its_first_and_later_commits(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(root)], check=True)
    kb = KnowledgeBase.init(root, example=True)
    first = git(root, "rev-parse", "HEAD").strip()
    assert len(first) == 64
    assert kb.save_memory("sha-256 works", ["shop.orders"]).commit is not None
    assert git(root, "rev-list", "--count", "HEAD").strip() == "2"
    assert git(root, "status", "--porcelain") == ""
    assert fsck(root).returncode == 0


def test_a_path_changed_twice_in_one_commit_ends_as_its_last_change(catalog_kb: KnowledgeBase) -> None:
    from slayer_kb.store.repo import Change

    store = catalog_kb.store
    changes = [Change(f"memories/m{n}.yaml", f"learning: m{n}\ncreated_at: '2026-11-30T00:00:00Z'\n".encode()) for n in range(80)]
    changes.append(Change("memories/m3.yaml", b"learning: last\ncreated_at: '2026-11-30T00:00:00Z'\n"))
    with store.locked():
        store.commit(changes, "many at once")
    assert (catalog_kb.root / "memories/m3.yaml").read_text().startswith("learning: last")
    assert git(catalog_kb.root, "show", "HEAD:memories/m3.yaml").startswith("learning: last")
    assert git(catalog_kb.root, "status", "--porcelain") == ""


def test_a_commit_of_hundreds_of_files_packs_its_blobs_and_lands_whole(catalog_kb: KnowledgeBase) -> None:
    """The cascade path: blobs in one pack, temporary files written beside them on threads,
    renamed in parallel; the work tree, the commit and the user's index all agree."""
    from slayer_kb.store.objects import PACK_BLOBS
    from slayer_kb.store.repo import Change

    root = catalog_kb.root
    packs_before = set((root / ".git/objects/pack").glob("*.pack"))
    count = PACK_BLOBS + 100
    changes = [Change(f"memories/p{n}.yaml", f"learning: p{n}\ncreated_at: '2026-11-30T00:00:00Z'\n".encode()) for n in range(count)]
    with catalog_kb.store.locked():
        catalog_kb.store.commit(changes, "many at once")
    assert len(set((root / ".git/objects/pack").glob("*.pack")) - packs_before) == 1
    assert (root / "memories/p599.yaml").read_text() == "learning: p599\ncreated_at: '2026-11-30T00:00:00Z'\n"
    assert git(root, "show", "HEAD:memories/p0.yaml") == "learning: p0\ncreated_at: '2026-11-30T00:00:00Z'\n"
    assert len(git(root, "ls-tree", "--name-only", "HEAD", "memories/").split()) == count
    assert git(root, "status", "--porcelain") == ""
    assert list((root / ".slayer-kb/tmp").iterdir()) == []
    assert fsck(root).returncode == 0


@pytest.mark.parametrize("platform", ["linux", "no posix_fallocate", "file system refuses it"])
def test_a_reservation_holds_real_disk_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str) -> None:

    if platform == "no posix_fallocate":
        monkeypatch.delattr(os, "posix_fallocate")
    elif platform == "file system refuses it":
        def refuse(fd: int, offset: int, size: int) -> None:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")

        monkeypatch.setattr(os, "posix_fallocate", refuse)
    path = tmp_path / "reserve"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        files.allocate(fd, 3 * 1024 * 1024 + 5)
    finally:
        os.close(fd)
    st = path.stat()
    assert st.st_size == 3 * 1024 * 1024 + 5
    assert st.st_blocks * 512 >= st.st_size  # blocks, not a sparse hole


def test_head_branch_and_tips_read_from_the_ref_files_are_what_git_says(tmp_path: Path) -> None:
    """HEAD's commit, its branch and a remote-tracking ref's commit are read from git's files,
    loose or packed, with no git process (one each before; a sync asked for all three); git
    is asked only where the files are not plain (a symbolic ref, a peeled tag)."""
    from slayer_kb.store.repo import GitStore

    def ask(path: Path, *args: str) -> str:  # git's answer, failed or not
        return subprocess.run(["git", *args], cwd=path, capture_output=True, text=True).stdout.strip()

    def agrees(path: Path, tracking: str = "refs/remotes/origin/main") -> str | None:
        store = GitStore(path)
        with traced_git(tmp_path) as runs:
            read = (store.head(), store.branch(), store.tip(tracking))
        said = [ask(path, "rev-parse", "-q", "--verify", f"{rev}^{{commit}}") or None for rev in ("HEAD", tracking)]
        branch = ask(path, "symbolic-ref", "-q", "--short", "HEAD")
        assert read == (said[0], branch, said[1] or "")
        assert runs("") == []
        return said[0]

    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    assert agrees(root) is None  # unborn branch
    (root / "kb").mkdir()
    (root / "kb" / "a.txt").write_text("a\n")
    commit_all(root)
    first = agrees(root)
    assert first is not None and agrees(root / "kb") == first  # a KB in a folder of the repo
    git(root, "update-ref", "refs/remotes/origin/main", first)
    assert agrees(root) == first
    git(root, "pack-refs", "--all")  # packed, as a clone leaves them
    assert agrees(root) == first
    (root / "b.txt").write_text("b\n")
    commit_all(root)
    second = agrees(root)  # the branch loose again, above its packed line
    git(root, "checkout", "-q", "--detach", first)
    assert agrees(root) == first
    git(root, "worktree", "add", "-q", "-b", "wt", str(tmp_path / "other"), second)  # its branch ref is in the main repository
    assert agrees(tmp_path / "other") == second
    git(root, "tag", "-a", "-m", "a tag", "v1", first)
    git(root, "update-ref", "refs/remotes/origin/main", "v1")  # a tag object: peeled by git
    git(root, "pack-refs", "--all")
    store = GitStore(root)
    with traced_git(tmp_path) as runs:
        assert store.tip("refs/remotes/origin/main") == first
    assert len(runs("rev-parse")) == 1
    sha256 = tmp_path / "sha256"
    subprocess.run(["git", "init", "-q", "--object-format=sha256", str(sha256)], check=True)
    (sha256 / "a.txt").write_text("a\n")
    commit_all(sha256)
    assert len(agrees(sha256) or "") == 64
    # HEAD a symbolic link (core.preferSymlinkRefs), and a tag named as the branch: git is asked,
    # and the branch is still main (git's --short would say heads/main, and sync push there).
    linked = tmp_path / "linked"
    git(tmp_path, "-c", "core.preferSymlinkRefs=true", "init", "-q", "-b", "main", str(linked))
    assert (linked / ".git" / "HEAD").is_symlink()
    (linked / "a.txt").write_text("a\n")
    commit_all(linked)
    git(linked, "tag", "main")
    store = GitStore(linked)
    assert (store.branch(), store.head()) == ("main", ask(linked, "rev-parse", "HEAD"))


def test_put_file_leaves_the_file_alone_on_an_error_it_does_not_expect(tmp_path: Path) -> None:
    # Out of file descriptors (EMFILE), in a subprocess of its own: put_file must raise and keep
    # the old file, not remove it first and then fail to create the new one.
    target = tmp_path / "m.yaml"
    target.write_bytes(b"learning: kept\n")
    script = (
        "import errno, os, resource, sys\n"
        "from pathlib import Path\n"
        "from slayer_kb.store.files import put_file\n"
        "fds = [os.open(os.devnull, os.O_RDONLY)]\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (fds[0] + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "try:\n"
        "    put_file(Path(sys.argv[1]), b'learning: new\\n')\n"
        "except OSError as exc:\n"
        "    print(errno.errorcode[exc.errno])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, str(target)], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "EMFILE"
    assert target.read_bytes() == b"learning: kept\n"


def test_staged_files_before_the_first_commit_are_read_without_writing_an_object(tmp_path: Path) -> None:
    """Before the first commit every staged file counts as added, compared with the empty tree:
    that tree was written into the repository to be compared with, by a check that only reads."""
    root = tmp_path / "repo"
    (root / "memories").mkdir(parents=True)
    git(root, "init", "-q")
    (root / "memories" / "1.yaml").write_text("learning: staged\n")
    git(root, "add", "memories/1.yaml")
    blob = git(root, "rev-parse", ":memories/1.yaml").strip()
    objects = sorted(p.relative_to(root) for p in (root / ".git" / "objects").rglob("*") if p.is_file())
    assert GitStore(root).staged_new(["memories/"]) == {"memories/1.yaml": blob}
    assert sorted(p.relative_to(root) for p in (root / ".git" / "objects").rglob("*") if p.is_file()) == objects
