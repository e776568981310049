"""Links to kb.x across the renames crossing (clone a forgets kb.y and renames kb.x to kb.y, clone
b renames kb.y to kb.m): X lives at kb.y, whatever the commit dates say, and a link b or a third
clone made to kb.x goes there. Real clones of one bare remote; every ``slayer-kb`` command run in
this process, git as git."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from slayer_kb.store.idtrailer import without_trailer
from testing import CliRunner, git, given_again, make_catalog_kb, make_team, unlike

# A crossing suite: run by `-m slow`, which CI runs (docs/testing.md, "The crossing suites").
pytestmark = pytest.mark.slow

BEE = ("--author", "Bee <bee@example.com>")


def _memories(clone: Path) -> dict[str, tuple[str, list[str]]]:
    """Each memory file: the first word of its text, and its links to memories."""
    return {path.name: (path.read_text().split("learning: ", 1)[1].split(" ", 1)[0],
                        re.findall(r"memory:\S+", path.read_text()))
            for path in sorted((clone / "memories").glob("*.yaml"))}


def _dated(monkeypatch: pytest.MonkeyPatch, minute: int) -> None:
    """The commits from here on dated at ``minute``: the order ``git log`` walks the two sides in."""
    for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(name, f"2026-11-30T12:{minute:02}:00Z")


@pytest.mark.parametrize(("forgetter_first", "keep"), [(True, True), (False, True), (True, False), (False, False)])
def test_a_link_to_the_renamed_memory_follows_it_whatever_the_commit_order(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, forgetter_first: bool,
        keep: bool) -> None:
    """b links kb.x after they parted, c (a copy of b from before) too. The closing sync pointed
    b's link at kb.m (Y) when b's rename was the later commit, or stripped it when b let kb.m go:
    the two sides' renames taken for one chain, kb.x to kb.y to kb.m. The stop's validate step
    told to prune the link, which strips it."""
    _bare, (a, b) = make_team(tmp_path)
    _dated(monkeypatch, 0)
    for tag, memory_id in (("xray", "kb.x"), ("yank", "kb.y")):
        invoke_cli("--kb", a, "save", unlike(tag), "--id", memory_id, "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    c = tmp_path / "c"
    shutil.copytree(b, c, symlinks=True)
    for minute, clone in enumerate((a, b) if forgetter_first else (b, a), start=1):
        _dated(monkeypatch, minute)
        if clone == a:
            invoke_cli("--kb", a, "forget", "kb.y", check=True)
            invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
        else:
            invoke_cli("--kb", b, *BEE, "save", unlike("bravo"), "--id", "kb.bx", "-e", "memory:kb.x", check=True)
            invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    _dated(monkeypatch, 3)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    assert invoke_cli("--kb", b, "merge", "origin/main").returncode == 1
    # The stop's validate step: no prune, which would strip the link to X.
    assert invoke_cli("validate", cwd=b).stdout.startswith(
        "memories/kb.bx.yaml:3: 'memory:kb.x' refers to kb.x, which the branch being merged (MERGE_HEAD) renamed to "
        "kb.y: leave it; once the merge is committed, 'slayer-kb sync' points it at kb.y\n")
    git(b, *(["add"] if keep else ["rm", "-q"]), "memories/kb.m.yaml")
    git(b, "commit", "-q", "--no-edit")
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert "memory:kb.x -> memory:kb.m" not in synced.stdout
    kept = {"kb.m.yaml": ("yank0word", [])} if keep else {}
    assert _memories(b) == {"kb.bx.yaml": ("bravo0word", ["memory:kb.y"]), **kept, "kb.y.yaml": ("xray0word", [])}
    invoke_cli("--kb", c, "save", unlike("charlie"), "--id", "kb.cx", "-e", "memory:kb.x", check=True)
    synced = invoke_cli("--kb", c, "sync", check=True)
    assert synced.stdout.endswith("  rewrote links to renamed memories: memory:kb.x -> memory:kb.y in kb.cx\n")
    assert _memories(c)["kb.cx.yaml"] == ("charlie0word", ["memory:kb.y"])


@pytest.mark.parametrize("a_first", [True, False])
def test_two_memories_renamed_onto_one_id_each_keep_their_links(
        tmp_path: Path, invoke_cli: CliRunner, monkeypatch: pytest.MonkeyPatch, a_first: bool) -> None:
    """a renames kb.x to kb.y; b renames kb.w to kb.y, then kb.y to kb.m; b merges a's (git keeps
    both, X at kb.y, W at kb.m). c's links to kb.x and kb.w go to kb.y and kb.m: b's kb.y -> kb.m
    moved W, not X. The sync read the last rename that gave kb.y for both chains: it stripped
    c's link to kb.x as forgotten (a's the earlier) or sent kb.w's link to kb.y (b's the earlier)."""
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    _dated(monkeypatch, 0)
    for tag, memory_id in (("xray", "kb.x"), ("whisky", "kb.w")):
        invoke_cli("--kb", a, "save", unlike(tag), "--id", memory_id, "-e", "shop.orders", check=True)
    for clone in (a, b, c):
        invoke_cli("--kb", clone, "sync", check=True)
    invoke_cli("--kb", c, "save", unlike("cx"), "--id", "kb.cx", "-e", "memory:kb.x", check=True)
    invoke_cli("--kb", c, "save", unlike("cw"), "--id", "kb.cw", "-e", "memory:kb.w", check=True)
    _dated(monkeypatch, 1 if a_first else 2)
    invoke_cli("--kb", a, "rename", "kb.x", "kb.y", check=True)
    _dated(monkeypatch, 2 if a_first else 1)
    invoke_cli("--kb", b, *BEE, "rename", "kb.w", "kb.y", check=True)
    _dated(monkeypatch, 3)
    invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    _dated(monkeypatch, 5)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "fetch", "-q", "origin")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    synced = invoke_cli("--kb", c, "sync", check=True)
    assert synced.stdout.endswith("  rewrote links to renamed memories: memory:kb.w -> memory:kb.m in kb.cw, "
                                  "memory:kb.x -> memory:kb.y in kb.cx\n")
    assert _memories(c) == {"kb.cw.yaml": ("cw0word", ["memory:kb.m"]), "kb.cx.yaml": ("cx0word", ["memory:kb.y"]),
                            "kb.m.yaml": ("whisky0word", []), "kb.y.yaml": ("xray0word", [])}


@pytest.mark.parametrize("merger", ["a", "b"])
def test_validate_sends_a_link_to_a_renamed_id_to_sync_until_the_merge_is_synced(
        tmp_path: Path, invoke_cli: CliRunner, merger: str) -> None:
    """a forgets kb.y and renames kb.x to kb.y; b links kb.x and renames kb.y to kb.m; the other
    syncs first and ``merger`` merges it. validate, during the stop and between the printed
    ``git commit --no-edit`` and the sync, said of b's link to kb.x "does not exist (run prune)",
    which strips a link to a live memory for good, save while MERGE_HEAD was the renaming side."""
    a, b = given_again(tmp_path, invoke_cli)
    invoke_cli("--kb", b, *BEE, "save", unlike("bravo"), "--id", "kb.bx", "-e", "memory:kb.x", check=True)
    invoke_cli("--kb", b, *BEE, "rename", "kb.y", "kb.m", check=True)
    clone, first = (a, b) if merger == "a" else (b, a)
    invoke_cli("--kb", first, "sync", check=True)
    git(clone, "fetch", "-q", "origin")
    assert invoke_cli("--kb", clone, "merge", "origin/main").returncode == 1
    by = "this branch" if merger == "a" else "the branch being merged (MERGE_HEAD)"
    assert invoke_cli("validate", cwd=clone).stdout.startswith(
        f"memories/kb.bx.yaml:3: 'memory:kb.x' refers to kb.x, which {by} renamed to kb.y: leave it; once the merge "
        "is committed, 'slayer-kb sync' points it at kb.y\n")
    git(clone, "add", "memories/kb.m.yaml")
    git(clone, "commit", "-q", "--no-edit")
    merge = git(clone, "rev-parse", "--short=12", "HEAD").strip()
    assert invoke_cli("validate", cwd=clone).stdout.startswith(
        f"memories/kb.bx.yaml:3: 'memory:kb.x' refers to kb.x, which a side of merge {merge}, not yet synced, renamed "
        "to kb.y: leave it; 'slayer-kb sync' points it at kb.y\n")
    synced = invoke_cli("--kb", clone, "sync", check=True)
    assert synced.stdout.endswith("  rewrote links to renamed memories: memory:kb.x -> memory:kb.y in kb.bx\n")
    assert _memories(clone) == {"kb.bx.yaml": ("bravo0word", ["memory:kb.y"]), "kb.m.yaml": ("yank0word", []),
                                "kb.y.yaml": ("xray0word", [])}
    assert invoke_cli("validate", cwd=clone).returncode == 0


def test_with_no_remote_a_link_to_a_renamed_memory_is_pointed_at_it_by_prune(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A KB with no remote: main renames kb.x to kb.z, branch side links kb.x, and both edit kb.y,
    so ``slayer-kb merge main`` stops. validate said ``'slayer-kb sync' points it at kb.z``, a
    sync that cannot run here; once the merge was committed, "does not exist (run 'slayer-kb
    prune' to strip it)", and prune stripped the link to a live memory. Now both name prune,
    which points the link at kb.z."""
    kb = make_catalog_kb(tmp_path / "kb")
    for tag, memory_id in (("xray", "kb.x"), ("yank", "kb.y")):
        invoke_cli("--kb", kb, "save", unlike(tag), "--id", memory_id, "-e", "shop.orders", check=True)
    git(kb, "branch", "side")
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.z", check=True)
    invoke_cli("--kb", kb, "update", "kb.y", "--description", "main's summary", check=True)
    git(kb, "switch", "-q", "side")
    invoke_cli("--kb", kb, "save", unlike("bravo"), "--id", "kb.bx", "-e", "memory:kb.x", check=True)
    invoke_cli("--kb", kb, "update", "kb.y", "--description", "side's summary", check=True)
    main = git(kb, "rev-parse", "--abbrev-ref", "@{-1}").strip()
    assert invoke_cli("--kb", kb, "merge", main).returncode == 1
    assert invoke_cli("validate", cwd=kb).stdout.startswith(
        "memories/kb.bx.yaml:3: 'memory:kb.x' refers to kb.x, which the branch being merged (MERGE_HEAD) renamed to "
        "kb.z: leave it; once the merge is committed, 'slayer-kb prune' points it at kb.z\n")
    git(kb, "checkout", "--theirs", "memories/kb.y.yaml")
    git(kb, "add", "memories/kb.y.yaml")
    git(kb, "commit", "-q", "--no-edit")
    renamed = git(kb, "log", "-1", "--format=%h", "--abbrev=12", main, "--", "memories/kb.z.yaml").strip()
    checked = invoke_cli("validate", cwd=kb)
    assert (checked.returncode, checked.stdout) == (1, (
        f"memories/kb.bx.yaml:3: 'memory:kb.x' refers to kb.x, which commit {renamed} renamed to kb.z: run 'slayer-kb "
        "prune' to point it at kb.z\n1 problem in 1 file (3 files checked)\n"))
    pruned = invoke_cli("--kb", kb, "prune", check=True)
    assert pruned.stdout.startswith("Pointed in memory kb.bx: memory:kb.x at memory:kb.z (renamed)\n(commit ")
    assert without_trailer(git(kb, "log", "-1", "--format=%B")) == (
        "catalog: prune 1 dangling reference: point 1 at a renamed memory\n\nPointed memory:kb.x at memory:kb.z (renamed) in kb.bx")
    assert _memories(kb)["kb.bx.yaml"] == ("bravo0word", ["memory:kb.z"])
    assert invoke_cli("validate", cwd=kb, check=True).stdout.endswith("no problems.\n")
