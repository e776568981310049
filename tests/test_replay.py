"""sync's in-process rebase (store/replay.py) against ``git rebase`` with the KB's merge driver:
on the same three versions, the same tree, commits, authors and messages, or it hands over."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slayer_kb.core.memory import Memory
from slayer_kb.core.memory import dumps as dump_memory
from slayer_kb.core.session import Prompt, Session
from slayer_kb.core.session import dumps as dump_session
from slayer_kb.ops.snapshot import blobs_at
from slayer_kb.store import mergedriver
from slayer_kb.store.replay import replay
from slayer_kb.store.repo import GitStore
from testing import examples

TOPIC, PLAIN, SESSION, BOTH_NEW = "memories/1.yaml", "memories/2.yaml", "sessions/manual-save-p.yaml", "memories/3.yaml"


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True, env=env).stdout.strip()


def topic(revisions: int, second: int, text: str, memory_id: str = "1") -> str:
    return dump_memory(Memory(id=memory_id, learning=text, created_at="2026-11-29T20:00:00Z", topic_key="arch/db",
                              revision_count=revisions, updated_at=f"2026-11-29T20:01:{second:02d}Z"))


def plain(text: str) -> str:
    return dump_memory(Memory(id="2", learning=f"Line one.\n\n{text}", created_at="2026-11-29T20:00:00Z"))


def session(*prompts: str) -> str:
    return dump_session(Session(id="manual-save-p", started_at="2026-11-29T20:00:00Z", project="p",
                                prompts=[Prompt(created_at=f"2026-11-29T20:0{i}:00Z", content=c)
                                         for i, c in enumerate(prompts)]))


BASE = {TOPIC: topic(2, 0, "base"), PLAIN: plain("base"), SESSION: session("base")}


def edits(side: str) -> st.SearchStrategy[dict[str, str | None]]:
    """A side's changes to the base: a revision of the topic memory, a prompt, an edit or a
    deletion of the plain memory, a new memory under the topic key both may add."""
    return st.fixed_dictionaries({}, optional={
        TOPIC: st.integers(0, 59).map(lambda s: topic(3, s, f"{side} revision")),
        SESSION: st.just(session("base", side)),
        PLAIN: st.sampled_from([plain(side), plain("same"), None]),
        BOTH_NEW: st.integers(0, 59).map(lambda s: topic(1, s, f"{side} new", "3")),
        f"memories/{side}.yaml": st.just(plain(f"{side} only")),
    })  # none: an empty commit (the KB makes none, a person may), kept by git rebase and the replay


def commit(root: Path, files: Mapping[str, str | None], message: str, author: str) -> None:
    for path, text in files.items():
        if text is None:
            (root / path).unlink(missing_ok=True)
        else:
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", message, f"--author={author} <{author}@example.invalid>")


def branch(root: Path, name: str, start: str) -> None:
    """Branch ``name`` at ``start``, checked out with nothing else in the work tree (the
    repository serves every example)."""
    subprocess.run(["git", "rebase", "--abort"], cwd=root, capture_output=True, check=False)
    git(root, "checkout", "-q", "-f", "-B", name, start)
    git(root, "clean", "-q", "-f", "-d", "-x")


def history(root: Path, span: str) -> list[str]:
    return git(root, "log", "--reverse", "--format=%an %ae %aI %s", span).splitlines()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("replay")
    git(root, "init", "-q", "-b", "main")
    commit(root, BASE, "base", "base")
    return root


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(upstream=edits("up"), first=edits("ours"), second=edits("later"))
def test_replay_makes_what_git_rebase_makes(repo: Path, upstream: dict[str, str | None],
                                            first: dict[str, str | None], second: dict[str, str | None]) -> None:
    branch(repo, "up", "main")
    commit(repo, upstream, "upstream's change", "up")
    branch(repo, "ours", "main")
    commit(repo, first, "our first change", "first")
    commit(repo, second, "our second change", "second")
    ours = git(repo, "rev-parse", "ours")
    tip = replay(GitStore(repo), git(repo, "rev-parse", "up"), ours).tip
    assert git(repo, "rev-parse", "ours") == ours and git(repo, "status", "--porcelain") == ""

    options, env, attributes = mergedriver.git_config("", ("up", "your commits"))
    try:
        rebase = subprocess.run(["git", *options, "rebase", "-q", "up"], cwd=repo, capture_output=True, text=True,
                                env=env)
        while rebase.returncode and not git(repo, "diff", "--name-only", "--diff-filter=U"):
            # A commit that became empty: git stops, sync skips it.
            rebase = subprocess.run(["git", *options, "-c", "core.editor=true", "rebase", "--skip"], cwd=repo,
                                    capture_output=True, text=True, env=env)
    finally:
        attributes.unlink()
    if rebase.returncode:
        # git stopped on a conflict (sync gave up): the replay hands over too, unless the
        # conflict was git's guess that a memory deleted on one side was renamed to one added
        # (files named by their ids are never renamed; the replay applies both changes).
        assert tip is None or "renamed to" in rebase.stdout + rebase.stderr
        return
    if tip is None:
        # Handed over: only where git needs its line merge.
        assert PLAIN in upstream and any(PLAIN in side and side[PLAIN] != upstream[PLAIN] for side in (first, second))
        return
    assert git(repo, "rev-parse", f"{tip}^{{tree}}") == git(repo, "rev-parse", "HEAD^{tree}")
    assert history(repo, f"up..{tip}") == history(repo, "up..HEAD")
    assert git(repo, "log", "-1", "--format=%cn", tip) == git(repo, "log", "-1", "--format=%cn", "HEAD")


def test_a_commit_that_started_empty_is_kept_as_git_rebase_keeps_it(repo: Path) -> None:
    # Hypothesis's find: our second commit deletes the memory our first already deleted (the
    # replay dropped it, as it drops a commit the upstream made empty; git rebase keeps it).
    branch(repo, "up", "main")
    commit(repo, {SESSION: session("base", "up")}, "upstream's change", "up")
    branch(repo, "ours", "main")
    commit(repo, {SESSION: session("base", "ours"), TOPIC: topic(3, 0, "ours revision"),
                  BOTH_NEW: topic(1, 0, "ours new", "3"), PLAIN: None}, "our first change", "first")
    commit(repo, {PLAIN: None}, "our second change", "second")
    up = git(repo, "rev-parse", "up")
    tip = replay(GitStore(repo), up, git(repo, "rev-parse", "ours")).tip
    assert tip is not None and git(repo, "rev-parse", f"{tip}~2") == up
    assert history(repo, f"up..{tip}") == history(repo, "main..ours")
    assert git(repo, "rev-parse", f"{tip}^{{tree}}") == git(repo, "rev-parse", f"{tip}~^{{tree}}")
    assert git(repo, "ls-tree", "-r", "--name-only", tip).splitlines() == [TOPIC, BOTH_NEW, SESSION]
    assert git(repo, "show", f"{tip}:{TOPIC}") + "\n" == topic(3, 0, "ours revision")
    assert git(repo, "show", f"{tip}:{BOTH_NEW}") + "\n" == topic(1, 0, "ours new", "3")
    assert git(repo, "show", f"{tip}:{SESSION}") + "\n" == session("base", "up", "ours").replace(
        "2026-11-29T20:02:00Z", "2026-11-29T20:01:00Z")


def test_a_merge_commit_is_left_to_git(repo: Path) -> None:
    branch(repo, "up", "main")
    commit(repo, {PLAIN: plain("up")}, "upstream", "up")
    branch(repo, "side", "main")
    commit(repo, {"memories/9.yaml": plain("side")}, "side", "side")
    branch(repo, "ours", "main")
    commit(repo, {"memories/8.yaml": plain("ours")}, "ours", "ours")
    git(repo, "merge", "-q", "--no-edit", "side")
    assert replay(GitStore(repo), git(repo, "rev-parse", "up"), git(repo, "rev-parse", "HEAD")).tip is None


def test_nothing_to_replay_is_the_upstream(repo: Path) -> None:
    up = git(repo, "rev-parse", "main")
    assert replay(GitStore(repo), up, up).tip == up


def test_records_both_sides_changed_are_merged_in_process(repo: Path) -> None:
    branch(repo, "up", "main")
    commit(repo, {TOPIC: topic(3, 5, "up revision"), SESSION: session("base", "up")}, "upstream", "up")
    branch(repo, "ours", "main")
    commit(repo, {TOPIC: topic(3, 10, "our revision"), SESSION: session("base", "ours")}, "ours", "ours")
    up = git(repo, "rev-parse", "up")
    tip = replay(GitStore(repo), up, git(repo, "rev-parse", "ours")).tip
    assert tip is not None and git(repo, "rev-parse", f"{tip}^") == up
    assert git(repo, "show", f"{tip}:{TOPIC}") + "\n" == topic(4, 10, "our revision")
    assert git(repo, "show", f"{tip}:{SESSION}") + "\n" == session("base", "up", "ours").replace(
        "2026-11-29T20:02:00Z", "2026-11-29T20:01:00Z")
    assert history(repo, f"up..{tip}") == history(repo, "ours~..ours")


def test_blobs_at_reads_many_files_of_many_commits_at_once(repo: Path) -> None:
    branch(repo, "ours", "main")
    commit(repo, {TOPIC: topic(3, 1, "later"), PLAIN: None}, "later", "later")
    store = GitStore(repo)
    assert blobs_at(store, [("main", TOPIC), ("ours", TOPIC), ("ours", PLAIN), ("main", PLAIN), ("main", "memories")]) == [
        BASE[TOPIC].encode(), topic(3, 1, "later").encode(), None, BASE[PLAIN].encode(), None]
