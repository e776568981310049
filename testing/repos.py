"""Real git repositories for tests: the example KB, git itself, and a catalog KB."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from unittest.mock import patch

if TYPE_CHECKING:
    from slayer_kb import KnowledgeBase

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_KB = ROOT / "kb"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
}


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout


def ids_trailer(root: Path, top: int, rev: str = "HEAD", folder: str = "memories/") -> str:
    """The line slayer-kb's commit ``rev`` ends with when it knew the highest auto id on the
    branch's history (store/idtrailer.py): ``top`` in the memory folder ``folder`` (its path in
    the repository), and the commit's parent and tree."""
    parent, tree = git(root, "rev-parse", f"{rev}~", f"{rev}^{{tree}}").split()
    return f"Highest-auto-id: {top} in {folder} (parent {parent[:12]}, tree {tree[:12]})"


def fsck(root: Path) -> subprocess.CompletedProcess[str]:
    """``git fsck --strict`` once slayer-kb's background repack (upkeep.py) has finished: fsck
    reports loose objects that a repack packs away while it reads them."""
    from slayer_kb.store import upkeep

    assert upkeep.wait(root / ".slayer-kb", 60), "the background repack did not finish"
    return subprocess.run(["git", "fsck", "--strict"], cwd=root, capture_output=True, text=True)


def commit_all(repo: Path, message: str = "test setup") -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


_TEMPLATES: dict[str, Path] = {}
# Which steps made each named state: two callers giving one name to different steps would share
# the first one's state without a word.
_STEPS: dict[str, str] = {}


def _named(name: str, steps: Callable[..., object]) -> str:
    """``name``, checked to be made by ``steps`` wherever it is asked for in this process."""
    made_by = f"{steps.__module__}.{steps.__qualname__}"
    assert _STEPS.setdefault(name, made_by) == made_by, f"{name!r} is made by {_STEPS[name]}, not {made_by}"
    return name


def _copy_of(name: str, build: Callable[[Path], None], root: Path, *, keep_mtimes: bool) -> Path:
    """``root`` as a copy of the repository ``build`` makes, made once a process: git init and a
    commit are four git processes (~0.1 s), and hundreds of tests start from the same two KBs.
    The files' mtimes are what ``build`` would give them in ``root`` (the index's freshness
    checks read them): kept, or now."""
    if name not in _TEMPLATES:
        where = Path(tempfile.mkdtemp(prefix=f"slayer-kb-{name}-"))
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        build(where / "kb")
        # Its objects in one pack, as a clone has them: a file made costs the kernel 0.1-0.4 ms on
        # the shared machine, and the example KB's loose objects are 69 files in 65 folders.
        git(where / "kb", "repack", "-a", "-d", "-q")
        _TEMPLATES[name] = where / "kb"
    shutil.copytree(_TEMPLATES[name], root, symlinks=True, ignore=_hook_samples,
                    copy_function=shutil.copy2 if keep_mtimes else shutil.copy)
    return root


def _hook_samples(folder: str, names: list[str]) -> list[str]:
    """The 13 inert ``*.sample`` scripts ``git init`` puts in .git/hooks (a bare repository's
    hooks/), which no test runs."""
    return [name for name in names if name.endswith(".sample")] if folder.endswith(".git/hooks") else []


def _build_catalog_kb(root: Path, commit: bool = True) -> None:
    """The catalog KB at ``root``, a repository of its own (``commit``) or a folder of the one
    around it, left for the caller to commit."""
    from .catalog import write_test_catalog

    root.mkdir()
    if commit:
        git(root, "init", "-q")
    write_test_catalog(root, priority=["shop"])
    (root / "memories").mkdir()
    (root / ".gitignore").write_text(".slayer-kb/\n")
    if commit:
        commit_all(root)


def _build_example_kb(root: Path) -> None:
    shutil.copytree(EXAMPLE_KB, root, ignore=shutil.ignore_patterns(".slayer-kb", "__pycache__"))
    git(root, "init", "-q")
    commit_all(root)


def _build_empty_kb(root: Path) -> None:
    from slayer_kb import KnowledgeBase

    # The encoder off, as for every test (conftest's isolate): nothing starts in the background.
    with patch.dict(os.environ, {"SLAYER_KB_NO_ENCODER": "1"}):
        KnowledgeBase.init(root).close()


def make_empty_kb(root: Path) -> Path:
    """A new KB at ``root``, as ``slayer-kb init`` makes it (its commit and its index), copied:
    the init costs a tenth of a second of CPU (git init, the commit, the index made), and a
    quarter of the tests start from it. The copy's state folder is stamped again as in
    ``make_indexed_example_kb``."""
    from slayer_kb.store import state

    _copy_of("empty", _build_empty_kb, root, keep_mtimes=True)
    state.make(root / state.STATE_DIR)
    return root


