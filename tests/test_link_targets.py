"""Where ``prune``, ``validate`` and ``sync`` send a link to an id a rename moved: the memory the id
held when the link was made, only while HEAD holds it. Real clones of one bare remote (or a KB
with no remote: merges committed by hand), every ``slayer-kb`` command run in this process, git as
git."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.store import requests
from slayer_kb.store.idtrailer import without_trailer
from testing import CliRunner, git, make_team, traced_git, unlike

# A crossing suite: run by `-m slow`, which CI runs (docs/testing.md, "The crossing suites").
pytestmark = pytest.mark.slow


def _links(clone: Path) -> dict[str, list[str]]:
    """Each memory file: its links to memories."""
    return {path.name: re.findall(r"memory:\S+", path.read_text())
            for path in sorted((clone / "memories").glob("*.yaml"))}


def _alone(tmp_path: Path, invoke_cli: CliRunner) -> Path:
    """A KB with no remote holding kb.x and kb.y, and a branch L off it."""
    _bare, (kb,) = make_team(tmp_path, clones=1)
    git(kb, "remote", "remove", "origin")
    for tag, memory_id in (("xray", "kb.x"), ("yank", "kb.y")):
        invoke_cli("--kb", kb, "save", unlike(tag), "--id", memory_id, "-e", "shop.orders", check=True)
    git(kb, "branch", "L")
    return kb


def _on_l(kb: Path, invoke_cli: CliRunner, link: str) -> None:
    git(kb, "switch", "-q", "L")
    invoke_cli("--kb", kb, "save", unlike("kilo"), "--id", "kb.k", "-e", link, check=True)
    git(kb, "switch", "-q", "main")


def test_prune_strips_a_link_to_a_forgotten_id_another_memory_was_given_and_moved_on(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """L links kb.y; main forgets kb.y, renames kb.x to kb.y and on to kb.z. The rename of kb.y
    moved X, not the Y the link meant: validate and prune pointed the link at kb.z (X)."""
    kb = _alone(tmp_path, invoke_cli)
    _on_l(kb, invoke_cli, "memory:kb.y")
    invoke_cli("--kb", kb, "forget", "kb.y", check=True)
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.y", check=True)
    invoke_cli("--kb", kb, "rename", "kb.y", "kb.z", check=True)
    git(kb, "merge", "-q", "--no-edit", "L")
    checked = invoke_cli("validate", cwd=kb)
    assert (checked.returncode, checked.stdout) == (1, (
        "memories/kb.k.yaml:3: 'memory:kb.y' refers to a memory that does not exist (run 'slayer-kb prune' to strip "
        "it)\n1 problem in 1 file (2 files checked)\n"))
    pruned = invoke_cli("--kb", kb, "prune", check=True)
    assert pruned.stdout.startswith("Stripped from memory kb.k: memory:kb.y\n(commit ")
    assert without_trailer(git(kb, "log", "-1", "--format=%B")) == (
        "catalog: prune 1 dangling reference\n\nStripped memory:kb.y from 1 memory: kb.k")
    assert _links(kb) == {"kb.k.yaml": [], "kb.z.yaml": []}


def test_prune_points_no_link_at_an_id_a_merge_deleted(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """L links kb.x; main forgets kb.y and renames kb.x to it; B deleted kb.y by hand, and the
    merge of B, resolved by deleting kb.y, is the only commit that deleted X's file (which no
    ``git log --diff-filter=D`` shows). validate said strip; prune pointed the link at kb.y, and
    validate then failed on that link."""
    kb = _alone(tmp_path, invoke_cli)
    _on_l(kb, invoke_cli, "memory:kb.x")
    git(kb, "switch", "-q", "-c", "B")
    git(kb, "rm", "-q", "memories/kb.y.yaml")
    git(kb, "commit", "-qm", "kb.y deleted by hand")
    git(kb, "switch", "-q", "main")
    invoke_cli("--kb", kb, "forget", "kb.y", check=True)
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.y", check=True)
    assert subprocess.run(["git", "merge", "-q", "--no-edit", "B"], cwd=kb, capture_output=True).returncode == 1
    git(kb, "rm", "-q", "memories/kb.y.yaml")
    git(kb, "commit", "-q", "--no-edit")
    git(kb, "merge", "-q", "--no-edit", "L")
    expected = ("memories/kb.k.yaml:3: 'memory:kb.x' refers to a memory that does not exist (run 'slayer-kb prune' "
                "to strip it)\n")
    assert invoke_cli("validate", cwd=kb).stdout.startswith(expected)
    pruned = invoke_cli("--kb", kb, "prune", check=True)
    assert pruned.stdout.startswith("Stripped from memory kb.k: memory:kb.x\n(commit ")
    assert _links(kb)["kb.k.yaml"] == []
    assert invoke_cli("validate", cwd=kb, check=True).stdout.endswith("no problems.\n")


def test_validate_in_a_stopped_merge_says_prune_once_it_is_committed(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A merge committed by hand left a link to kb.x, renamed to kb.z; a later merge stopped on a
    conflict. validate told to run prune, which refuses while MERGE_HEAD exists."""
    kb = _alone(tmp_path, invoke_cli)
    _on_l(kb, invoke_cli, "memory:kb.x")
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.z", check=True)
    renamed = git(kb, "rev-parse", "--short=12", "HEAD").strip()
    git(kb, "merge", "-q", "--no-edit", "L")
    git(kb, "switch", "-q", "-c", "S", "HEAD~1")
    invoke_cli("--kb", kb, "update", "kb.y", "--description", "S's summary", check=True)
    git(kb, "switch", "-q", "main")
    invoke_cli("--kb", kb, "update", "kb.y", "--description", "main's summary", check=True)
    assert invoke_cli("--kb", kb, "merge", "S").returncode == 1
    assert invoke_cli("validate", cwd=kb).stdout.startswith(
        f"memories/kb.k.yaml:3: 'memory:kb.x' refers to kb.x, which commit {renamed} renamed to kb.z: once the merge "
        "is concluded ('git commit --no-edit' when its conflicts are resolved, or 'git merge --abort'), run "
        "'slayer-kb prune' to point it at kb.z\n")


