"""The highest auto id on a branch's history, read from the trailers of slayer-kb's commits
(store/idfloor.py): a fresh clone's first save diffs no commit when the tip carries one, and a
commit whose trailer no longer describes it (amended, rebased, forged) is diffed as any other."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.store.idtrailer import KEY, told, with_trailer, without_trailer
from testing import examples, git, ids_trailer, traced_git

_NOTE = "learning: by hand\ncreated_at: '2026-11-01T00:00:00Z'\n"


def _by_hand(root: Path, name: str, data: str | None, *commit: str) -> None:
    """A memory file added (or with None, deleted) by plain git, committed with ``commit``'s
    options (``-m MESSAGE`` unless given)."""
    if data is None:
        git(root, "rm", "-q", "--", f"memories/{name}")
    else:
        (root / "memories" / name).write_text(data)
        git(root, "add", "--", f"memories/{name}")
    git(root, "commit", "-q", *(commit or ("-m", f"by hand: {name}")))


def _first_save_of_a_clone(origin: Path, where: Path) -> str:
    git(origin.parent, "clone", "-q", str(origin), str(where))
    return KnowledgeBase(where).save_memory("in the clone", ["orders"]).memory_id


def test_a_fresh_clone_reads_the_highest_id_from_the_tips_trailer_and_diffs_no_commit(
        catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    root = catalog_kb.root
    for n in range(3):
        catalog_kb.save_memory(f"m{n}", ["orders"])
    catalog_kb.forget("3")
    assert git(root, "log", "-1", "--format=%B") == f"memory: forget 3\n\n{ids_trailer(root, 3)}\n"
    with traced_git(tmp_path) as runs:
        assert _first_save_of_a_clone(root, tmp_path / "clone") == "4"
    # One log of the commits' headers and trailers; no commit's files compared with its parent's.
    assert len([run for run in runs("log") if "trailers:key=Highest-auto-id" in run]) == 1
    assert (runs("diff-tree --stdin"), [run for run in runs("log") if "--name-only" in run]) == ([], [])


def test_a_commit_a_person_amended_is_diffed_though_its_trailer_was_kept(catalog_kb: KnowledgeBase,
                                                                        tmp_path: Path) -> None:
    """``git commit --amend`` keeps the message, trailer and all, and adds a file by hand: the
    trailer's tree is no longer the commit's, so its figure is not taken for it."""
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    _by_hand(root, "9.yaml", _NOTE, "--amend", "--no-edit")
    assert KEY in git(root, "log", "-1", "--format=%B")
    _by_hand(root, "9.yaml", None)
    assert _first_save_of_a_clone(root, tmp_path / "clone") == "10"


def test_a_commit_rebased_onto_another_history_is_diffed_and_that_history_read(catalog_kb: KnowledgeBase,
                                                                              tmp_path: Path) -> None:
    """A rebase replays slayer-kb's commit, trailer and all, onto commits it never saw: here a
    memory 9 added and deleted by hand. The trailer's parent is no longer the commit's."""
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    main = git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()
    git(root, "checkout", "-q", "-b", "side")
    _by_hand(root, "9.yaml", _NOTE)
    _by_hand(root, "9.yaml", None)
    git(root, "checkout", "-q", main)
    assert KnowledgeBase(root).save_memory("second", ["orders"]).memory_id == "2"
    git(root, "rebase", "-q", "side")
    assert KEY in git(root, "log", "-1", "--format=%B")
    assert _first_save_of_a_clone(root, tmp_path / "clone") == "10"


@pytest.mark.parametrize("said", [f"{'9' * 201} in memories/ (parent {{parent}}, tree {{tree}})",
                                  f"5 in memories/ (parent {{parent}}, tree {{tree}})\n{KEY}: 6 in memories/ (parent {{parent}}, tree {{tree}})",
                                  "5 in memories/", "5 in other/memories/ (parent {parent}, tree {tree})",
                                  "5 (parent {parent}, tree {tree})", "5 in memories/ (parent {parent}, tree {tree})\x1f6"],
                         ids=["more digits than an id has", "twice", "no parent or tree", "another KB's folder",
                              "no folder", "a unit separator"])
def test_a_trailer_written_by_hand_that_slayer_kb_cannot_read_is_passed_over(
        catalog_kb: KnowledgeBase, tmp_path: Path, said: str) -> None:
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    (root / "memories" / "9.yaml").write_text(_NOTE)
    git(root, "add", "memories/9.yaml")
    parent, tree = git(root, "rev-parse", "HEAD").strip(), git(root, "write-tree").strip()
    # The parent and the tree are the commit's: only the figure is unreadable.
    git(root, "commit", "-q", "-m", f"by hand\n\n{KEY}: {said.format(parent=parent[:12], tree=tree[:12])}")
    assert git(root, "rev-parse", "HEAD^{tree}").strip() == tree
    _by_hand(root, "9.yaml", None)
    assert _first_save_of_a_clone(root, tmp_path / "clone") == "10"


def test_log_shows_a_commits_message_without_the_trailer(catalog_kb: KnowledgeBase) -> None:
    catalog_kb.save_memory("first", ["orders"])
    catalog_kb.rename("1", "b")
    assert KEY in git(catalog_kb.root, "log", "-1", "--format=%B")
    assert [entry["message"] for entry in catalog_kb.history.log("b")] == [
        "memory: rename 1 to b\n\nRenamed: 1 -> b", "memory: save 1"]


_LINE = st.text(st.characters(codec="utf-8", exclude_characters="\n\r\0"), max_size=30)
_PARAGRAPH = st.lists(st.one_of(_LINE, st.builds(lambda k, v: f"{k}: {v}", st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,12}",
                                                                                        fullmatch=True), _LINE)),
                      min_size=1, max_size=3).map("\n".join)


@pytest.fixture(scope="module")
def scratch_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("trailers")
    git(root, "init", "-q")
    return root


@settings(max_examples=examples(60), deadline=None)
@given(subject=_LINE.filter(lambda s: s.strip() != ""), paragraphs=st.lists(_PARAGRAPH, max_size=3),
       top=st.integers(min_value=0, max_value=10**20))
def test_git_reads_the_trailer_from_any_message_and_log_shows_the_message_as_it_was(
        scratch_repo: Path, subject: str, paragraphs: list[str], top: int) -> None:
    """git's own reading of a commit's trailers (the reference: the ``git log`` format idfloor.py
    reads them with) finds the figure whatever the message says before it, and taking the line out
    gives the message back."""
    message = "\n\n".join([subject, *paragraphs])
    parent, tree = "1" * 40, "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree
    written = with_trailer(message, top, "sub/kb (1)/", parent, tree)
    commit = subprocess.run(["git", "commit-tree", tree], cwd=scratch_repo, input=written.encode(), capture_output=True,
                            check=True).stdout.decode().strip()
    said = git(scratch_repo, "-c", "trailer.separators=:", "log", "-1", f"--format=%(trailers:key={KEY},valueonly)",
               commit)
    assert said.strip() == f"{top} in sub/kb (1)/memories/ (parent {'1' * 12}, tree {tree[:12]})"
    assert told(said.strip(), "sub/kb (1)/", [parent], tree) == top
    assert told(said.strip(), "", [parent], tree) is None
    assert without_trailer(written) == message.rstrip("\n")
    assert with_trailer(message, None, "", parent, tree) == with_trailer(message, top, "", None, tree) == message


def test_two_kbs_of_one_repository_count_apart(tmp_path: Path) -> None:
    """A trailer names its KB's memory folder: KB b never takes KB a's figure for its own. Here a's
    save at the tip records 1, made in a clone whose a had no memory; b forgot its 3 before."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))

    def clone(name: str) -> Path:
        git(tmp_path, "clone", "-q", str(origin), str(tmp_path / name))
        git(tmp_path / name, "config", "slayer-kb.ids", "sequential")  # counted in the clone: no leases
        return tmp_path / name

    x = clone("x")
    git(x, "commit", "-q", "--allow-empty", "-m", "root")
    KnowledgeBase.init(x / "a")
    b = KnowledgeBase.init(x / "b")
    for n in range(3):
        b.save_observation(f"b{n}", f"note b{n}")
    b.forget("3")
    git(x, "push", "-q", "origin", "HEAD:main")
    y = clone("y")
    assert KnowledgeBase(y / "a").save_observation("a0", "note a0").memory_id == "1"
    assert git(y, "log", "-1", "--format=%B").endswith(f"\n\n{ids_trailer(y, 1, folder='a/memories/')}\n")
    git(y, "push", "-q", "origin", "HEAD:main")
    assert KnowledgeBase(clone("z") / "b").save_observation("b again", "note b again").memory_id == "4"


