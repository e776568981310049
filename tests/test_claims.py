"""The one step id leases and a sync's turn take on the remote (store/claims.py): a ref created
there only if absent, or moved only from the holder expected; each ref created, taken by another
clone, or refused by the remote."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from slayer_kb.core import priority
from slayer_kb.core.errors import StoreError
from slayer_kb.store import claims
from slayer_kb.store.repo import GitStore
from testing import git, make_team

REF = "refs/slayer-kb/test/1"
OTHER = "refs/slayer-kb/test/2"


@pytest.fixture
def clone(tmp_path: Path) -> tuple[Path, GitStore]:
    bare, (root,) = make_team(tmp_path, 1)
    return bare, GitStore(root)


def held(bare: Path, ref: str) -> str:
    """Who holds ``ref`` on the remote, as its commit says."""
    return git(bare, "log", "-1", "--format=%an <%ae> %cn <%ce>: %B", ref)


def test_a_ref_is_created_once_then_taken(clone: tuple[Path, GitStore]) -> None:
    bare, store = clone
    first = claims.holder_commit(store, "held by the first\n")
    assert claims.claim(store, "origin", first, {REF: ""}) == {REF: claims.CREATED}
    assert held(bare, REF) == "slayer-kb <slayer-kb@localhost> slayer-kb <slayer-kb@localhost>: held by the first\n\n"
    second = claims.holder_commit(store, "held by the second\n")
    assert claims.claim(store, "origin", second, {REF: ""}) == {REF: claims.TAKEN}
    assert git(bare, "rev-parse", REF).strip() == first


def test_a_holder_is_replaced_only_by_one_that_expected_it(clone: tuple[Path, GitStore]) -> None:
    bare, store = clone
    first, second, third = (claims.holder_commit(store, f"holder {n}\n") for n in range(3))
    assert claims.claim(store, "origin", first, {REF: ""}) == {REF: claims.CREATED}
    assert claims.claim(store, "origin", second, {REF: first}) == {REF: claims.CREATED}  # a takeover
    assert claims.claim(store, "origin", third, {REF: first}) == {REF: claims.TAKEN}  # first is gone
    assert git(bare, "rev-parse", REF).strip() == second


def test_refs_claimed_together_have_each_its_outcome(clone: tuple[Path, GitStore]) -> None:
    bare, store = clone
    first = claims.holder_commit(store, "one\n")
    assert claims.claim(store, "origin", first, {REF: ""}) == {REF: claims.CREATED}
    both = claims.holder_commit(store, "both\n")
    assert claims.claim(store, "origin", both, {REF: "", OTHER: ""}) == {REF: claims.TAKEN, OTHER: claims.CREATED}
    assert git(bare, "for-each-ref", "--format=%(objectname) %(refname)", "refs/slayer-kb/") == (
        f"{first} {REF}\n{both} {OTHER}\n")


def test_a_remote_that_will_not_take_the_refs_refuses_them(clone: tuple[Path, GitStore]) -> None:
    bare, store = clone
    hook = bare / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'refs/slayer-kb/ is protected'; exit 1\n")
    hook.chmod(0o755)
    commit = claims.holder_commit(store, "refused\n")
    assert claims.claim(store, "origin", commit, {REF: "", OTHER: ""}) == {REF: claims.REFUSED, OTHER: claims.REFUSED}
    assert claims.claim(store, "nowhere", commit, {REF: ""}) == {REF: claims.REFUSED}  # no such remote
    assert git(bare, "for-each-ref", "refs/slayer-kb/") == ""


def _recording_hook(bare: Path, body: str) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755)


@pytest.mark.skipif(shutil.which("nice") is None, reason="git is run lower through nice")
def test_a_claim_runs_git_at_the_niceness_of_the_write(clone: tuple[Path, GitStore]) -> None:
    # The remote's hook is a child of the push, so it inherits the push's niceness.
    bare, store = clone
    _recording_hook(bare, f"\"{sys.executable}\" -c 'import os; print(os.nice(0))' > \"{bare}/nice-seen\"; exit 1")
    store.niceness = 5
    commit = claims.holder_commit(store, "lower\n")
    assert claims.claim(store, "origin", commit, {REF: ""}) == {REF: claims.REFUSED}
    assert (bare / "nice-seen").read_text() == f"{min(priority.MAX, os.nice(0) + 5)}\n"


def test_a_remote_that_does_not_answer_in_time_is_unreachable(clone: tuple[Path, GitStore],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    bare, store = clone
    _recording_hook(bare, "sleep 30; exit 1")
    monkeypatch.setattr(claims, "NETWORK_SECONDS", 1.0)
    commit = claims.holder_commit(store, "too slow\n")
    assert claims.claim(store, "origin", commit, {REF: ""}) is None
    assert git(bare, "for-each-ref", "refs/slayer-kb/") == ""


def test_a_claim_without_git_says_git_is_not_installed(clone: tuple[Path, GitStore], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _, store = clone
    commit = claims.holder_commit(store, "no git\n")
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(StoreError) as raised:
        claims.claim(store, "origin", commit, {REF: ""})
    assert str(raised.value) == "git is not installed or not on PATH; install git first."