def make_catalog_kb(root: Path) -> Path:
    """A committed KB at ``root`` with the test catalog of testing/catalog.py (priority: shop)."""
    return _copy_of("catalog", _build_catalog_kb, root, keep_mtimes=False)  # written now


def make_example_kb(root: Path) -> Path:
    """A copy of the shipped example KB at ``root``, committed to a fresh repository."""
    return _copy_of("example", _build_example_kb, root, keep_mtimes=True)  # the checkout's, as copytree keeps them


def _build_indexed_example_kb(root: Path) -> None:
    from slayer_kb import KnowledgeBase

    make_example_kb(root)
    # Indexed as every test starts (conftest's isolate): the sentence encoder off, so no
    # background process makes vectors in the template while it is being copied.
    with patch.dict(os.environ, {"SLAYER_KB_NO_ENCODER": "1"}):
        kb = KnowledgeBase(root)
        kb.ensure_fresh()
        kb.close()


def make_indexed_example_kb(root: Path) -> Path:
    """``make_example_kb`` with its index already built, as the KB is after its first command:
    for tests of what a command does on a KB, not of how a new KB is indexed. The copy's state
    folder is stamped again through ``state.make`` (the stamp names the folder's inode, and a
    copy has a new one); its memory files have new inodes too, so the copy's first freshness
    check re-reads them, finds the bytes unchanged and writes nothing but the catalog's rows."""
    from slayer_kb.store import state

    _copy_of("example-indexed", _build_indexed_example_kb, root, keep_mtimes=True)
    state.make(root / state.STATE_DIR)
    return root


def make_kb_after(root: Path, name: str, steps: Callable[[Path], object]) -> Path:
    """``make_empty_kb``, then ``steps(root)`` (the saves a module's tests all start from), run
    once a process for each ``name`` and copied as ``make_empty_kb`` is: the same commits, files
    and index in each copy, its state folder stamped again. The steps close what they open."""
    from slayer_kb.store import state, upkeep

    def build(where: Path) -> None:
        make_empty_kb(where)
        steps(where)
        # A background repack the steps started would move objects while they are copied.
        assert upkeep.wait(where / state.STATE_DIR, 60), "the background repack did not finish"

    _copy_of(_named(f"after-{name}", steps), build, root, keep_mtimes=True)
    state.make(root / state.STATE_DIR)
    return root


def make_worktrees_after(folder: Path, name: str, steps: Callable[[Path], object], worktrees: Sequence[str]) -> Path:
    """``make_catalog_kb`` at ``folder / "kb"``, then ``steps(kb)``, which add a work tree of its
    repository beside it under each of ``worktrees`` (``folder / "main-worktree"``: another clone's
    side, saving with its own state folder), run once a process for each ``name`` and copied: the
    KB and each work tree, their links to each other pointed at the copies (they name each other
    by absolute path), each state folder stamped again. The KB's folder."""
    from slayer_kb.store import state, upkeep

    key = _named(f"worktrees-{name}", steps)
    trees = ["kb", *worktrees]
    if key not in _TEMPLATES:
        where = Path(tempfile.mkdtemp(prefix="slayer-kb-worktrees-"))
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        make_catalog_kb(where / "kb")
        steps(where / "kb")
        for tree in trees:  # a background repack the steps started would move objects while they are copied
            assert upkeep.wait(where / tree / state.STATE_DIR, 60), "the background repack did not finish"
        _TEMPLATES[key] = where
    template = _TEMPLATES[key]
    for tree in trees:
        shutil.copytree(template / tree, folder / tree, symlinks=True, ignore=_hook_samples)
    # Each side names the other by its absolute path: the template's, still there, so ``git
    # worktree repair`` would find nothing broken and leave the copy working in the template.
    for link in [*(folder / tree / ".git" for tree in worktrees), *(folder / "kb" / ".git" / "worktrees").glob("*/gitdir")]:
        text = link.read_text()
        assert str(template) in text, text
        link.write_text(text.replace(str(template), str(folder)))
    for tree in trees:
        state.make(folder / tree / state.STATE_DIR)
    return folder / "kb"


def make_notes_kb(root: Path, name: str, notes: Sequence[tuple[str, str]], project: str = "ops") -> KnowledgeBase:
    """``make_kb_after`` of ``notes`` (title, content) saved as observations in ``project``, one
    commit each, none with a sentence vector, opened with no vectors made in the background: the
    tests that start from it make them when they choose."""
    from slayer_kb import KnowledgeBase

    def save_notes(where: Path) -> None:
        kb = KnowledgeBase(where)
        kb.index.background_vectors = False
        for title, content in notes:
            kb.save_observation(title=title, content=content, project=project)
        kb.close()

    kb = KnowledgeBase(make_kb_after(root, name, save_notes))
    kb.index.background_vectors = False
    return kb


