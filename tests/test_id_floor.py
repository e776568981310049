"""The highest auto id on a branch's history, read from the trailers of slayer-kb's commits
(store/idfloor.py): a fresh clone's first save diffs no commit when the tip carries one, and a
commit whose trailer no longer describes it (amended, rebased, forged) is diffed as any other."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.store.idtrailer import KEY, with_trailer, without_trailer
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


@pytest.mark.parametrize("said", [f"{'9' * 201} (parent {{parent}}, tree {{tree}})", "5 (parent {parent}, tree {tree})\n"
                                  f"{KEY}: 6 (parent {{parent}}, tree {{tree}})", "5"],
                         ids=["more digits than an id has", "twice", "no parent or tree"])
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
    catalog_kb.save_memory("first", ["orders"], id="a")
    catalog_kb.rename("a", "b")
    assert KEY in git(catalog_kb.root, "log", "-1", "--format=%B")
    assert [entry["message"] for entry in catalog_kb.history.log("b")] == [
        "memory: rename a to b\n\nRenamed: a -> b", "memory: save a"]


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
    written = with_trailer(message, top, parent, tree)
    commit = subprocess.run(["git", "commit-tree", tree], cwd=scratch_repo, input=written.encode(), capture_output=True,
                            check=True).stdout.decode().strip()
    said = git(scratch_repo, "-c", "trailer.separators=:", "log", "-1", f"--format=%(trailers:key={KEY},valueonly)",
               commit)
    assert said.strip() == f"{top} (parent {'1' * 12}, tree {tree[:12]})"
    assert without_trailer(written) == message.rstrip("\n")
    assert with_trailer(message, None, parent, tree) == with_trailer(message, top, None, tree) == message