def test_prune_names_the_links_it_strips_and_those_it_points(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """One link to a forgotten memory, one to a renamed one: the subject counted both as stripped."""
    kb = _alone(tmp_path, invoke_cli)
    git(kb, "switch", "-q", "L")
    invoke_cli("--kb", kb, "save", unlike("kilo"), "--id", "kb.k", "-e", "memory:kb.x", "-e", "memory:kb.y",
               check=True)
    git(kb, "switch", "-q", "main")
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.z", check=True)
    invoke_cli("--kb", kb, "forget", "kb.y", check=True)
    git(kb, "merge", "-q", "--no-edit", "L")
    invoke_cli("--kb", kb, "prune", check=True)
    assert without_trailer(git(kb, "log", "-1", "--format=%B")) == (
        "catalog: prune 2 dangling references: strip 1, point 1 at a renamed memory\n\n"
        "Stripped memory:kb.y from 1 memory: kb.k\nPointed memory:kb.x at memory:kb.z (renamed) in kb.k")
    assert _links(kb)["kb.k.yaml"] == ["memory:kb.z"]


def test_a_memory_restored_edited_and_renamed_takes_the_other_clones_link_along(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """a forgets kb.y, restores it, edits it and renames it to kb.m; b links kb.y. The restored
    memory is the same memory: b's sync stripped the link, taking the rename for one of another."""
    _bare, (a, b) = make_team(tmp_path)
    for tag, memory_id in (("xray", "kb.x"), ("yank", "kb.y")):
        invoke_cli("--kb", a, "save", unlike(tag), "--id", memory_id, "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    invoke_cli("--kb", a, "forget", "kb.y", check=True)
    invoke_cli("--kb", a, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    invoke_cli("--kb", a, "update", "kb.y", "--description", "edited after restore", check=True)
    invoke_cli("--kb", a, "rename", "kb.y", "kb.m", check=True)
    invoke_cli("--kb", b, "save", unlike("lima"), "--id", "kb.l", "-e", "memory:kb.y", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    synced = invoke_cli("--kb", b, "sync", check=True)
    assert "rewrote links to renamed memories: memory:kb.y -> memory:kb.m in kb.l" in synced.stdout
    assert _links(b)["kb.l.yaml"] == ["memory:kb.m"]


def test_a_sync_whose_branch_forgot_nothing_looks_for_no_memory_brought_back(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Both clones edit the same memories: the rebasing sync ran a ``git log`` of the branch's
    deletions and additions to find a memory forgotten and brought back, though the replay had
    read every commit's changes and seen no memory file deleted."""
    _bare, (a, b) = make_team(tmp_path)
    for n in range(3):
        invoke_cli("--kb", a, "save", unlike(f"m{n}x"), "--id", f"kb.m{n}", "-e", "shop.orders", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    invoke_cli("--kb", b, "sync", check=True)
    for n in range(3):
        invoke_cli("--kb", a, "update", f"kb.m{n}", "--description", f"a's {n}", check=True)
        invoke_cli("--kb", b, "update", f"kb.m{n}", "--title", f"b's {n}", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    with traced_git(tmp_path) as runs:
        synced = invoke_cli("--kb", b, "sync", check=True)
    assert synced.stdout.startswith("Synced main with origin: rebased, 3 pulled, 3 pushed.")
    # crossings' look at each tip's deletions and additions (both sides wrote the files), none more
    assert len([run for run in runs("log") if "--diff-filter=AD" in run]) == 2
    assert subprocess.run(["git", "diff", "--quiet", "origin/main"], cwd=b).returncode == 0


def test_commands_given_a_forgotten_id_another_memory_was_given_and_moved_on_say_it_was_forgotten(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """kb.y is forgotten, kb.x renamed to kb.y and on to kb.z: the rename of kb.y moved X, not the
    Y agents were told kb.y of (``link_target``'s rule). ``get kb.y`` said "renamed to 'kb.z':
    use that id", ``save --reuse-id`` took kb.y for an id renamed to a live memory, and ``save --id
    kb.y`` refused it as renamed away."""
    kb = _alone(tmp_path, invoke_cli)
    invoke_cli("--kb", kb, "forget", "kb.y", check=True)
    forgot = git(kb, "rev-parse", "--short=12", "HEAD").strip()
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.y", check=True)
    invoke_cli("--kb", kb, "rename", "kb.y", "kb.z", check=True)
    renamed = git(kb, "rev-parse", "--short=12", "HEAD").strip()
    step = f"slayer-kb --kb {kb} restore kb.y --rev {forgot}~1"
    said = (f"Error: Memory 'kb.y' was forgotten for good in commit {forgot}, and the id then given to another "
            f"memory, which was renamed to 'kb.z' in commit {renamed}: bring the forgotten one's last version back "
            f"with '{step}'.\n")
    for command in ("get", "show", "forget"):
        assert invoke_cli("--kb", kb, command, "kb.y").stderr == said
    reused = invoke_cli("--kb", kb, "save", unlike("zulu"), "--id", "kb.y", "--reuse-id", "-e", "shop.orders")
    assert (reused.returncode, reused.stderr) == (1, (
        "Error: --reuse-id gives an id a rename moved to another memory, and no rename moved 'kb.y' to one that is "
        "still there: drop --reuse-id.\n"))
    invoke_cli(*step.split()[1:], check=True)
    texts = {name: (kb / "memories" / f"{name}.yaml").read_text() for name in ("kb.y", "kb.z")}
    assert "yank" in texts["kb.y"] and "xray" in texts["kb.z"] and "yank" not in texts["kb.z"]
    git(kb, "reset", "-q", "--hard", "HEAD~1")  # the restore undone: a new memory may take the id
    saved = invoke_cli("--kb", kb, "save", unlike("zulu"), "--id", "kb.y", "-e", "shop.orders", check=True)
    assert saved.stdout.startswith("Saved memory kb.y (created)\n")


def test_an_id_renamed_away_then_given_to_another_memory_moved_on_says_where_the_first_went(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Y at kb.y forgotten, restored and renamed to kb.m (the history a merge of a brought-back
    memory leaves); kb.y then given to V (``--reuse-id``), renamed on to kb.v. ``get kb.y`` said
    Y was "forgotten for good" in the commit that renamed it, and its restore step, pasted, put Y
    at kb.y beside kb.m: two copies. Now it names the rename, and prints no restore."""
    kb = _alone(tmp_path, invoke_cli)
    invoke_cli("--kb", kb, "forget", "kb.y", check=True)
    invoke_cli("--kb", kb, "restore", "kb.y", "--rev", "HEAD~1", check=True)
    invoke_cli("--kb", kb, "rename", "kb.y", "kb.m", check=True)
    moved = git(kb, "rev-parse", "--short=12", "HEAD").strip()
    invoke_cli("--kb", kb, "save", unlike("victor"), "--id", "kb.y", "--reuse-id", "-e", "shop.orders", check=True)
    invoke_cli("--kb", kb, "rename", "kb.y", "kb.v", check=True)
    renamed = git(kb, "rev-parse", "--short=12", "HEAD").strip()
    said = (f"Error: Memory 'kb.y' was renamed to 'kb.m' in commit {moved}, and the id then given to another "
            f"memory, which was renamed to 'kb.v' in commit {renamed}: give 'kb.m' for the first, 'kb.v' for the "
            "other.\n")
    for command in ("get", "show", "forget"):
        assert invoke_cli("--kb", kb, command, "kb.y").stderr == said
    assert sorted(p.name for p in (kb / "memories").glob("kb.[mvy].yaml")) == ["kb.m.yaml", "kb.v.yaml"]


def test_a_prune_answer_rebuilt_from_its_commit_names_the_links_it_pointed(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """L links kb.x (kb.j, kb.k) and kb.y (kb.k); main forgets kb.y and renames kb.x to kb.z. The
    prune after the merge points the links to kb.x at kb.z and strips kb.k's to kb.y. Its answer
    rebuilt from the commit (``history.landed``: the client of a server killed once the commit
    landed) listed the pointed links as stripped, ``relinked`` empty: now the live answer."""
    kb = _alone(tmp_path, invoke_cli)
    git(kb, "switch", "-q", "L")
    for tag, memory_id, links in (("juliet", "kb.j", ["memory:kb.x"]), ("kilo", "kb.k", ["memory:kb.x", "memory:kb.y"])):
        invoke_cli("--kb", kb, "save", unlike(tag), "--id", memory_id, *(f"-e{link}" for link in links), check=True)
    git(kb, "switch", "-q", "main")
    invoke_cli("--kb", kb, "forget", "kb.y", check=True)
    invoke_cli("--kb", kb, "rename", "kb.x", "kb.z", check=True)
    git(kb, "merge", "-q", "--no-edit", "L")
    api = KnowledgeBase(kb)
    api.store.request = "e" * 32
    try:
        live = api.prune()
    finally:
        api.store.request = None
    assert (live.stripped, live.relinked, live.rewritten) == (
        {"kb.k": ["memory:kb.y"]}, {"kb.j": {"memory:kb.x": "memory:kb.z"}, "kb.k": {"memory:kb.x": "memory:kb.z"}},
        ["kb.k", "kb.j"])
    record = requests.read(api.store.state, "e" * 32)
    assert record is not None
    landed = api.history.landed(record.commits[-1])
    assert landed is not None and (landed.kind, landed.result) == ("prune", live)