def _build_team(where: Path, folder: str) -> None:
    """A bare remote holding a catalog KB (in ``folder`` of the repository, "" for its top), and
    one clone of it (``a``): every clone of a team is the same but for where its origin is, so a
    team's clones are copies of this one."""
    bare = where / "remote.git"
    git(where, "init", "-q", "--bare", "-b", "main", str(bare))
    # The remote stands in for a hosting service, which keeps its own repositories: no
    # `git gc --auto` process after every push it receives (the clones' own upkeep is the
    # product's, and stays as a user's git has it).
    git(bare, "config", "receive.autogc", "false")
    seed = where / "seed"
    if folder:
        seed.mkdir()
        git(seed, "init", "-q")
        (seed / "README.md").write_text("The code; the knowledge base is in a folder of its own.\n")
        _build_catalog_kb(seed / folder, commit=False)
        commit_all(seed)
    else:
        make_catalog_kb(seed)
    git(seed, "branch", "-M", "main")
    git(seed, "push", "-q", str(bare), "main")
    git(where, "clone", "-q", str(bare), "a")
    for repo in (bare, where / "a"):
        git(repo, "repack", "-a", "-d", "-q")
    # Indexed as a clone is after its first command (as _build_indexed_example_kb, the encoder
    # off): each copied clone's first command then finds the catalog's documents as indexed,
    # rather than building the index, 15-20 ms of CPU a clone. Only the ignored state folder is
    # written; git's files are as the clone left them.
    from slayer_kb import KnowledgeBase

    with patch.dict(os.environ, {"SLAYER_KB_NO_ENCODER": "1"}):
        kb = KnowledgeBase(where / "a" / folder)
        kb.ensure_fresh()
        kb.close()


def unlike(tag: str) -> str:
    """A memory's text of 40 words no other text of a test shares (each word ``tag`` and a
    number): git pairs no forget or save with it by similarity, as it may short memories."""
    return " ".join(f"{tag}{n}word" for n in range(40))