def test_a_shallow_clone_records_no_figure_and_a_full_clone_reads_past_its_commits(tmp_path: Path,
                                                                                   catalog_kb: KnowledgeBase) -> None:
    """A clone of depth 1 sees none of the history before its tip: the figure it reads there may
    be low (here 2, the forgotten 3 out of sight), so its commits record none."""
    root = catalog_kb.root
    for n in range(3):
        catalog_kb.save_memory(f"m{n}", ["orders"])
    catalog_kb.forget("3")
    catalog_kb.update("1", learning="m0, edited")
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{root}", str(tmp_path / "shallow"))
    shallow = KnowledgeBase(tmp_path / "shallow")
    shallow.update("2", learning="m1, edited in the shallow clone")
    assert KEY not in git(shallow.root, "log", "-1", "--format=%B")
    git(shallow.root, "push", "-q", "origin", "HEAD:refs/heads/from-shallow")
    git(root, "merge", "-q", "--ff-only", "from-shallow")
    git(tmp_path, "clone", "-q", str(root), str(tmp_path / "full"))
    assert KnowledgeBase(tmp_path / "full").save_memory("in the full clone", ["orders"]).memory_id == "4"


def test_a_fresh_clones_first_command_that_is_no_save_reads_no_history(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """Only a save counts ids: an update in a fresh clone records no figure rather than read the
    whole history for one (its first save reads it, from the trailers, and records it after)."""
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    _by_hand(root, "5.yaml", _NOTE)  # no trailer at the tip: a walk would diff this commit
    git(tmp_path, "clone", "-q", str(root), str(tmp_path / "clone"))
    clone = KnowledgeBase(tmp_path / "clone")
    with traced_git(tmp_path) as runs:
        clone.update("1", learning="first, edited")
    assert (runs("diff-tree --stdin"), KEY in git(clone.root, "log", "-1", "--format=%B")) == ([], False)
    assert clone.save_memory("second", ["orders"]).memory_id == "6"
    assert git(clone.root, "log", "-1", "--format=%B").endswith(f"\n\n{ids_trailer(clone.root, 6)}\n")


def test_a_persons_comment_character_hides_no_trailer(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    root = catalog_kb.root
    catalog_kb.save_memory("first", ["orders"])
    git(tmp_path, "clone", "-q", str(root), str(tmp_path / "clone"))
    git(tmp_path / "clone", "config", "core.commentChar", "H")
    with traced_git(tmp_path) as runs:
        assert KnowledgeBase(tmp_path / "clone").save_memory("second", ["orders"]).memory_id == "2"
    assert runs("diff-tree --stdin") == []


def test_an_earlier_versions_cache_is_counted_on_but_never_recorded(catalog_kb: KnowledgeBase) -> None:
    """An earlier version's ``ids.json`` ("max") counted the work tree's files in: a save counts on
    from it, but no commit records it; the next save reads the whole history once, and records."""
    root = catalog_kb.root
    for n in range(3):
        catalog_kb.save_memory(f"m{n}", ["orders"])
    catalog_kb.forget("3")
    head = git(root, "rev-parse", "HEAD").strip()
    (root / ".slayer-kb" / "ids.json").write_text(json.dumps({"head": head, "max": 7}), encoding="utf-8")
    kb = KnowledgeBase(root)
    kb.update("1", learning="m0, edited")
    assert KEY not in git(root, "log", "-1", "--format=%B")
    assert kb.save_memory("after the upgrade", ["orders"]).memory_id == "8"
    assert git(root, "log", "-1", "--format=%B").endswith(f"\n\n{ids_trailer(root, 8)}\n")