def counted_apart(root: Path) -> None:
    """Forget the auto-id count the worktrees of ``root``'s repository share (store/counted.py), so
    that the next save in one of them counts from its own branch, as another clone would: what a
    test of two sides that each saved one auto id needs."""
    common = Path(git(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    (common / "slayer-kb-counted-ids.json").unlink(missing_ok=True)


def make_team(tmp_path: Path, clones: int = 2, folder: str = "") -> tuple[Path, list[Path]]:
    """A bare remote holding a catalog KB, and ``clones`` clones of it (``a``, ``b``, ...), each
    leasing its auto ids from the remote (the default for a KB with a remote); the KBs' folders.
    With ``folder``, the KB is that folder of the repository (``a/kb``), not its top. Copied from
    a team made once a process: made, a team is 5 git processes and one more a clone (0.23 s of
    CPU for two clones); copied, it is its files, each clone's origin is set to the copied
    remote, and its state folder, indexed in the template, is stamped again (as
    ``make_indexed_example_kb``'s)."""
    name = f"team-{folder}"
    if name not in _TEMPLATES:
        where = Path(tempfile.mkdtemp(prefix="slayer-kb-team-"))
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        _build_team(where, folder)
        _TEMPLATES[name] = where
    return _copied_team(_TEMPLATES[name], ["a"] * clones, tmp_path, folder)


def make_team_after(tmp_path: Path, name: str, steps: Callable[[list[Path]], object], clones: int = 2,
                    folder: str = "") -> tuple[Path, list[Path]]:
    """``make_team``, then ``steps(kbs)`` (the saves, syncs and renames a module's tests all start
    from), run once a process for each ``name`` and copied as ``make_team`` copies a team: the
    same commits, refs and files in each copy, for the tests of what comes after them. ``name``
    says which steps and arguments made the state (a module's tests each name theirs). The steps
run under the environment of the test that asks first: they must not depend on it."""
    key = _named(f"team-{folder}-{clones}-{name}", steps)
    if key not in _TEMPLATES:
        where = Path(tempfile.mkdtemp(prefix="slayer-kb-team-after-"))
        atexit.register(shutil.rmtree, where, ignore_errors=True)
        _bare, kbs = make_team(where, clones, folder)
        steps(kbs)
        from slayer_kb.store import state, upkeep

        # A background repack the steps started would move objects while they are copied.
        for kb in kbs:
            assert upkeep.wait(kb / state.STATE_DIR, 60), "the background repack did not finish"
        _TEMPLATES[key] = where
    return _copied_team(_TEMPLATES[key], list("abcdefgh"[:clones]), tmp_path, folder, own_leases=True)


def _copied_team(template: Path, sources: list[str], tmp_path: Path, folder: str, own_leases: bool = False
                 ) -> tuple[Path, list[Path]]:
    """The team in ``template`` copied to ``tmp_path``: its remote, and a clone ``a``, ``b``, ...
    copied from each of ``sources``, its origin set to the copied remote (in its config, in the
    FETCH_HEAD a fetch left and in the ids' leases, where the remote's path is read again), its
    state folder stamped again. With ``own_leases`` (each clone copied from its own source), each
    copy holds its source's id leases as that clone does: the leases name their git folder by
    device and inode, and a copy of a clone's folder (``cp -r``) leases blocks of its own."""
    from slayer_kb.store import leases, state

    bare = tmp_path / "remote.git"
    shutil.copytree(template / "remote.git", bare, symlinks=True, ignore=_hook_samples)
    origin = str(template / "remote.git")
    roots = []
    for letter, source in zip("abcdefgh"[: len(sources)], sources, strict=True):
        root = tmp_path / letter
        shutil.copytree(template / source, root, symlinks=True, ignore=_hook_samples)
        config = (template / source / ".git" / "config").read_text()
        assert f"\turl = {origin}\n" in config, config
        git_dir = root / ".git"
        for written in (git_dir / "config", git_dir / "FETCH_HEAD", git_dir / leases.STATE_FILE):
            if written.exists():  # FETCH_HEAD names the remote without its ".git"
                written.write_text(written.read_text().replace(str(template / "remote"), str(tmp_path / "remote")))
        if own_leases and (git_dir / leases.STATE_FILE).exists():
            held = json.loads((git_dir / leases.STATE_FILE).read_text())
            held["home"] = [os.stat(git_dir).st_dev, os.stat(git_dir).st_ino]
            (git_dir / leases.STATE_FILE).write_text(json.dumps(held))
        roots.append(root / folder if folder else root)
        state.make(roots[-1] / state.STATE_DIR)
    return bare, roots


def squash_merged_branch(tmp_path: Path, invoke_cli: Callable[..., object], *commands: tuple[str, ...]
                         ) -> tuple[Path, Path]:
    """A team's agent and reviewer clones (``make_team``): the agent runs each of ``commands``
    (slayer-kb's arguments: saves, updates) on its branch ``agent-a`` and syncs it, and the
    reviewer squash-merges the branch into main, as a pull request's squash button does, and pushes
    it. Where the tests of what meets a squash-merged branch start; (agent, reviewer). Made once
    a process for each ``commands`` and copied (``make_team_after``)."""

    def squash_merge(kbs: list[Path]) -> None:
        agent, reviewer = kbs
        git(agent, "switch", "-q", "-c", "agent-a")
        for command in (*commands, ("sync",)):
            invoke_cli("--kb", agent, *command, check=True)
        git(reviewer, "fetch", "-q", "origin")
        git(reviewer, "merge", "-q", "--squash", "origin/agent-a")
        git(reviewer, "commit", "-q", "-m", "Squash agent-a")
        git(reviewer, "push", "-q", "origin", "main")

    _bare, (agent, reviewer) = make_team_after(tmp_path, f"squash-merged {commands!r}", squash_merge)
    return agent, reviewer


# A pre-receive hook through which another clone wins the race for the first N pushes that move
# a branch: it moves the branch first (an empty commit of its own, or the commit of the ref {to}),
# so the push's update of the branch fails as a lost race does ("failed to update ref"), not as a
# hook's refusal. Every push is logged to $GIT_DIR/pushes (its "old new ref" lines, "--" after each).
_RACE = """#!/bin/sh
input=$(cat)
printf '%s\\n--\\n' "$input" >> "$GIT_DIR/pushes"
ref=$(echo "$input" | awk '$3 ~ /^refs\\/heads\\// {print $3; exit}')
[ -n "$ref" ] || exit 0
n=$(cat "$GIT_DIR/raced" 2>/dev/null || echo 0)
[ "$n" -lt {times} ] || exit 0
echo $((n+1)) > "$GIT_DIR/raced"
new=$(git rev-parse -q --verify "{to}^{commit}" || git commit-tree -p "$ref" -m "another clone's push" "$ref^{tree}")
(unset GIT_QUARANTINE_PATH; git update-ref "$ref" "$new")
"""


def lose_races(bare: Path, times: int, to: str = "") -> Path:
    """Make the next ``times`` pushes to a branch of ``bare`` lose the race to another clone
    (each adds one empty commit to the branch, or, with ``to``, moves it to that ref's commit: a
    push the other clone made there beforehand); the hook's path."""
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(_RACE.replace("{times}", str(times)).replace("{to}", to or "refs/none"))
    hook.chmod(0o755)
    return hook
